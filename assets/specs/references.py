"""Azure ML's asset references, read in one place: `azureml:name:version`, `azureml:name@latest`, registry and
workspace URIs, ARM ids and job outputs → a frozen Reference (pure: no Django, no I/O).

The forms, as azure-ai-ml reads them (its operation orchestrator and URI patterns):
- `azureml:<name>:<version>` and `azureml:<name>@<label>`; Dockyard knows one label, `latest`, and reads
  `azureml:<name>:latest` as that label too (no asset here may have the version `latest`).
- `azureml:<name>` with no version: Azure ML refuses it ("Version must be provided") except for curated environments
  (names starting `AzureML-`), which its service expands to the latest version. Dockyard does the same.
- `azureml://registries/<registry>/<environments|models|data>/<name>/versions/<v>` or `/labels/latest`.
- `azureml://locations/<region>/workspaces/<workspace>/<kind>/<name>/versions/<v>` and the ARM id
  `[azureml:]/subscriptions/…/workspaces/<workspace>/<kind>/<name>/versions/<v>`: the workspace is kept for the
  caller to check (a reference to another workspace is not followed).
- `azureml://jobs/<job>/outputs/<output>` and `…/outputs/<output>/paths/<path>`: a job's output (`az ml model create
  --path …`); `artifacts` is the run's artifact root (its `outputs/` is the job's ./outputs), `default` the ./outputs.
- `azureml://datastores/…` is refused: there are no datastores here.
Anything else, and anything hostile (over-long, control characters, look-alike letters, '..'), is an InvalidReference
with a message fit to show; never another exception.
"""
import re
from dataclasses import dataclass

from assets.specs.common import LATEST, NAME_RULE, VERSION_RULE, is_name, is_version, local_path_problem

MAX_REFERENCE = 2048
PREFIX = "azureml:"
CURATED_PREFIX = "azureml-"  # Azure ML's CURATED_ENV_PREFIX, compared in any case
KINDS = {"environments": "environment", "environment": "environment", "models": "model", "model": "model",
         "data": "data"}
SEGMENT = r"[^/]+"
REGISTRY = re.compile(rf"azureml://registries/({SEGMENT})/({SEGMENT})/({SEGMENT})/(versions|labels)/({SEGMENT})/?")
LOCATION = re.compile(rf"azureml://locations/({SEGMENT})/workspaces/({SEGMENT})/({SEGMENT})/({SEGMENT})/versions/({SEGMENT})/?")
ARM_ID = re.compile(rf"/subscriptions/({SEGMENT})/resource[gG]roups/({SEGMENT})/providers/Microsoft\.MachineLearningServices/"
                    rf"workspaces/({SEGMENT})/({SEGMENT})/({SEGMENT})/versions/({SEGMENT})/?", re.IGNORECASE)
JOB_OUTPUT = re.compile(rf"azureml://jobs/({SEGMENT})/outputs/({SEGMENT})(?:/paths/(.*)|/?)", re.DOTALL)
JOB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,254}", re.ASCII)
OUTPUT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,254}", re.ASCII)
FORMS = ("azureml:<name>:<version>, azureml:<name>@latest, "
         "azureml://registries/<registry>/<kind>/<name>/versions/<version>")


class InvalidReference(ValueError):
    """A reference Dockyard cannot read; the message says why and is fit to show."""


@dataclass(frozen=True)
class Reference:
    """One asset reference: exactly one of `version` and `label` is set, except for job outputs (`job`, `output`, `path`)."""

    kind: str | None  # environment, model, data, job_output; None when the short form does not say
    name: str  # the asset's name; for a job output, the job's name
    version: str | None = None
    label: str | None = None
    registry: str | None = None
    workspace: str | None = None  # from the location and ARM id forms, for the caller to check
    output: str | None = None
    path: str | None = None

    @property
    def is_curated_name(self) -> bool:
        """Named like one of Azure ML's curated environments (`AzureML-…` in a workspace, or in registry `azureml`)."""
        return self.name.lower().startswith(CURATED_PREFIX) or self.registry == "azureml"


def parse_reference(value: object, kind: str | None = None) -> Reference:
    """Read one reference to an asset of `kind` (environment, model, data; None: any); raises InvalidReference."""
    text = _checked_text(value)
    if text.startswith("azureml://jobs/"):
        return _job_output(text)
    if text.startswith("azureml://datastores/") or text.startswith("azureml://subscriptions/"):
        raise InvalidReference("There are no datastores here: give a local path, an https:// URL or an asset "
                               "(azureml:<name>:<version>).")
    if text.startswith("azureml://registries/"):
        return _registry(text, kind)
    if text.startswith("azureml://locations/"):
        return _uri(LOCATION, text, kind, workspace_group=2)
    if text.startswith((PREFIX + "/", "/")):
        return _uri(ARM_ID, text.removeprefix(PREFIX), kind, workspace_group=3)
    if text.startswith(PREFIX):
        return _short(text[len(PREFIX):], kind)
    raise InvalidReference(f"{_shown(text)} is not an asset reference: use {FORMS}.")


def is_reference(value: object) -> bool:
    """True when `value` is written as an Azure ML reference (whether or not it is a valid one)."""
    return isinstance(value, str) and (value.startswith(PREFIX) or value.startswith("/subscriptions/"))


def _checked_text(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidReference(f"A reference is text such as {FORMS}.")
    if len(value) > MAX_REFERENCE:
        raise InvalidReference(f"A reference has at most {MAX_REFERENCE} characters.")
    if not value.isascii() or any(ord(char) < 32 or ord(char) == 127 for char in value):
        raise InvalidReference(f"{_shown(value)} holds characters a reference cannot have (control characters, or "
                               "letters outside ASCII that may only look like the ones meant).")
    return value.strip()


def _short(rest: str, kind: str | None) -> Reference:
    """`name:version`, `name@label` or `name` (curated environments only)."""
    if "@" in rest:
        name, _, label = rest.rpartition("@")
        return Reference(kind, _name(name), label=_label(label))
    name, colon, version = rest.partition(":")
    if not colon:
        return _unversioned(_name(name), kind)
    if version == LATEST:
        return Reference(kind, _name(name), label=LATEST)
    return Reference(kind, _name(name), version=_version(version))


def _unversioned(name: str, kind: str | None) -> Reference:
    """Azure ML needs a version, except for a curated environment, which it expands to the latest."""
    if kind in (None, "environment") and name.lower().startswith(CURATED_PREFIX):
        return Reference(kind, name, label=LATEST)
    raise InvalidReference(f"azureml:{name} names no version: give azureml:{name}:<version> or azureml:{name}@latest "
                           "(Azure ML needs one too).")


def _registry(text: str, kind: str | None) -> Reference:
    match = REGISTRY.fullmatch(text)
    if not match:
        raise InvalidReference(f"{_shown(text)} is not a registry reference: use "
                               "azureml://registries/<registry>/<environments|models|data>/<name>/versions/<version> "
                               "or …/labels/latest.")
    registry, kind_segment, name, form, value = match.groups()
    if not is_name(registry):
        raise InvalidReference(f"{_shown(registry)} is not a registry name.")
    asset_kind = _kind(kind_segment, kind)
    if form == "labels":
        return Reference(asset_kind, _name(name), label=_label(value), registry=registry)
    return Reference(asset_kind, _name(name), version=_version(value), registry=registry)


def _uri(pattern: re.Pattern, text: str, kind: str | None, workspace_group: int) -> Reference:
    match = pattern.fullmatch(text)
    if not match:
        raise InvalidReference(f"{_shown(text)} is not an asset id Dockyard can read: use {FORMS}.")
    groups = match.groups()
    workspace, kind_segment, name, version = groups[workspace_group - 1], groups[-3], groups[-2], groups[-1]
    if not is_name(workspace):
        raise InvalidReference(f"{_shown(workspace)} is not a workspace name.")
    return Reference(_kind(kind_segment, kind), _name(name), version=_version(version), workspace=workspace)


def _job_output(text: str) -> Reference:
    match = JOB_OUTPUT.fullmatch(text)
    if not match:
        raise InvalidReference(f"{_shown(text)} is not a job output: use azureml://jobs/<job>/outputs/<output> or "
                               "azureml://jobs/<job>/outputs/<output>/paths/<path>.")
    job, output, path = match.groups()
    if not JOB_NAME.fullmatch(job):
        raise InvalidReference(f"{_shown(job)} is not a job name.")
    if not OUTPUT_NAME.fullmatch(output):
        raise InvalidReference(f"{_shown(output)} is not an output name.")
    if path in (None, "", "/"):
        return Reference("job_output", job, output=output, path="")
    problem = local_path_problem(path)
    if problem:
        raise InvalidReference(f"The path inside output {output} of job {job}: {problem.replace('the YAML file', 'the output')}")
    return Reference("job_output", job, output=output, path=path)


def _kind(segment: str, expected: str | None) -> str:
    kind = KINDS.get(segment)
    if kind is None:
        raise InvalidReference(f"'{segment}' is not an asset kind here: environments, models or data.")
    if expected is not None and kind != expected:
        raise InvalidReference(f"This reference names a {kind} asset where {_article(expected)} {expected} is expected.")
    return kind


def _name(name: str) -> str:
    if not is_name(name):
        raise InvalidReference(f"{_shown(name)} is not an asset name: use {NAME_RULE}.")
    return name


def _version(version: str) -> str:
    if not is_version(version):
        raise InvalidReference(f"{_shown(version)} is not a version: use {VERSION_RULE}.")
    return version


def _label(label: str) -> str:
    if label != LATEST:
        raise InvalidReference(f"{_shown(label)} is not a label here: the one label is 'latest' (name@latest).")
    return label


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _shown(value: str) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "…"


def job_output_path(value: str, errors: list, what: str) -> dict | None:
    """An asset's `path` given as a job output → {'job', 'output', 'path'}; any other reference is an error at `path`."""
    try:
        reference = parse_reference(value)
    except InvalidReference as problem:
        errors.append(("path", str(problem)))
        return None
    if reference.kind != "job_output":
        errors.append(("path", f"{what}'s path is a file or folder, or a job output (azureml://jobs/<job>/outputs/"
                               "<output>/paths/<path>), not another asset."))
        return None
    return {"job": reference.name, "output": reference.output, "path": reference.path}
