"""Command jobs as the CLI sees them: statuses, table cells, log lines, how a job ended, and comparing specs (pure)."""
import yaml

from .errors import EXIT_JOB_CANCELED, EXIT_JOB_FAILED, EXIT_USAGE, CliError, InvalidInput

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


def compute_name(reference) -> str:
    """`azureml:NAME`, `NAME` and `local` name the same compute; nothing is serverless."""
    return str(reference or "").removeprefix("azureml:").strip()


def as_strings(mapping) -> dict:
    if not isinstance(mapping, dict):
        return mapping
    return {key: ("true" if value else "false") if isinstance(value, bool) else str(value) for key, value in mapping.items()}


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
