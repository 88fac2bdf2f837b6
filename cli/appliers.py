"""`apply`: route each YAML document to its resource and create it, update it, or leave it alone."""
from collections.abc import Callable
from dataclasses import dataclass, field

from .client import ApiClient, Response, path_of
from .documents import COMPUTE_TYPES, SECRET_FIELDS, Document, compute_body
from .errors import ApiError, CliError, InvalidInput

WORKSPACE_FIELDS = ("display_name", "description", "tags")
INSTANCE_TYPE_KINDS = ("InstanceType", "InstanceTypeList")
# Azure ML job types: the API will take jobs, this CLI cannot apply them yet.
JOB_TYPES = ("command", "pipeline", "sweep", "spark")
# Keys only online endpoints and deployments have (a Kubernetes deployment also says `type: kubernetes`).
ENDPOINT_KEYS = ("endpoint_name", "auth_mode")
# Fields in which the API fills in nested defaults (a schedule's time zone, interval, state): a dry run
# counts them unchanged when the document's values are all there. Every other field must match exactly.
DEFAULTED_FIELDS = ("schedules",)


@dataclass
class Outcome:
    """What apply did (or would do) to one resource."""

    resource: str
    action: str
    dry_run: bool = False
    changes: list[str] = field(default_factory=list)
    note: str = ""

    def line(self) -> str:
        """`compute/NAME configured`, plus `(dry run: changed fields; notes)` when planning."""
        notes = []
        if self.dry_run:
            notes.append("dry run: " + ", ".join(self.changes) if self.changes else "dry run")
        if self.note:
            notes.append(self.note)
        suffix = f" ({'; '.join(notes)})" if notes else ""
        return f"{self.resource} {self.action}{suffix}"

    def as_dict(self) -> dict:
        return {"resource": self.resource, "action": self.action, "dry_run": self.dry_run, "changes": self.changes}


class NotSupportedYet(CliError):
    """A document this version of Dockyard knows of but cannot apply."""

    def __init__(self, message: str):
        super().__init__(message, code="NotSupported")


def resource_label(document: Document) -> str:
    """`compute/NAME`-style label of a document for result lines; its place in the file when it has no name."""
    body = document.body if isinstance(document.body, dict) else {}
    route = route_of(body)
    name = body.get("name")
    if route == "instancetype" and body.get("kind") == "InstanceType":
        metadata = body.get("metadata")
        name = metadata.get("name") if isinstance(metadata, dict) else None  # Kubernetes names live in metadata
    if route in ("unknown", "job", "endpoint") or not isinstance(name, str) or not name:
        return document.where()
    return f"{route}/{name}"


def route_of(body: dict) -> str:
    """Which resource a document describes: compute, workspace, instancetype, job, endpoint or unknown."""
    doc_type, kind = body.get("type"), body.get("kind")
    if any(key in body for key in ENDPOINT_KEYS):
        return "endpoint"
    if doc_type in JOB_TYPES:
        return "job"
    if doc_type in COMPUTE_TYPES:
        return "compute"
    if doc_type == "workspace" or kind == "Workspace":
        return "workspace"
    if kind in INSTANCE_TYPE_KINDS:
        return "instancetype"
    return "unknown"


def apply_document(document: Document, client: ApiClient, workspace: Callable[[], str], dry_run: bool) -> Outcome:
    """Apply one document; `workspace` is asked only by documents that live in one."""
    body = document.body
    if not isinstance(body, dict):
        raise InvalidInput("A document must be a YAML mapping.", code="InvalidDocument")
    route = route_of(body)
    if route == "compute":
        return apply_compute(client, workspace(), compute_body(document), dry_run)
    if route == "workspace":
        return apply_workspace(client, body, dry_run)
    if route == "instancetype":
        raise NotSupportedYet("Instance types are not supported yet: this Dockyard has no API for them.")
    if route in ("job", "endpoint"):
        what = "a job" if route == "job" else "an online endpoint or deployment"
        raise NotSupportedYet(f"This looks like {what}, which `dockyard apply` does not support yet.")
    choices = ", ".join(COMPUTE_TYPES)
    raise InvalidInput(
        f"Cannot tell what this document is: give `type` (workspace or a compute type: {choices}) "
        "or `kind` (InstanceType, InstanceTypeList, Workspace).",
        target="type", code="UnknownDocument",
    )


def required_name(body: dict) -> str:
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidInput("The document has no name.", target="name", code="InvalidDocument")
    return name


def read_if_exists(client: ApiClient, path: str) -> Response | None:
    try:
        return client.get(path)
    except ApiError as error:
        if error.status == 404:
            return None
        raise


def ensure_workspace_exists(client: ApiClient, workspace: str) -> None:
    """Say so plainly when the target workspace is the thing missing (the API's 404 can't tell you which)."""
    if read_if_exists(client, path_of("workspaces", workspace)) is None:
        raise ApiError(404, f"Workspace '{workspace}' was not found, or you are not a member of it.", code="NotFound")


def apply_compute(client: ApiClient, workspace: str, body: dict, dry_run: bool) -> Outcome:
    """POST a new compute, or PATCH an existing one; the server decides whether anything changed."""
    try:
        return apply_compute_once(client, workspace, body, dry_run)
    except ApiError as error:
        if error.status != 412:
            raise
    # The record changed between our read and our write (If-Match refused it): read it again, once.
    return apply_compute_once(client, workspace, body, dry_run)


def apply_compute_once(client: ApiClient, workspace: str, body: dict, dry_run: bool) -> Outcome:
    name = required_name(body)
    resource = f"compute/{name}"
    path = path_of("workspaces", workspace, "computes", name)
    current = read_if_exists(client, path)
    if current is None:
        ensure_workspace_exists(client, workspace)
        if not dry_run:
            client.post(path_of("workspaces", workspace, "computes"), body)
        return Outcome(resource, "created", dry_run)
    if dry_run:
        return planned_update(resource, body, current.body)
    return patched(resource, client.patch(path, body, etag=current.etag), current)


def patched(resource: str, response: Response, before: Response) -> Outcome:
    """The API leaves an unchanged record as it was (same body, state included); anything else is an update."""
    return Outcome(resource, "unchanged" if response.body == before.body else "configured")


def planned_update(resource: str, body: dict, current: dict) -> Outcome:
    """A dry run compares what the API shows; secrets are write-only, so they are not compared."""
    if body.get("type") != current.get("type"):
        raise InvalidInput(
            f"The type of a compute cannot be changed (it is {current.get('type')}).", target="type", code="ImmutableField"
        )
    changes = [key for key, value in comparable(body).items() if not same_as_shown(key, current.get(key), value)]
    secrets = sorted(SECRET_FIELDS & (set(body) | set(nested_ssh_settings(body))))
    note = f"{', '.join(secrets)} not compared: write-only" if secrets else ""
    return Outcome(resource, "configured" if changes else "unchanged", True, changes, note)


def nested_ssh_settings(body: dict) -> dict:
    ssh = body.get("ssh_settings")
    return ssh if isinstance(ssh, dict) else {}


def comparable(body: dict) -> dict:
    """The document's fields as the API shows them: Azure ML's nested ssh_settings flattened, secrets left out."""
    flat = {key: value for key, value in body.items() if key != "ssh_settings"}
    for key, value in nested_ssh_settings(body).items():
        flat.setdefault(key, value)
    return {key: value for key, value in flat.items() if key not in SECRET_FIELDS and key not in ("name", "type")}


def same_as_shown(key: str, current, desired) -> bool:
    return contains(current, desired) if key in DEFAULTED_FIELDS else current == desired


def contains(current, desired) -> bool:
    """True when `desired` is already in `current`; mappings may hold more (the API fills in defaults)."""
    if isinstance(desired, dict) and isinstance(current, dict):
        return all(contains(current.get(key), value) for key, value in desired.items())
    if isinstance(desired, list) and isinstance(current, list):
        return len(desired) == len(current) and all(map(contains, current, desired))
    return current == desired


def apply_workspace(client: ApiClient, body: dict, dry_run: bool) -> Outcome:
    """Create a workspace, or update its display name, description and tags."""
    name = required_name(body)
    resource = f"workspace/{name}"
    path = path_of("workspaces", name)
    current = read_if_exists(client, path)
    wanted = {key: body[key] for key in WORKSPACE_FIELDS if key in body}
    if current is None:
        if not dry_run:
            client.post(path_of("workspaces"), {"name": name, **wanted})
        return Outcome(resource, "created", dry_run)
    changes = [key for key, value in wanted.items() if current.body.get(key) != value]
    if changes and not dry_run:
        client.patch(path, {key: wanted[key] for key in changes}, etag=current.etag)
    return Outcome(resource, "configured" if changes else "unchanged", dry_run, changes)
