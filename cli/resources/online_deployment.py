"""Online deployments as the CLI knows them: their own fields, comparing them, table cells, paths, what a 404
means, and apply (the endpoint must be there, or planned by the same dry run)."""
import copy
from pathlib import Path

from ..client import ApiClient, path_of
from ..documents import apply_assignments
from ..errors import ApiError, InvalidInput
from .asset import with_conda_file_read
from .base import (
    Outcome,
    Scope,
    as_strings,
    being_deleted,
    changed,
    contains,
    created,
    ensure_workspace_exists,
    once_more_if_stale,
    read_if_exists,
    required_name,
)
from .online_endpoint import endpoint_not_found, endpoint_not_found_in_workspace, endpoints_path
from .uploads import UPLOADS_PREFIX, uploaded_field

# A deployment's own fields, as `GET …/deployments/{d}/` shows them (after the API filled in its defaults).
DEPLOYMENT_FIELDS = (
    "description", "tags", "model", "model_mount_path", "code_configuration", "environment", "environment_variables",
    "liveness_probe", "readiness_probe", "request_settings", "scale_settings", "app_insights_enabled", "data_collector",
    "instance_type", "instance_count", "resources",
)
# Fields of a deployment document that are not sent to PATCH: its identity, its kind, or only shown.
NOT_PATCHED = {"$schema", "name", "endpoint_name", "type", "provisioning_state", "provisioning_errors", "status",
               "created_by", "created_on", "updated_on", "manifests", "id", "scoring"}
LOCAL_INSTANCE_TYPE = "none (local)"


def deployments_path(workspace: str, endpoint: str, name: str | None = None, action: str | None = None) -> str:
    """An endpoint's `deployments/`, one deployment's path, or one of its actions (logs)."""
    return path_of("workspaces", workspace, "online-endpoints", endpoint, "deployments",
                   *[part for part in (name, action) if part])


def deployment_not_found_on_endpoint(client: ApiClient, workspace: str, endpoint: str, name: str | None,
                                     error: ApiError) -> ApiError:
    """The API's bare 404 under an endpoint's deployments: the workspace, the endpoint, or the deployment."""
    if error.status != 404:
        return error
    if read_if_exists(client, endpoints_path(workspace, endpoint)) is None:
        return endpoint_not_found_in_workspace(client, workspace, endpoint, error)
    if name is None:
        return error
    return ApiError(404, f"Online endpoint '{endpoint}' has no deployment '{name}'.", code="NotFound")


def as_model(value):
    """A model reference given as a string is `{reference}` to the API, a path `{path, type: custom_model}`."""
    if isinstance(value, str) and value.startswith("azureml:") and not value.startswith(UPLOADS_PREFIX):
        return {"reference": value}
    return {"path": value, "type": "custom_model"} if isinstance(value, str) else value


def same_deployment_field(key: str, desired, current) -> bool:
    if key in ("tags", "environment_variables"):
        return as_strings(desired or {}) == (current or {})
    if key == "description":
        return (desired or "") == (current or "")
    if key == "model":
        return contains(current, as_model(desired))
    if key == "instance_type" and desired is None:
        return True  # the default instance type, whichever it is
    return contains(current, desired)  # the API fills in defaults (probes, request and scale settings)


def deployment_changes(document: dict, current: dict) -> list[str]:
    """The fields of a deployment document that differ from the deployment (left out: left as they are)."""
    return [key for key in DEPLOYMENT_FIELDS if key in document and not same_deployment_field(key, document[key], current.get(key))]


def deployment_view(deployment: dict) -> dict:
    """A deployment's own fields as shown (a copy), to change with `--set` or to tell whether a PATCH changed anything."""
    return copy.deepcopy({key: deployment.get(key) for key in DEPLOYMENT_FIELDS})


def changed_keys(before: dict, after: dict) -> list[str]:
    return [key for key in dict.fromkeys([*before, *after]) if before.get(key) != after.get(key)]


def instance_type_cell(row: dict) -> str:
    """A deployment's instance type; a local one has none (the API says null) and the studio says so too."""
    return row.get("instance_type") or LOCAL_INSTANCE_TYPE


def ready_cell(row: dict) -> str | None:
    """`ready/replicas` of a deployment, from its observed status."""
    status = row.get("status") or {}
    if "ready_replicas" not in status and "replicas" not in status:
        return None
    return f"{status.get('ready_replicas') or 0}/{status.get('replicas', row.get('instance_count')) or 0}"


def deployment_patch(current: dict, document: dict, assignments: list[str]) -> dict:
    """The fields the file and --set change; the file's other fields go along so that the API says what it does not take."""
    desired = {**deployment_view(current), **{key: value for key, value in document.items() if key not in NOT_PATCHED}}
    apply_assignments(desired, assignments)
    return {key: value for key, value in desired.items()
            if key not in DEPLOYMENT_FIELDS or not same_deployment_field(key, value, current.get(key))}


def with_code_uploaded(body: object, base_dir: Path, client: ApiClient, workspace: str, dry_run: bool = False) -> object:
    """The deployment's local `code_configuration.code` folder and inline `model.path` (relative to the YAML file's
    folder) uploaded and named `azureml://uploads/<sha256>`; a model folder keeps its own name inside the upload."""
    if not isinstance(body, dict):
        return body
    code = body.get("code_configuration")
    if isinstance(code, dict) and "code" in code:
        code["code"] = uploaded_field(client, workspace, base_dir, code["code"], dry_run)
    model = body.get("model")
    if isinstance(model, dict) and "path" in model and "reference" not in model:
        model["path"] = uploaded_field(client, workspace, base_dir, model["path"], dry_run, named=True)
    elif isinstance(model, str):
        sent = uploaded_field(client, workspace, base_dir, model, dry_run, named=True)
        body["model"] = {"path": sent} if sent != model else model  # uploaded: an inline model; else as written
    with_conda_file_read(body, base_dir)
    return body


def apply_deployment(client: ApiClient, scope: Scope, body: dict, dry_run: bool) -> Outcome:
    """Create an online deployment (POST), or PATCH it with the document; the API says whether anything changed.

    Fields the document leaves out keep their values. Apply does not wait for the deployment's server.
    """
    return once_more_if_stale(lambda: apply_deployment_once(client, scope, body, dry_run))


def apply_deployment_once(client: ApiClient, scope: Scope, body: dict, dry_run: bool) -> Outcome:
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
        return created(resource, dry_run, lambda: client.post(deployments_path(workspace, endpoint), body))
    if current.body.get("provisioning_state") == "Deleting":
        raise being_deleted(f"Deployment '{name}' of online endpoint '{endpoint}'")
    if dry_run:
        return changed(resource, deployment_changes(body, current.body), True)
    after = client.patch(path, body, etag=current.etag).body
    return changed(resource, changed_keys(deployment_view(current.body), deployment_view(after)))
