"""Command jobs as the CLI knows them: statuses, table cells, log lines, how a job ended, comparing specs, apply."""

import yaml

from ..client import ApiClient, path_of
from ..documents import Document
from ..errors import EXIT_JOB_CANCELED, EXIT_JOB_FAILED, EXIT_USAGE, ApiError, CliError, InvalidInput
from .asset import with_conda_file_read
from .base import (
    Outcome,
    as_strings,
    being_deleted,
    changed,
    created,
    ensure_workspace_exists,
    missing_in_workspace,
    read_if_exists,
)
from .compute import compute_name
from .uploads import uploaded_field

LITERAL_TYPES = {"string", "integer", "number", "boolean"}

# Azure ML job types: Dockyard runs command jobs; the others are recognised to say so.
JOB_TYPES = ("command", "pipeline", "sweep", "spark")

# The statuses the API reports (a subset of Azure ML's); `--status` accepts them in any letter case.
JOB_STATUSES = ("NotStarted", "Queued", "Starting", "Running", "CancelRequested", "Completed", "Failed", "Canceled")
# How a job ended is said once, by the stream's `end` event (ended_badly, or "job/NAME Completed").
ENDED_STATUSES = ("Completed", "Failed", "Canceled")
# Fields a submitted job keeps; only the display fields can change afterwards (PATCH).
DISPLAY_FIELDS = ("display_name", "description", "tags")
SPEC_FIELDS = (
    "command", "code", "environment", "environment_variables", "compute", "resources", "distribution", "limits",
    "inputs", "outputs", "queue_settings", "identity", "services", "properties", "experiment_name",
)
# What the API fills in when a document leaves these out.
SERVER_DEFAULTS = {"experiment_name": "Default", "resources": {"instance_count": 1, "shm_size": "2g"}}
# The API turns these mappings' values into strings.
STRING_MAPS = ("tags", "environment_variables")


def jobs_path(workspace: str, name: str | None = None, action: str | None = None) -> str:
    """`workspaces/{ws}/jobs/`, one job's path, or one of its actions (cancel, logs)."""
    return path_of("workspaces", workspace, "jobs", *[part for part in (name, action) if part])


def job_not_found_in_workspace(client: ApiClient, workspace: str, name: str, error: ApiError) -> ApiError:
    """The API's bare 404 under a workspace's jobs: the workspace or the job."""
    missing = ApiError(404, f"Job '{name}' was not found in workspace '{workspace}'.", code="NotFound")
    return missing_in_workspace(client, workspace, error, missing)


def status_filter(values: tuple[str, ...]) -> str | None:
    """`--status running --status Queued,failed` as the API's comma-separated filter, in its spelling."""
    known = {status.lower(): status for status in JOB_STATUSES}
    names = [part.strip() for value in values for part in value.split(",") if part.strip()]
    unknown = [name for name in names if name.lower() not in known]
    if unknown:
        raise InvalidInput(
            f"Unknown status {', '.join(repr(name) for name in unknown)}: use {', '.join(JOB_STATUSES)}.",
            target="--status", code="InvalidOption", exit_code=EXIT_USAGE,
        )
    return ",".join(dict.fromkeys(known[name.lower()] for name in names)) or None


def where_cell(row: dict) -> str | None:
    """Where a job runs: its compute, `local`, or `serverless` (with the compute placement picked, once it has)."""
    placement = row.get("placement") or {}
    compute = placement.get("compute")
    if placement.get("target") == "serverless":
        return f"serverless: {compute}" if compute else "serverless"
    return compute or (row.get("compute") or "").removeprefix("azureml:") or None


def line_text(line: dict) -> str:
    """A log line as printed (and as the API's download writes it): `[source] text` when it has a source."""
    source = line.get("source")
    return f"[{source}] {line.get('text', '')}" if source else str(line.get("text", ""))


def status_text(status: dict) -> str | None:
    """A followed job's new status as printed (`[Queued] Waiting for a node: …`); None for an ended one."""
    name, reason = status.get("status"), status.get("status_reason") or ""
    if name in ENDED_STATUSES:
        return None
    return f"[{name}] {reason}" if reason else f"[{name}]"


def job_yaml(text: str, body: dict) -> str:
    """The user's YAML as written while it still says `body`; once --name/--set changed it, `body` as YAML."""
    try:
        if yaml.safe_load(text) == body:
            return text
    except yaml.YAMLError:
        pass  # several documents in the text (one of them empty): send the one that matters
    return yaml.safe_dump(body, sort_keys=False, allow_unicode=True)


def ended_badly(name: str, end: dict) -> CliError | None:
    """None when the job Completed; otherwise the error to exit with (JobFailed or JobCanceled)."""
    status, reason, exit_code = end.get("status"), end.get("status_reason") or "", end.get("exit_code")
    if status == "Completed":
        return None
    if status == "Canceled":
        return CliError(f"Job '{name}' was canceled{': ' + reason if reason else '.'}", code="JobCanceled",
                        exit_code=EXIT_JOB_CANCELED)
    detail = reason or (f"exit code {exit_code}." if exit_code is not None else f"it ended {status}.")
    return CliError(f"Job '{name}' failed: {detail}", code="JobFailed", exit_code=EXIT_JOB_FAILED)


def as_stored(key: str, value):
    """A document's inputs, outputs or distribution as the API stores them: enum values lower-cased (Azure ML reads them
    in any case), an input given by path typed uri_folder, the `default` output's path (Azure ML's own) dropped."""
    if key == "distribution" and isinstance(value, dict) and isinstance(value.get("type"), str):
        return {**value, "type": value["type"].lower()}
    if key not in ("inputs", "outputs") or not isinstance(value, dict):
        return value
    return {name: _entry_as_stored(key, name, item) if isinstance(item, dict) else item for name, item in value.items()}


def _entry_as_stored(key: str, name: str, item: dict) -> dict:
    entry = {field: text.lower() if field in ("type", "mode") and isinstance(text, str) else text
             for field, text in item.items() if not (key == "outputs" and name == "default" and field == "path")}
    if key == "inputs" and "type" not in entry and "path" in entry:
        entry["type"] = "uri_folder"
    return entry


def same_field(key: str, desired, current) -> bool:
    """Whether the job already has what the document asks for in one field, as the API normalises it."""
    desired = as_stored(key, desired)
    if key == "compute":
        return compute_name(desired) == compute_name(current)
    if key in STRING_MAPS:
        return as_strings(desired or {}) == (current or {})
    if desired is None:
        return current in (None, "", {}, [], SERVER_DEFAULTS.get(key))
    if key == "resources" and isinstance(desired, dict):
        return {**SERVER_DEFAULTS["resources"], **desired} == current
    if key == "distribution" and isinstance(desired, dict) and isinstance(current, dict):
        return all(current.get(name) == value for name, value in desired.items())  # the API fills in the counts
    return desired == current


def spec_changes(document: dict, current: dict) -> list[str]:
    """The fixed fields in which a document differs from a submitted job (a field left out means the default)."""
    return [key for key in SPEC_FIELDS if not same_field(key, document.get(key), current.get(key))]


def display_changes(document: dict, current: dict) -> list[str]:
    """The display fields a document sets to something new (left out: left as they are)."""
    return [key for key in DISPLAY_FIELDS if key in document and not same_field(key, document[key], current.get(key))]


def with_code_uploaded(document: Document, client: ApiClient, workspace: str, dry_run: bool = False) -> dict:
    """A job's body with its local `code:` folder and its data inputs' local `path:`s (relative to the YAML file's
    folder, Azure ML's rule) uploaded and named `azureml://uploads/<sha256>` (a uri_file as its one file, under its own
    name); references (azureml:…), URLs and `mode: direct` inputs are left for the server to judge."""
    body = document.body
    if isinstance(body, dict) and "code" in body:
        body["code"] = uploaded_field(client, workspace, document.base_dir, body["code"], dry_run)
    inputs = body.get("inputs") if isinstance(body, dict) else None
    for item in (inputs.values() if isinstance(inputs, dict) else ()):
        if _uploadable_input(item):
            item["path"] = uploaded_field(client, workspace, document.base_dir, item["path"], dry_run)
    with_conda_file_read(body, document.base_dir)
    return body


def _uploadable_input(item: object) -> bool:
    """A data input given by a path (any type but the literal ones) that is fetched rather than given as written."""
    if not isinstance(item, dict) or not isinstance(item.get("path"), str):
        return False
    kind = str(item.get("type", "uri_folder")).lower()
    return kind not in LITERAL_TYPES and str(item.get("mode", "")).lower() != "direct"


def submit(client: ApiClient, workspace: str, body: dict) -> None:
    client.post_yaml(jobs_path(workspace), yaml.safe_dump(body, sort_keys=False, allow_unicode=True))


def apply_job(client: ApiClient, workspace: str, body: dict, dry_run: bool) -> Outcome:
    """Submit a job once: applied again it is `unchanged`, or `configured` when only its display fields differ."""
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidInput("A job needs a name to be applied (that is how apply finds it again); "
                           "`dockyard job create -f FILE` submits one with a generated name.", target="name", code="InvalidDocument")
    resource = f"job/{name}"
    current = read_if_exists(client, jobs_path(workspace, name))
    if current is None:
        ensure_workspace_exists(client, workspace)
        return created(resource, dry_run, lambda: submit(client, workspace, body))
    if current.body.get("deleting"):
        raise being_deleted(f"Job '{name}'")
    fixed = spec_changes(body, current.body)
    if fixed:
        raise CliError(
            f"Job '{name}' exists and a submitted job cannot be changed (this document differs in: {', '.join(fixed)}); "
            f"only {', '.join(DISPLAY_FIELDS)} can. Give the document a new name to submit another job.",
            code="ImmutableField", details=[{"target": key, "message": "differs from the submitted job"} for key in fixed],
        )
    changes = display_changes(body, current.body)
    if changes and not dry_run:
        client.patch(jobs_path(workspace, name), {key: body[key] for key in changes}, etag=current.etag)
    return changed(resource, changes, dry_run)
