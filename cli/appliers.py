"""`apply`: route each YAML document to its resource and create it, update it, or leave it alone."""
from collections.abc import Callable
from dataclasses import dataclass, field

import yaml

from . import instancetypes
from .client import ApiClient, Response, path_of
from .documents import COMPUTE_TYPES, SECRET_FIELDS, Document, compute_body, contains, with_code_resolved
from .endpoints import (
    TRAFFIC_FIELDS,
    changed_keys,
    compute_name,
    deployment_changes,
    deployment_view,
    deployments_named,
    endpoint_changes,
    live,
    online_kind,
    shown_keys,
    traffic_text,
)
from .errors import EXIT_NOT_LOGGED_IN, ApiError, CliError, ConnectionFailed, InvalidInput
from .jobs import DISPLAY_FIELDS, display_changes, spec_changes
from .lookups import (
    deployments_path,
    endpoint_not_found,
    endpoints_path,
    instance_types_path,
    jobs_path,
    missing_compute,
    read_if_exists,
    workspace_not_found,
)

WORKSPACE_FIELDS = ("display_name", "description", "tags")
INSTANCE_TYPE_KINDS = ("InstanceType", "InstanceTypeList")
# Azure ML job types: Dockyard runs command jobs; the others are recognised to say so.
JOB_TYPES = ("command", "pipeline", "sweep", "spark")
# Fields in which the API fills in nested defaults (a schedule's time zone, interval, state): a dry run
# counts them unchanged when the document's values are all there. Every other field must match exactly.
DEFAULTED_FIELDS = ("schedules",)


@dataclass
class Outcome:
    """What apply did (or would do) to one resource; `error` when it failed (an item of an InstanceTypeList)."""

    resource: str
    action: str
    dry_run: bool = False
    changes: list[str] = field(default_factory=list)
    note: str = ""
    error: CliError | None = None
    keys: dict = field(default_factory=dict)  # an endpoint's keys, in the one answer that shows them

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
        if self.error is not None:
            return {"resource": self.resource, "action": "failed", "error": self.error.as_dict()}
        result = {"resource": self.resource, "action": self.action, "dry_run": self.dry_run, "changes": self.changes}
        return {**result, "keys": self.keys} if self.keys else result


@dataclass
class Scope:
    """Where documents go, asked only by the documents that need it: the workspace, and the compute of instance types."""

    workspace: Callable[[], str]
    compute: Callable[[], str]
    checked: dict = field(default_factory=dict)
    # Steps to take once every document is applied: an endpoint's traffic to deployments applied after it.
    later: list[tuple[str, Callable[[], list["Outcome"]]]] = field(default_factory=list)
    # What a dry run would have created, so that what depends on it is planned too (a new endpoint's deployments).
    planned: set = field(default_factory=set)

    def instance_types(self, client: ApiClient) -> "InstanceTypeApi":
        """The instance-type API of the chosen compute, after checking once that the compute exists."""
        workspace, compute = self.workspace(), self.compute()
        if (workspace, compute) not in self.checked:
            self.checked[workspace, compute] = missing_compute(client, workspace, compute)
        missing = self.checked[workspace, compute]
        if missing is not None:
            raise missing
        return InstanceTypeApi(client, workspace, compute)


def is_fatal(error: CliError) -> bool:
    """Errors that every later document would hit too: stop at once instead of repeating them."""
    return (
        isinstance(error, ConnectionFailed) or error.exit_code == EXIT_NOT_LOGGED_IN
        or error.code in ("NoWorkspace", "NoCompute")
    )


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
    if route == "online-deployment":
        endpoint = body.get("endpoint_name")
        name = f"{endpoint}/{name}" if isinstance(endpoint, str) and endpoint and isinstance(name, str) and name else None
    if route == "unknown" or not isinstance(name, str) or not name:
        return document.where()
    return f"{route}/{name}"


def route_of(body: dict) -> str:
    """Which resource a document describes: compute, workspace, instancetype, job, online-endpoint,
    online-deployment or unknown."""
    doc_type, kind = body.get("type"), body.get("kind")
    online = online_kind(body)  # before compute types: a Kubernetes deployment says `type: kubernetes` too
    if online is not None:
        return online
    if doc_type in JOB_TYPES:
        return "job"
    if doc_type in COMPUTE_TYPES:
        return "compute"
    if doc_type == "workspace" or kind == "Workspace":
        return "workspace"
    if kind in INSTANCE_TYPE_KINDS:
        return "instancetype"
    return "unknown"


def apply_document(document: Document, client: ApiClient, scope: Scope, dry_run: bool) -> list[Outcome]:
    """Apply one document: one outcome, or one per item of an InstanceTypeList."""
    body = document.body
    if not isinstance(body, dict):
        raise InvalidInput("A document must be a YAML mapping.", code="InvalidDocument")
    route = route_of(body)
    if route == "compute":
        return [apply_compute(client, scope.workspace(), compute_body(document), dry_run)]
    if route == "workspace":
        return [apply_workspace(client, body, dry_run)]
    if route == "instancetype":
        return apply_instance_types(scope.instance_types(client), body, dry_run)
    if route == "job" and body.get("type") == "command":
        return [apply_job(client, scope.workspace(), with_code_resolved(document), dry_run)]
    if route == "job":
        raise NotSupportedYet(f"This is a {body.get('type')} job; Dockyard runs command jobs only (`type: command`).")
    if route == "online-endpoint":
        return [apply_endpoint(client, scope, body, dry_run)]
    if route == "online-deployment":
        return [apply_deployment(client, scope, body, dry_run)]
    choices = ", ".join(COMPUTE_TYPES)
    raise InvalidInput(
        f"Cannot tell what this document is: give `type` (workspace, command or a compute type: {choices}), "
        "`kind` (InstanceType, InstanceTypeList, Workspace) or an online endpoint's or deployment's `$schema`.",
        target="type", code="UnknownDocument",
    )


def required_name(body: dict) -> str:
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidInput("The document has no name.", target="name", code="InvalidDocument")
    return name


def ensure_workspace_exists(client: ApiClient, workspace: str) -> None:
    """Say so plainly when the target workspace is the thing missing (the API's 404 can't tell you which)."""
    if read_if_exists(client, path_of("workspaces", workspace)) is None:
        raise workspace_not_found(workspace)


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
        if not dry_run:
            client.post_yaml(jobs_path(workspace), yaml.safe_dump(body, sort_keys=False, allow_unicode=True))
        return Outcome(resource, "created", dry_run)
    if current.body.get("deleting"):
        raise CliError(f"Job '{name}' is being deleted; apply again once it is gone.", code="Conflict")
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
    return Outcome(resource, "configured" if changes else "unchanged", dry_run, changes)


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


@dataclass
class InstanceTypeApi:
    """`workspaces/{ws}/computes/{compute}/instancetypes/` of one compute."""

    client: ApiClient
    workspace: str
    compute: str

    def path(self, name: str | None = None) -> str:
        return instance_types_path(self.workspace, self.compute, name)

    def current(self, name: str) -> Response | None:
        """The instance type as the API shows it; None when there is no record (the built-in default is none)."""
        current = read_if_exists(self.client, self.path(name))
        if current is None or (isinstance(current.body, dict) and current.body.get("source") == "builtin"):
            return None
        return current

    def create(self, body: dict) -> Response:
        return self.client.post(self.path(), body)

    def replace(self, name: str, body: dict, etag: str | None) -> Response:
        return self.client.put(self.path(name), body, etag=etag)


UNREAD = object()


def apply_instance_types(api: InstanceTypeApi, body: dict, dry_run: bool) -> list[Outcome]:
    """An InstanceType, or an InstanceTypeList: one POST (all or nothing) when none of its names exist, else item by item."""
    if not instancetypes.is_list(body):
        return [apply_instance_type(api, body, dry_run)]
    items = instancetypes.items_of(body)
    names = [instancetypes.name_of(item) for item in items]
    if not items or None in names or len(set(names)) != len(names):
        if dry_run:
            raise InvalidInput("An InstanceTypeList needs items, each with a name of its own.", target="items",
                               code="InvalidDocument")
        created = api.create(body).body  # the API refuses it, naming every item's problem
        return [Outcome(f"instancetype/{row['name']}", "created") for row in created.get("results", [])]
    current = {name: api.current(name) for name in names}
    if not any(current.values()):
        if not dry_run:
            api.create(body)
        return [Outcome(f"instancetype/{name}", "created", dry_run) for name in names]
    outcomes = []
    for item, name in zip(items, names, strict=True):
        try:
            outcomes.append(apply_instance_type(api, instancetypes.item_document(body, item), dry_run, current[name]))
        except CliError as error:
            if is_fatal(error):
                raise
            outcomes.append(Outcome(f"instancetype/{name}", "failed", dry_run, error=error))
    return outcomes


def apply_instance_type(api: InstanceTypeApi, document: dict, dry_run: bool, current=UNREAD, retried: bool = False) -> Outcome:
    """POST a new instance type, or PUT the whole of an existing one with If-Match."""
    name = instancetypes.name_of(document)
    if name is None:
        target = "metadata.name" if "metadata" in document or "spec" in document else "name"
        raise InvalidInput("The instance type has no name.", target=target, code="InvalidDocument")
    resource = f"instancetype/{name}"
    if current is UNREAD:
        current = api.current(name)
    if current is None:
        if not dry_run:
            api.create(document)
        return Outcome(resource, "created", dry_run)
    if dry_run:
        changes = instancetypes.differences(document, current.body)
        return Outcome(resource, "configured" if changes else "unchanged", True, changes)
    try:
        after = api.replace(name, document, current.etag)
    except ApiError as error:
        if error.status != 412 or retried:
            raise
        # It changed between our read and our write (If-Match refused it): read it again, once.
        return apply_instance_type(api, document, dry_run, api.current(name), retried=True)
    return Outcome(resource, "unchanged" if same_spec(after.body, current.body) else "configured")


def same_spec(after: dict, before: dict) -> bool:
    """The API leaves an unchanged instance type as it was; a change shows in its shape or its source (adoption)."""
    return all(after.get(key) == before.get(key) for key in ("nodeSelector", "resources", "source", "updated_on"))


def apply_endpoint(client: ApiClient, scope: Scope, body: dict, dry_run: bool, retried: bool = False) -> Outcome:
    """Create an online endpoint, or PATCH its description, tags, auth_mode and traffic; compute cannot change.

    Traffic can only name deployments the endpoint has, so a split that names one not there yet (a new endpoint's
    always) is set once every document is applied: after the deployments of the same files.
    """
    name, workspace = required_name(body), scope.workspace()
    resource, path = f"online-endpoint/{name}", endpoints_path(workspace, name)
    current = read_if_exists(client, path)
    if current is None:
        ensure_workspace_exists(client, workspace)
        later = {key: live(body[key]) for key in TRAFFIC_FIELDS if isinstance(body.get(key), dict) and body[key]}
        note = "traffic once its deployments are applied" if any(later.values()) else ""
        if dry_run:
            scope.planned.add(("online-endpoint", workspace, name))
            return Outcome(resource, "created", True, note=note)
        created = client.post(endpoints_path(workspace), {key: value for key, value in body.items() if key not in later}).body
        if any(later.values()):
            scope.later.append((resource, lambda: [set_traffic(client, workspace, name, later)]))
        return Outcome(resource, "created", note=note, keys=shown_keys(created))
    if current.body.get("provisioning_state") == "Deleting":
        raise CliError(f"Online endpoint '{name}' is being deleted; apply again once it is gone.", code="Conflict")
    if "compute" in body and compute_name(body["compute"]) != compute_name(current.body.get("compute")):
        raise InvalidInput(f"The compute of an online endpoint cannot be changed (it is {current.body.get('compute')}).",
                           target="compute", code="ImmutableField")
    changes = endpoint_changes(body, current.body)
    if dry_run:
        return Outcome(resource, "configured" if changes else "unchanged", True, changes)
    existing = set(current.body.get("deployments") or [])
    traffic = [key for key in changes if key in TRAFFIC_FIELDS]
    # Traffic and mirror_traffic are checked together: when either waits for a deployment, both do.
    later = traffic if deployments_named({key: body[key] for key in traffic}) - existing else []
    now = [key for key in changes if key not in later]
    keys: dict = {}
    if now:
        try:
            keys = shown_keys(client.patch(path, {key: body[key] for key in now}, etag=current.etag).body)
        except ApiError as error:
            if error.status != 412 or retried:
                raise
            return apply_endpoint(client, scope, body, dry_run, retried=True)  # it changed since we read it: once more
    if later:
        wanted = {key: live(body[key]) for key in later}
        scope.later.append((resource, lambda: [set_traffic(client, workspace, name, wanted)]))
    note = "traffic once its deployments are applied" if later else ""
    return Outcome(resource, "configured" if now else "unchanged", changes=now, note=note, keys=keys)


def set_traffic(client: ApiClient, workspace: str, name: str, wanted: dict) -> Outcome:
    """The second step of an endpoint's apply: its traffic, now that the deployments of the files are there."""
    resource = f"online-endpoint/{name}"
    after = client.patch(endpoints_path(workspace, name), wanted).body
    note = "; ".join(f"{key} {traffic_text(after.get(key)) or 'none'}" for key in wanted)
    return Outcome(resource, "configured", changes=list(wanted), note=note)


def apply_deployment(client: ApiClient, scope: Scope, body: dict, dry_run: bool, retried: bool = False) -> Outcome:
    """Create an online deployment (POST), or PATCH it with the document; the API says whether anything changed.

    Fields the document leaves out keep their values. Apply does not wait for the deployment's server.
    """
    name, workspace = required_name(body), scope.workspace()
    endpoint = body.get("endpoint_name")
    if not isinstance(endpoint, str) or not endpoint:
        raise InvalidInput("An online deployment needs endpoint_name (the endpoint it belongs to) to be applied.",
                           target="endpoint_name", code="InvalidDocument")
    resource, path = f"online-deployment/{endpoint}/{name}", deployments_path(workspace, endpoint, name)
    current = read_if_exists(client, path)
    if current is None:
        if read_if_exists(client, endpoints_path(workspace, endpoint)) is None and (
                not dry_run or ("online-endpoint", workspace, endpoint) not in scope.planned):
            ensure_workspace_exists(client, workspace)
            raise endpoint_not_found(workspace, endpoint)
        if not dry_run:
            client.post(deployments_path(workspace, endpoint), body)
        return Outcome(resource, "created", dry_run)
    if current.body.get("provisioning_state") == "Deleting":
        raise CliError(f"Deployment '{name}' of online endpoint '{endpoint}' is being deleted; apply again once it is gone.",
                       code="Conflict")
    if dry_run:
        changes = deployment_changes(body, current.body)
        return Outcome(resource, "configured" if changes else "unchanged", True, changes)
    try:
        after = client.patch(path, body, etag=current.etag).body
    except ApiError as error:
        if error.status != 412 or retried:
            raise
        return apply_deployment(client, scope, body, dry_run, retried=True)  # it changed since we read it: once more
    changes = changed_keys(deployment_view(current.body), deployment_view(after))
    return Outcome(resource, "configured" if changes else "unchanged", changes=changes)
