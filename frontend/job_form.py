"""The studio's job submit form: fields → the Azure ML command-job body, that body as YAML, and pasted YAML.

The body is exactly what the REST API and the CLI accept, so `jobs.services.job_create` stays the one validator:
this module only turns form fields into that body (numbers as ints, key=value lines as maps, the compute choice as
`azureml:<name>`) and maps each error's field path (`resources.instance_count`) back to the field it came from.
"""
import re
from dataclasses import replace

import yaml

from compute.choices import ComputeType
from compute.selectors import compute_list, instance_type_list
from controlplane.parsers import load_yaml_documents
from controlplane.reconciling import ProvisioningState
from workspaces.access import local_compute_allowed

from .compute_form import BoundField, Field, parse_pairs
from .instance_type_form import choice_label

SCHEMA = "https://azuremlschemas.azureedge.net/latest/commandJob.schema.json"
LOCAL = "local"
SERVERLESS = "serverless"
DEFAULT_INSTANCE_TYPE = "defaultinstancetype"
YAML_EXAMPLE = f"""$schema: {SCHEMA}
type: command
display_name: hello
experiment_name: Default
command: echo hello from $HOSTNAME
compute: azureml:my-kubernetes
environment:
  image: python:3.11-slim
resources:
  instance_count: 1
limits:
  timeout: 600
"""

FIELDS = (
    Field("display_name", "Display name", help="What the job list shows; the job's name when empty."),
    Field("experiment_name", "Experiment", initial="Default", help="Groups related jobs; the job list filters by it."),
    Field("name", "Job name", help="Unique in the workspace; generated (e.g. calm_otter_1a2b3c4d) when empty."),
    Field("command", "Command", "code", required=True,
          help="Runs in a shell; ${{inputs.x}} references work when the YAML declares the inputs."),
    Field("compute", "Compute", "select", required=True,
          help="local: a process on the worker's host; serverless: Dockyard picks a Kubernetes compute that fits."),
    Field("image", "Container image", help="Required on Kubernetes and serverless, e.g. python:3.11-slim; leave it empty for local (a local job runs on the host)."),
    Field("instance_type", "Instance type", "select"),
    Field("instance_count", "Instance count", "int", initial="1", help="Nodes (pods) the job runs on."),
    Field("timeout", "Timeout (seconds)", "int", help="The job is stopped after this long; empty for no limit."),
    Field("environment_variables", "Environment variables", "pairs", help="NAME=value per line."),
    Field("tags", "Tags", "pairs", help="One key=value per line."),
)
FIELD_NAMES = {spec.name for spec in FIELDS}
MANIFEST_HEAD = ("apiVersion", "kind", "metadata", "spec")
SPEC_ORDER = ("display_name", "experiment_name", "description", "compute", "command", "code", "environment",
              "environment_variables", "resources", "distribution", "limits", "inputs", "outputs", "tags")
# Error paths of the job body → the field that wrote them (the first match wins).
FIELD_OF_PREFIX = (
    ("environment_variables", "environment_variables"),
    ("environment", "image"),
    ("resources.instance_type", "instance_type"),
    ("resources.instance_count", "instance_count"),
    ("limits", "timeout"),
    ("tags", "tags"),
)


class BlockDumper(yaml.SafeDumper):
    """YAML as people write it: multi-line strings (commands, scripts) as `|` blocks rather than escaped lines."""


def _represent_text(dumper: yaml.SafeDumper, text: str):
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None)


BlockDumper.add_representer(str, _represent_text)


def as_yaml(document) -> str:
    """One document as YAML, keys in the order given."""
    return yaml.dump(document, Dumper=BlockDumper, sort_keys=False, allow_unicode=True, width=100)


def _sorted(value):
    """Every mapping inside `value` with its keys in alphabetical order."""
    if isinstance(value, dict):
        return {key: _sorted(value[key]) for key in sorted(value)}
    return [_sorted(item) for item in value] if isinstance(value, list) else value


def manifests_yaml(manifests: list[dict]) -> str:
    """Kubernetes objects as one multi-document file, as `kubectl apply -f` takes them.

    The database hands JSON back in its own key order, so keys are put in kubectl's: apiVersion, kind, metadata, spec
    first, then alphabetical (as `kubectl get -o yaml` prints them).
    """
    documents = []
    for manifest in map(_sorted, manifests):
        documents.append({**{key: manifest[key] for key in MANIFEST_HEAD if key in manifest}, **manifest})
    return yaml.dump_all(documents, Dumper=BlockDumper, sort_keys=False, allow_unicode=True, width=100)


def _number(raw: str):
    # A mistyped number goes through as text, so the job's validator names the problem as the API does.
    return int(raw) if re.fullmatch(r"-?\d+", raw) else raw


def compute_of_choice(choice: str) -> str | None:
    """The form's compute choice as the job YAML writes it: local, azureml:<name>, or nothing (serverless)."""
    if choice in ("", SERVERLESS):
        return None
    return choice if choice == LOCAL else f"azureml:{choice}"


def job_body(data) -> tuple[dict, list[dict]]:
    """The API body the form amounts to, and rows {target, message} for input that could not be read."""
    problems, maps = [], {}
    for name in ("environment_variables", "tags"):
        try:
            maps[name] = parse_pairs(data.get(name, ""))
        except ValueError as exc:
            problems.append({"target": name, "message": str(exc)})
            maps[name] = {}
    text = {spec.name: (data.get(spec.name) or "").strip() for spec in FIELDS if spec.kind not in ("pairs", "code")}
    body = {"$schema": SCHEMA, "type": "command"}
    body.update({key: text[key] for key in ("name", "display_name", "experiment_name") if text[key]})
    # The command is kept as typed (minus a trailing newline): scripts care about their whitespace.
    body["command"] = (data.get("command") or "").replace("\r\n", "\n").rstrip("\n")
    compute = compute_of_choice(text["compute"])
    if compute:
        body["compute"] = compute
    if text["image"]:
        body["environment"] = {"image": text["image"]}
    if maps["environment_variables"]:
        body["environment_variables"] = maps["environment_variables"]
    resources = {key: value for key, value in (("instance_type", text["instance_type"]),
                                               ("instance_count", _number(text["instance_count"]))) if value != ""}
    if resources:
        body["resources"] = resources
    if text["timeout"]:
        body["limits"] = {"timeout": _number(text["timeout"])}
    if maps["tags"]:
        body["tags"] = maps["tags"]
    return body, problems


def field_of(target: str) -> str:
    """The form field an error's path belongs to ("" for none): `resources.instance_count` → instance_count."""
    target = target or ""
    for prefix, name in FIELD_OF_PREFIX:
        if target == prefix or target.startswith(prefix + "."):
            return name
    return target if target in FIELD_NAMES else ""


def compute_choices(workspace) -> list[tuple[str, str]]:
    """Where a job can run: local (when this server allows it), each Kubernetes compute, serverless."""
    choices = [(LOCAL, "local — the worker's host")] if local_compute_allowed(workspace) else []
    computes = compute_list(workspace=workspace, load_creators=False).filter(type=ComputeType.KUBERNETES)
    for compute in computes.exclude(provisioning_state=ProvisioningState.DELETING).order_by("name"):
        state = "" if compute.provisioning_state == ProvisioningState.SUCCEEDED else f" ({compute.provisioning_state})"
        choices.append((compute.name, f"{compute.name} — Kubernetes{state}"))
    choices.append((SERVERLESS, "serverless"))
    return choices


def initial_compute(choices: list[tuple[str, str]]) -> str:
    """A Kubernetes compute if there is one (what teams mostly run on), else local, else serverless."""
    kubernetes = [value for value, _ in choices if value not in (LOCAL, SERVERLESS)]
    return kubernetes[0] if kubernetes else choices[0][0]


def instance_type_choices(workspace, compute_choice: str) -> tuple[list[tuple[str, str]], str]:
    """The instance types the chosen compute offers, and a note on what leaving it empty means."""
    if compute_choice == LOCAL:
        return [("", "none (local)")], "A local job is one process on the worker's host: it has no pod shape."
    computes = compute_list(workspace=workspace, load_creators=False).filter(type=ComputeType.KUBERNETES)
    computes = computes.exclude(provisioning_state=ProvisioningState.DELETING).select_related("cluster")
    if compute_choice == SERVERLESS:
        names = sorted({row["name"] for compute in computes for row in instance_type_list(compute=compute)})
        choices = [("", "the smallest that fits a node now")]
        return choices + [(name, name) for name in names], "Placement picks the compute that has this instance type free."
    compute = computes.filter(name=compute_choice).first()
    rows = instance_type_list(compute=compute) if compute else []
    default = next((row for row in rows if row["name"] == DEFAULT_INSTANCE_TYPE), None)
    choices = [("", choice_label(default) if default else DEFAULT_INSTANCE_TYPE)]
    choices += [(row["name"], choice_label(row)) for row in rows if row["name"] != DEFAULT_INSTANCE_TYPE]
    return choices, "Pod shape (requests, limits, node selector) from the compute's instance types."


def initial_data(workspace) -> dict:
    """What an empty form starts with: the fields' initial values and the likeliest compute."""
    data = {spec.name: spec.initial for spec in FIELDS if spec.initial}
    data["compute"] = initial_compute(compute_choices(workspace))
    return data


def bind(workspace, data, errors: list[dict]) -> tuple[dict[str, BoundField], list[dict]]:
    """Fields by name with their values, choices and errors, plus the errors that belong to no field."""
    by_field: dict[str, list[str]] = {}
    for row in errors:
        by_field.setdefault(field_of(row["target"]), []).append(row["message"])
    computes = compute_choices(workspace)
    compute = data.get("compute") or initial_compute(computes)
    instance_types, instance_type_help = instance_type_choices(workspace, compute)
    dynamic = {"compute": {"choices": tuple(computes)},
               "instance_type": {"choices": tuple(instance_types), "help": instance_type_help}}
    bound = {}
    for spec in FIELDS:
        spec = replace(spec, **dynamic.get(spec.name, {}))
        bound[spec.name] = BoundField(spec, data.get(spec.name, ""), by_field.get(spec.name, []))
    bound["compute"].value = compute
    return bound, [row for row in errors if not field_of(row["target"])]


def parse_yaml(text: str) -> object:
    """Pasted YAML as one job body; refuses text that is not YAML or holds several documents."""
    try:
        documents = [document for document in load_yaml_documents(text) if document is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise ValueError(f"This is not valid YAML{where}: {getattr(exc, 'problem', None) or exc}.") from None
    if not documents:
        raise ValueError("Paste a command job: at least `command`, and `compute` unless it runs serverless.")
    if len(documents) > 1:
        raise ValueError("Paste one job per submission (this text holds several YAML documents).")
    return documents[0]


def spec_document(spec: dict, compute: str | None, *, with_name: bool = True) -> dict:
    """A job's spec as the YAML file people write (Azure ML's key order); without its name, a file to submit again."""
    body = {"$schema": SCHEMA, "type": "command"}
    if with_name:
        body["name"] = spec.get("name")
    values = {**spec, "compute": compute}
    for key in (*SPEC_ORDER, *spec):
        if key not in body and key not in ("name", "type") and values.get(key) not in (None, "", {}, []):
            body[key] = values[key]
    return body
