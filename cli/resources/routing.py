"""`apply`'s router: which resource a YAML document describes, its label in result lines, and handing it over."""
from ..client import ApiClient
from ..documents import Document
from ..errors import CliError, InvalidInput
from .asset import apply_asset, asset_kind
from .base import Outcome, Scope
from .compute import COMPUTE_TYPES, apply_compute, compute_body
from .instancetype import KINDS as INSTANCE_TYPE_KINDS
from .instancetype import apply_instance_types, instance_type_api
from .job import JOB_TYPES, apply_job, with_code_uploaded
from .online_deployment import apply_deployment
from .online_deployment import with_code_uploaded as with_deployment_code_uploaded
from .online_endpoint import apply_endpoint, online_kind
from .workspace import apply_workspace


class NotSupportedYet(CliError):
    """A document this version of Dockyard knows of but cannot apply."""

    def __init__(self, message: str):
        super().__init__(message, code="NotSupported")


def route_of(body: dict) -> str:
    """Which resource a document describes: compute, workspace, instancetype, job, online-endpoint,
    online-deployment, environment, model, data or unknown."""
    doc_type, kind = body.get("type"), body.get("kind")
    asset = asset_kind(body)  # by its $schema or fields an asset has alone (a top-level image; a model or data type)
    if asset is not None:
        return asset.noun
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
        return apply_instance_types(instance_type_api(client, scope), body, dry_run)
    if route == "job" and body.get("type") == "command":
        body = with_code_uploaded(document, client, scope.workspace(), dry_run)
        return [apply_job(client, scope.workspace(), body, dry_run)]
    if route == "job":
        raise NotSupportedYet(f"This is a {body.get('type')} job; Dockyard runs command jobs only (`type: command`).")
    if route == "online-endpoint":
        return [apply_endpoint(client, scope, body, dry_run)]
    if route == "online-deployment":
        with_deployment_code_uploaded(body, document.base_dir, client, scope.workspace(), dry_run)
        return [apply_deployment(client, scope, body, dry_run)]
    asset = asset_kind(body)
    if asset is not None:
        return [apply_asset(client, scope.workspace(), asset, document, dry_run)]
    choices = ", ".join(COMPUTE_TYPES)
    raise InvalidInput(
        f"Cannot tell what this document is: give `type` (workspace, command or a compute type: {choices}), "
        "`kind` (InstanceType, InstanceTypeList, Workspace) or the `$schema` of an online endpoint, a deployment, an "
        "environment, a model or data.",
        target="type", code="UnknownDocument",
    )
