"""Online endpoints as the CLI knows them: telling their documents from deployments', traffic options, comparing,
keys, paths and what a 404 means, and apply (traffic set once the deployments of the same files are there)."""
import copy
import re

from ..client import ApiClient, path_of
from ..documents import apply_assignments
from ..errors import EXIT_USAGE, ApiError, InvalidInput
from .base import (
    Outcome,
    Scope,
    as_strings,
    being_deleted,
    changed,
    ensure_workspace_exists,
    missing_in_workspace,
    once_more_if_stale,
    read_if_exists,
    required_name,
)
from .compute import compute_name

# What `PATCH online-endpoints/{ep}/` can change; name and compute are fixed once created.
ENDPOINT_EDITABLE = ("description", "tags", "auth_mode", "traffic", "mirror_traffic")
TRAFFIC_FIELDS = ("traffic", "mirror_traffic")
# Azure ML's YAML of these resources: `$schema` names the kind; without one, fields only the kind has tell.
ENDPOINT_SCHEMAS = ("managedonlineendpoint", "kubernetesonlineendpoint")
DEPLOYMENT_SCHEMAS = ("managedonlinedeployment", "kubernetesonlinedeployment")
DEPLOYMENT_ONLY_KEYS = ("endpoint_name", "code_configuration", "scale_settings", "liveness_probe", "readiness_probe",
                        "request_settings", "instance_count", "model", "model_mount_path", "app_insights_enabled",
                        "data_collector")
ENDPOINT_ONLY_KEYS = ("auth_mode", "traffic", "mirror_traffic", "scoring_uri")
TRAFFIC_ITEM = re.compile(r"^\s*([^=:\s]+)\s*[=:]\s*(-?\d+)\s*$")
# Key types of `regenerate-keys --key-type` and the fields of the one answer that shows a new key.
KEY_TYPES = ("primary", "secondary")
KEY_FIELDS = ("primaryKey", "secondaryKey")
# Fields of an endpoint document that are not sent to PATCH: fixed after creation, or only shown.
NOT_PATCHED = {"$schema", "name", "compute", "scoring_uri", "provisioning_state", "provisioning_errors", "status",
               "deployments", "keys", "created_by", "created_on", "updated_on", "manifests", "id", "openapi_uri"}
WAITS_FOR_DEPLOYMENTS = "traffic once its deployments are applied"


def endpoints_path(workspace: str, name: str | None = None, action: str | None = None) -> str:
    """`workspaces/{ws}/online-endpoints/`, one endpoint's path, or one of its actions (keys)."""
    return path_of("workspaces", workspace, "online-endpoints", *[part for part in (name, action) if part])


def score_path(workspace: str, endpoint: str) -> str:
    """The scoring URL's path, as API.md writes it (no trailing slash)."""
    return path_of("workspaces", workspace, "online-endpoints", endpoint, "score").rstrip("/")


def endpoint_not_found(workspace: str, name: str) -> ApiError:
    return ApiError(404, f"Online endpoint '{name}' was not found in workspace '{workspace}'.", code="NotFound")


def endpoint_not_found_in_workspace(client: ApiClient, workspace: str, name: str, error: ApiError) -> ApiError:
    """The API's bare 404 under a workspace's online endpoints: the workspace or the endpoint."""
    return missing_in_workspace(client, workspace, error, endpoint_not_found(workspace, name))


def online_kind(body: dict) -> str | None:
    """`online-endpoint`, `online-deployment`, or None for a document that is neither."""
    schema = str(body.get("$schema") or "").lower()
    if any(name in schema for name in DEPLOYMENT_SCHEMAS):
        return "online-deployment"
    if any(name in schema for name in ENDPOINT_SCHEMAS):
        return "online-endpoint"
    if any(key in body for key in DEPLOYMENT_ONLY_KEYS):
        return "online-deployment"
    if any(key in body for key in ENDPOINT_ONLY_KEYS):
        return "online-endpoint"
    if "compute" in body and not any(key in body for key in ("type", "kind", "command")):
        return "online-endpoint"  # `name` and `compute` only: the smallest endpoint YAML
    return None


def refuse_other_kind(body: dict, wanted: str, source: str) -> None:
    """A deployment given to an endpoint command (or the other way round) says which command takes it."""
    kind = online_kind(body)
    if kind is not None and kind != wanted:
        raise InvalidInput(f"{source} describes an {kind.replace('-', ' ')}: use `dockyard {kind} …` for it.",
                           code="WrongDocument", exit_code=EXIT_USAGE)


def parse_traffic(text: str, option: str) -> dict[str, int]:
    """`blue=90,green=10` (or Azure CLI's `blue=90 green=10`, or `blue:90`) as {deployment: percent}; `""` clears it."""
    traffic: dict[str, int] = {}
    for item in filter(None, re.split(r"[,\s]+", re.sub(r"\s*([=:])\s*", r"\1", text.strip()))):
        match = TRAFFIC_ITEM.match(item)
        if match is None:
            raise InvalidInput(f"'{item}' is not DEPLOYMENT=PERCENT (e.g. {option} \"blue=90,green=10\").", target=option,
                               code="InvalidOption", exit_code=EXIT_USAGE)
        name, percent = match.group(1), int(match.group(2))
        if name in traffic:
            raise InvalidInput(f"'{name}' is given twice.", target=option, code="InvalidOption", exit_code=EXIT_USAGE)
        traffic[name] = percent
    return traffic


def traffic_text(traffic) -> str | None:
    """{blue: 90, green: 10} as `blue=90,green=10` (None when there is none)."""
    if not isinstance(traffic, dict) or not traffic:
        return None
    return ",".join(f"{name}={percent}" for name, percent in traffic.items())


def live(traffic) -> dict:
    """The shares that send something: a deployment at 0 is the same as one left out."""
    return {name: percent for name, percent in (traffic or {}).items() if percent} if isinstance(traffic, dict) else traffic


def traffic_cell(row: dict) -> str | None:
    """`blue=90,green=10`, and the mirrored share after it."""
    live_text, mirror = traffic_text(row.get("traffic")), traffic_text(row.get("mirror_traffic"))
    if mirror:
        return f"{live_text or '-'} (mirror {mirror})"
    return live_text


def same_endpoint_field(key: str, desired, current) -> bool:
    if key in TRAFFIC_FIELDS:
        return live(desired) == live(current)
    if key == "tags":
        return as_strings(desired or {}) == (current or {})
    if key == "description":
        return (desired or "") == (current or "")
    if key == "auth_mode":
        return (desired or "key") == current
    return desired == current


def endpoint_changes(document: dict, current: dict) -> list[str]:
    """The editable fields the document sets to something new (a field left out is left as it is)."""
    return [key for key in ENDPOINT_EDITABLE if key in document and not same_endpoint_field(key, document[key], current.get(key))]


def deployments_named(document: dict) -> set[str]:
    """Every deployment the document's traffic and mirror_traffic name."""
    names: set[str] = set()
    for key in TRAFFIC_FIELDS:
        if isinstance(document.get(key), dict):
            names.update(str(name) for name in document[key])
    return names


def editable_view(endpoint: dict) -> dict:
    """The fields `update` may change, as the endpoint has them now (a copy: `--set` changes it in place)."""
    return copy.deepcopy({key: endpoint.get(key) for key in ENDPOINT_EDITABLE})


def shown_keys(body: dict) -> dict[str, str]:
    """The keys an answer shows (once): `keys: {primaryKey, secondaryKey}` on create, `primaryKey` on regenerate."""
    keys = body.get("keys") if isinstance(body.get("keys"), dict) else body
    return {field: keys[field] for field in KEY_FIELDS if isinstance(keys.get(field), str) and keys[field]}


def refuse_compute_change(document: dict, current: dict) -> None:
    if "compute" in document and compute_name(document["compute"]) != compute_name(current.get("compute")):
        raise InvalidInput(f"The compute of an online endpoint cannot be changed (it is {current.get('compute')}).",
                           target="compute", code="ImmutableField")


def endpoint_patch(current: dict, document: dict, traffic: str | None, mirror: str | None, assignments: list[str]) -> dict:
    """The PATCH body of `update`: the editable fields that the file, --traffic/--mirror-traffic and --set change.

    Other fields of the file or of --set go along, so that the API says what it does not take; compute cannot change.
    """
    refuse_compute_change(document, current)
    desired = {**editable_view(current), **{key: value for key, value in document.items() if key not in NOT_PATCHED}}
    if traffic is not None:
        desired["traffic"] = parse_traffic(traffic, "--traffic")
    if mirror is not None:
        desired["mirror_traffic"] = parse_traffic(mirror, "--mirror-traffic")
    apply_assignments(desired, assignments)
    changes = endpoint_changes(desired, current)
    return {key: value for key, value in desired.items() if key in changes or key not in ENDPOINT_EDITABLE}


def apply_endpoint(client: ApiClient, scope: Scope, body: dict, dry_run: bool) -> Outcome:
    """Create an online endpoint, or PATCH its description, tags, auth_mode and traffic; compute cannot change.

    Traffic can only name deployments the endpoint has, so a split that names one not there yet (a new endpoint's
    always) is set once every document is applied: after the deployments of the same files.
    """
    return once_more_if_stale(lambda: apply_endpoint_once(client, scope, body, dry_run))


def apply_endpoint_once(client: ApiClient, scope: Scope, body: dict, dry_run: bool) -> Outcome:
    name, workspace = required_name(body), scope.workspace()
    resource, path = f"online-endpoint/{name}", endpoints_path(workspace, name)
    current = read_if_exists(client, path)
    if current is None:
        return create_endpoint(client, scope, body, dry_run)
    if current.body.get("provisioning_state") == "Deleting":
        raise being_deleted(f"Online endpoint '{name}'")
    refuse_compute_change(body, current.body)
    changes = endpoint_changes(body, current.body)
    if dry_run:
        return changed(resource, changes, True)
    existing = set(current.body.get("deployments") or [])
    traffic = [key for key in changes if key in TRAFFIC_FIELDS]
    # Traffic and mirror_traffic are checked together: when either waits for a deployment, both do.
    later = traffic if deployments_named({key: body[key] for key in traffic}) - existing else []
    now = [key for key in changes if key not in later]
    keys = shown_keys(client.patch(path, {key: body[key] for key in now}, etag=current.etag).body) if now else {}
    if later:
        traffic_later(client, scope, name, {key: live(body[key]) for key in later})
    return Outcome(resource, "configured" if now else "unchanged", changes=now,
                   note=WAITS_FOR_DEPLOYMENTS if later else "", keys=keys)


def create_endpoint(client: ApiClient, scope: Scope, body: dict, dry_run: bool) -> Outcome:
    """POST the endpoint without its traffic: that waits for the deployments of the same files."""
    name, workspace = body["name"], scope.workspace()
    resource = f"online-endpoint/{name}"
    ensure_workspace_exists(client, workspace)
    later = {key: live(body[key]) for key in TRAFFIC_FIELDS if isinstance(body.get(key), dict) and body[key]}
    note = WAITS_FOR_DEPLOYMENTS if any(later.values()) else ""
    if dry_run:
        scope.planned.add(("online-endpoint", workspace, name))
        return Outcome(resource, "created", True, note=note)
    answer = client.post(endpoints_path(workspace), {key: value for key, value in body.items() if key not in later}).body
    if any(later.values()):
        traffic_later(client, scope, name, later)
    return Outcome(resource, "created", note=note, keys=shown_keys(answer))


def traffic_later(client: ApiClient, scope: Scope, name: str, wanted: dict) -> None:
    """Set the endpoint's traffic once every document is applied."""
    workspace = scope.workspace()
    scope.later.append((f"online-endpoint/{name}", lambda: [set_traffic(client, workspace, name, wanted)]))


def set_traffic(client: ApiClient, workspace: str, name: str, wanted: dict) -> Outcome:
    """The second step of an endpoint's apply: its traffic, now that the deployments of the files are there."""
    after = client.patch(endpoints_path(workspace, name), wanted).body
    note = "; ".join(f"{key} {traffic_text(after.get(key)) or 'none'}" for key in wanted)
    return Outcome(f"online-endpoint/{name}", "configured", changes=list(wanted), note=note)
