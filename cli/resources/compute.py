"""Computes as the CLI knows them: their types and secrets, paths, what a 404 means, their YAML's side files, apply."""
from ..client import ApiClient, Response, path_of
from ..documents import Document, read_side_file
from ..errors import ApiError, InvalidInput
from .base import (
    Outcome,
    changed,
    contains,
    created,
    ensure_workspace_exists,
    missing_in_workspace,
    once_more_if_stale,
    read_if_exists,
    required_name,
    workspace_exists,
    workspace_not_found,
)

# Azure ML's compute `type` values the API accepts (DESIGN.md §3); serverless and local have no record.
COMPUTE_TYPES = (
    "kubernetes", "amlcompute", "computeinstance", "virtualmachine", "databricks",
    "hdinsight", "datalakeanalytics", "synapsespark", "batch",
)
SSH_HOST_TYPES = ("virtualmachine", "hdinsight")
# Write-only fields: the API never returns them, so they cannot be compared, and the CLI never prints them.
SECRET_FIELDS = frozenset({"kubeconfig", "admin_password", "ssh_private_key", "access_token", "account_key"})
# Fields in which the API fills in nested defaults (a schedule's time zone, interval, state): a dry run
# counts them unchanged when the document's values are all there. Every other field must match exactly.
DEFAULTED_FIELDS = ("schedules",)


def computes_path(workspace: str, name: str | None = None) -> str:
    return path_of("workspaces", workspace, "computes", *([name] if name else []))


def instance_action_path(workspace: str, compute: str, action: str) -> str:
    """POST here to start, stop or restart a compute instance."""
    return path_of("workspaces", workspace, "computes", compute, action)


def confirm_host_key_path(workspace: str, compute: str) -> str:
    """POST {"fingerprint": …} here to confirm the host key an SSH host presented."""
    return path_of("workspaces", workspace, "computes", compute, "confirm-host-key")


def nodes_path(workspace: str, compute: str) -> str:
    return path_of("workspaces", workspace, "computes", compute, "nodes")


def compute_name(reference) -> str:
    """`azureml:NAME`, `NAME` and `local` name the same compute; nothing is serverless."""
    return str(reference or "").removeprefix("azureml:").strip()


def compute_not_found(workspace: str, compute: str) -> ApiError:
    return ApiError(404, f"Compute '{compute}' was not found in workspace '{workspace}'.", code="NotFound")


def missing_compute(client: ApiClient, workspace: str, compute: str) -> ApiError | None:
    """None when the compute exists; otherwise the error that says whether the workspace or the compute is missing."""
    if read_if_exists(client, computes_path(workspace, compute)) is not None:
        return None
    if not workspace_exists(client, workspace):
        return workspace_not_found(workspace)
    return compute_not_found(workspace, compute)


def not_found_in_workspace(client: ApiClient, workspace: str, name: str, error: ApiError) -> ApiError:
    """Turn the API's bare 404 into which one is missing: the workspace or the compute."""
    return missing_in_workspace(client, workspace, error, compute_not_found(workspace, name))


def compute_body(document: Document) -> dict:
    """The body the API takes: `$schema` dropped, `*_file` fields replaced by the files' contents."""
    body = {key: value for key, value in document.body.items() if key != "$schema"}
    if body.get("type") == "kubernetes" and "kubeconfig_file" in body:
        if "kubeconfig" in body:
            raise InvalidInput("Give kubeconfig or kubeconfig_file, not both.", target="kubeconfig_file", code="InvalidFile")
        body["kubeconfig"] = read_side_file(document, body.pop("kubeconfig_file"), "kubeconfig_file")
    ssh = body.get("ssh_settings")
    if body.get("type") in SSH_HOST_TYPES and isinstance(ssh, dict) and "ssh_private_key_file" in ssh:
        ssh = dict(ssh)
        target = "ssh_settings.ssh_private_key_file"
        if "ssh_private_key" in ssh:
            raise InvalidInput("Give ssh_private_key or ssh_private_key_file, not both.", target=target, code="InvalidFile")
        ssh["ssh_private_key"] = read_side_file(document, ssh.pop("ssh_private_key_file"), target)
        body["ssh_settings"] = ssh
    return body


def apply_compute(client: ApiClient, workspace: str, body: dict, dry_run: bool) -> Outcome:
    """POST a new compute, or PATCH an existing one; the server decides whether anything changed."""
    return once_more_if_stale(lambda: apply_compute_once(client, workspace, body, dry_run))


def apply_compute_once(client: ApiClient, workspace: str, body: dict, dry_run: bool) -> Outcome:
    name = required_name(body)
    resource = f"compute/{name}"
    path = computes_path(workspace, name)
    current = read_if_exists(client, path)
    if current is None:
        ensure_workspace_exists(client, workspace)
        return created(resource, dry_run, lambda: client.post(computes_path(workspace), body))
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
    return changed(resource, changes, True, note=note)


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
