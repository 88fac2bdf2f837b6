"""Changes to online endpoints and deployments: the seed's rules, keys, traffic; reconcile runs after commit."""
from pathlib import Path, PurePosixPath

from django.db import transaction
from django.utils import timezone

from assets import services as assets
from assets.selectors import snapshot_files
from assets.specs.conda import inline_conda_file
from assets.specs.snapshots import upload_sha256
from compute import capabilities, shapes
from compute.choices import ComputeType
from compute.models import ComputeTarget
from compute.selectors import instance_type_list, instance_type_shape
from controlplane.api import BadRequest, Conflict
from controlplane.celery import enqueue_on_commit
from controlplane.kube.resources import Shape
from controlplane.reconciling import ProvisioningState
from controlplane.specs import SpecErrors
from workspaces import access
from workspaces.audit import audit_record, changed_fields
from workspaces.choices import AuditAction
from workspaces.models import Workspace

from .. import dataplane, keys
from ..models import OnlineDeployment, OnlineEndpoint
from ..resolve import model_problems, resolved_model_body
from ..spec import (
    KUBERNETES,
    LOCAL,
    MANAGED,
    check_traffic,
    parse_deployment,
    parse_endpoint,
    resolve_resources,
    target_errors,
)
from .local import host_has, is_mlflow, local_problems
from .managed import fix_endpoint_host, managed_placement, unplaced_endpoint

ENDPOINT_EDITABLE = ("description", "tags", "auth_mode", "traffic", "mirror_traffic")
DEPLOYMENT_FIXED = ("name", "endpoint_name")


def _invalid(errors: list[tuple[str, str]], code: str) -> BadRequest:
    details = [{"target": path, "message": message} for path, message in errors]
    first = details[0]
    return BadRequest(f"{first['target']}: {first['message']}" if first["target"] else first["message"], code=code, details=details)


def _enqueue(task_name: str, pk: int) -> None:
    """Reconcile once the change is committed; if the broker is down the resync catches up."""
    from endpoints import tasks

    enqueue_on_commit(getattr(tasks, task_name), pk)


def _endpoint_compute(workspace: Workspace, name: str) -> ComputeTarget | None:
    if name == "":
        return None  # managed: its first deployment's placement fixes the Kubernetes attachment
    if name == "local":
        refusal = access.local_compute_refusal(workspace)
        if refusal:
            raise _invalid([("compute", refusal)], "InvalidEndpoint")
        return None
    compute = ComputeTarget.objects.select_related("cluster").filter(workspace=workspace, name=name).first()
    if compute is None or compute.provisioning_state == ProvisioningState.DELETING:
        raise _invalid([("compute", f"There is no compute '{name}' in workspace '{workspace.name}'.")], "InvalidEndpoint")
    if compute.type != ComputeType.KUBERNETES or not capabilities.supports(compute.type, "realtime_inference"):
        raise _invalid([("compute", f"Online endpoints run on kubernetes computes or local, not on a {compute.type} compute.")], "InvalidEndpoint")
    return compute


def _new_keys(endpoint: OnlineEndpoint, which=keys.KEY_TYPES) -> dict[str, str]:
    made = {}
    for key_type in which:
        key = keys.new_key()
        setattr(endpoint, f"{key_type}_key_hash", keys.hash_key(key))
        endpoint.key_prefixes = {**endpoint.key_prefixes, key_type: key[: keys.PREFIX_LENGTH]}
        endpoint.keys_rotated_at = {**endpoint.keys_rotated_at, key_type: timezone.now().isoformat()}
        made[f"{key_type}Key"] = key
    return made


@transaction.atomic
def endpoint_create(*, user, workspace: Workspace, data: dict) -> tuple[OnlineEndpoint, dict[str, str]]:
    """Create an endpoint (traffic can only name deployments, so it starts empty); returns it and its keys, shown once."""
    try:
        spec = parse_endpoint(data)
    except SpecErrors as exc:
        raise _invalid(exc.errors, "InvalidEndpoint") from None
    compute = _endpoint_compute(workspace, spec["compute"])
    errors = check_traffic(spec["traffic"], spec["mirror_traffic"], set())
    if errors:
        raise _invalid(errors, "InvalidTraffic")
    if OnlineEndpoint.objects.filter(workspace=workspace, name=spec["name"]).exists():
        raise Conflict(f"An online endpoint named '{spec['name']}' already exists in workspace '{workspace.name}'.")
    endpoint = OnlineEndpoint(
        workspace=workspace, name=spec["name"], description=spec["description"], tags=spec["tags"],
        auth_mode=spec["auth_mode"], compute_name=spec["compute"], compute=compute, created_by=user,
        extra={key: spec[key] for key in ("identity", "public_network_access") if key in spec},
        placement=unplaced_endpoint() if spec["compute"] == "" else {},
    )
    made = _new_keys(endpoint) if endpoint.auth_mode == OnlineEndpoint.AuthMode.KEY else {}
    endpoint.save()
    audit_record(actor=user, action=AuditAction.CREATE, target_type="online-endpoint", target_name=endpoint.name,
                 workspace=workspace, changes={"compute": [None, endpoint.compute_name or "managed"]})
    _enqueue("reconcile_endpoint", endpoint.pk)
    return endpoint, made


def live_deployment_names(endpoint: OnlineEndpoint) -> set[str]:
    return set(endpoint.deployments.exclude(provisioning_state=ProvisioningState.DELETING).values_list("name", flat=True))


@transaction.atomic
def endpoint_update(*, user, endpoint: OnlineEndpoint, patch: dict) -> tuple[OnlineEndpoint, dict[str, str]]:
    """Change description, tags, auth mode or the traffic split (checked against the deployments that exist)."""
    endpoint = OnlineEndpoint.objects.select_for_update().get(pk=endpoint.pk)
    if not isinstance(patch, dict):
        raise _invalid([("", "The body must be a mapping of fields.")], "InvalidEndpoint")
    if endpoint.provisioning_state == ProvisioningState.DELETING:
        raise Conflict(f"Online endpoint '{endpoint.name}' is being deleted.")
    current = {**{key: getattr(endpoint, key) for key in ENDPOINT_EDITABLE}, "name": endpoint.name, "compute": endpoint.compute_name}
    for key in ("name", "compute"):
        if key in patch and str(patch[key] or "").removeprefix("azureml:") != current[key]:
            raise BadRequest(f"The {key} of an online endpoint cannot be changed.", code="ImmutableField", target=key)
    body = {**current, **{key: value for key, value in patch.items() if key in ENDPOINT_EDITABLE or key not in current}}
    try:
        spec = parse_endpoint(body)
    except SpecErrors as exc:
        raise _invalid(exc.errors, "InvalidEndpoint") from None
    errors = check_traffic(spec["traffic"], spec["mirror_traffic"], live_deployment_names(endpoint))
    if errors:
        raise _invalid(errors, "InvalidTraffic")
    before = {key: getattr(endpoint, key) for key in ENDPOINT_EDITABLE}
    for key in ENDPOINT_EDITABLE:
        setattr(endpoint, key, spec[key])
    changes = changed_fields(before, {key: getattr(endpoint, key) for key in ENDPOINT_EDITABLE})
    made = {}
    if "auth_mode" in changes and endpoint.auth_mode == OnlineEndpoint.AuthMode.KEY:
        made = _new_keys(endpoint)  # fresh keys: the ones from before a switch to aml_token were dropped then
    elif "auth_mode" in changes:
        endpoint.primary_key_hash = endpoint.secondary_key_hash = ""
        endpoint.key_prefixes, endpoint.keys_rotated_at = {}, {}
    if changes:
        endpoint.generation += 1
        endpoint.provisioning_state = ProvisioningState.UPDATING
        endpoint.save()
        audit_record(actor=user, action=AuditAction.UPDATE, target_type="online-endpoint", target_name=endpoint.name,
                     workspace=endpoint.workspace, changes=changes)
        _enqueue("reconcile_endpoint", endpoint.pk)
    return endpoint, made


@transaction.atomic
def endpoint_delete(*, user, endpoint: OnlineEndpoint) -> OnlineEndpoint:
    """Mark the endpoint and its deployments Deleting; reconcile stops them and removes the rows."""
    if endpoint.provisioning_state != ProvisioningState.DELETING:
        endpoint.provisioning_state = ProvisioningState.DELETING
        endpoint.generation += 1
        endpoint.save(update_fields=["provisioning_state", "generation", "updated_at"])
        for deployment in endpoint.deployments.exclude(provisioning_state=ProvisioningState.DELETING):
            _mark_deleting(deployment)
        audit_record(actor=user, action=AuditAction.DELETE, target_type="online-endpoint", target_name=endpoint.name,
                     workspace=endpoint.workspace)
    _enqueue("reconcile_endpoint", endpoint.pk)
    return endpoint


@transaction.atomic
def endpoint_regenerate_key(*, user, endpoint: OnlineEndpoint, key_type: str) -> dict[str, str]:
    """Replace one key (the other keeps working, so clients can roll over); the new key is shown once."""
    if endpoint.auth_mode != OnlineEndpoint.AuthMode.KEY:
        raise BadRequest(f"Endpoint '{endpoint.name}' uses {endpoint.auth_mode} authentication: it has no keys.",
                         code="NoKeys", target="auth_mode")
    if key_type not in keys.KEY_TYPES:
        raise BadRequest("key_type must be primary or secondary.", code="InvalidKeyType", target="key_type")
    endpoint = OnlineEndpoint.objects.select_for_update().get(pk=endpoint.pk)
    made = _new_keys(endpoint, (key_type,))
    endpoint.save(update_fields=[f"{key_type}_key_hash", "key_prefixes", "keys_rotated_at", "updated_at"])
    audit_record(actor=user, action=AuditAction.ACTION, verb="regenerate-key", target_type="online-endpoint",
                 target_name=endpoint.name, workspace=endpoint.workspace, changes={f"{key_type}_key": "(secret changed)"})
    return made


def _shape(endpoint: OnlineEndpoint, name: str | None) -> Shape:
    """The instance type a Kubernetes deployment runs on (the default when none is named), on the endpoint's compute."""
    shape = instance_type_shape(compute=endpoint.compute, name=name or shapes.DEFAULT_NAME)
    if shape is None:
        known = ", ".join(item["name"] for item in instance_type_list(compute=endpoint.compute))
        raise _invalid([("instance_type", f"Compute '{endpoint.compute_name}' has no instance type '{name}' (it has: {known}).")],
                       "InvalidDeployment")
    return shape


def _upload_problems(workspace: Workspace, spec: dict) -> list[tuple[str, str]]:
    """Uploaded code must be this workspace's and hold the scoring script (other paths: the host's or the image's)."""
    code = spec.get("code_configuration")
    if not code or not upload_sha256(code["code"]):
        return []
    files = snapshot_files(workspace=workspace, reference=code["code"])
    if files is None:
        return [("code_configuration.code", f"{code['code']} is not an upload of workspace '{workspace.name}': upload "
                                            "the folder first (POST uploads/; the CLI does it for you).")]
    script = PurePosixPath(code["scoring_script"].replace("\\", "/")).as_posix()
    if script not in files:
        return [("code_configuration.scoring_script", f"There is no {code['scoring_script']} in the uploaded code.")]
    return []


def _with_model_type(body: object) -> object:
    """A model folder holding an `MLmodel` file is an MLflow model even when the YAML does not say so."""
    if not isinstance(body, dict):
        return body
    model = body.get("model")
    path = model if isinstance(model, str) else model.get("path") if isinstance(model, dict) and "type" not in model else None
    if isinstance(path, str) and path and not path.startswith("azureml:") and host_has(Path(path) / "MLmodel", "is_file"):
        return {**body, "model": {**(model if isinstance(model, dict) else {}), "path": path, "type": "mlflow_model"}}
    return body


def _resolve_environment(endpoint: OnlineEndpoint, spec: dict) -> None:
    """A registered or curated environment runs its image: kept in the spec with the reference it came from."""
    reference = (spec.get("environment") or {}).get("reference")
    if not reference:
        return
    try:
        resolved = assets.resolve_environment(endpoint.workspace, reference)
    except BadRequest as exc:
        raise _invalid([("environment", str(exc.detail))], "InvalidDeployment") from None
    spec["environment"] = {"image": resolved.image, "reference": reference}
    if resolved.conda_file:  # realised on top of the image before the server starts (refused for local deployments)
        errors: list[tuple[str, str]] = []
        spec["environment"]["conda_file"] = inline_conda_file(resolved.conda_file, errors)
        if errors:
            raise _invalid([("environment", f"{reference}'s conda_file cannot be realised: {errors[0][1]}")],
                           "InvalidDeployment")


def _target(endpoint: OnlineEndpoint) -> str:
    return LOCAL if endpoint.is_local else MANAGED if endpoint.is_managed else KUBERNETES


def _validated_deployment(endpoint: OnlineEndpoint, body: dict, previous: dict | None = None) -> tuple[dict, str, dict, dict]:
    """The parsed spec, the instance type's name, the container's resources (none for a local deployment) and, for a
    managed one, where it is placed (`previous`: its placement so far)."""
    try:
        spec = parse_deployment(_with_model_type(resolved_model_body(endpoint.workspace, body)), endpoint.name)
    except SpecErrors as exc:
        raise _invalid(exc.errors, "InvalidDeployment") from None
    _resolve_environment(endpoint, spec)
    target = _target(endpoint)
    errors = (target_errors(spec, target) + _upload_problems(endpoint.workspace, spec)
              + model_problems(endpoint.workspace, spec))
    if target != LOCAL and not (spec.get("environment") or {}).get("image"):
        errors.append(("environment.image", "A Kubernetes deployment runs in a container: environment.image is required."))
    if errors:
        raise _invalid(errors, "InvalidDeployment")
    placement: dict = {}
    if target == LOCAL:
        errors = local_problems(spec)
        shape_name, resources = "", {}
    else:
        if target == MANAGED:
            placement, shape = managed_placement(endpoint, spec, previous, _invalid)
        else:
            shape = _shape(endpoint, spec["instance_type"])
        shape_name = shape.name
        resources, errors = resolve_resources(spec["resources"], shape, is_mlflow(spec))
    if errors:
        raise _invalid(errors, "InvalidDeployment")
    return spec, shape_name, resources, placement


@transaction.atomic
def deployment_create(*, user, endpoint: OnlineEndpoint, data: dict) -> OnlineDeployment:
    """Add a deployment to an endpoint, validated by the seed's rules against its instance type (a managed one placed
    on a compute cluster of its VM size)."""
    if endpoint.provisioning_state == ProvisioningState.DELETING:
        raise Conflict(f"Online endpoint '{endpoint.name}' is being deleted.")
    if endpoint.is_managed:  # two first deployments must not fix the endpoint on two attachments
        locked = OnlineEndpoint.objects.select_for_update(of=("self",)).select_related("compute").get(pk=endpoint.pk)
        endpoint.compute, endpoint.placement = locked.compute, locked.placement
    spec, instance_type, resources, placement = _validated_deployment(endpoint, data)
    if OnlineDeployment.objects.filter(endpoint=endpoint, name=spec["name"]).exists():
        raise Conflict(f"Endpoint '{endpoint.name}' already has a deployment named '{spec['name']}'.")
    if placement:
        fix_endpoint_host(user=user, endpoint=endpoint, placement=placement, deployment=spec["name"])
    deployment = OnlineDeployment.objects.create(
        endpoint=endpoint, name=spec["name"], spec=spec, instance_type=instance_type, resources=resources,
        instance_count=spec["instance_count"], placement=placement, created_by=user,
    )
    audit_record(actor=user, action=AuditAction.CREATE, target_type="online-deployment",
                 target_name=f"{endpoint.name}/{deployment.name}", workspace=endpoint.workspace,
                 changes={"instance_type": [None, instance_type or None], "instance_count": [None, deployment.instance_count],
                          **({"placement": [None, placement["compute"]]} if placement else {})})
    if placement:
        _enqueue("reconcile_endpoint", endpoint.pk)  # its route now lives on the attachment
    _enqueue("reconcile_deployment", deployment.pk)
    return deployment


@transaction.atomic
def deployment_update(*, user, deployment: OnlineDeployment, patch: dict) -> OnlineDeployment:
    """Change a deployment (e.g. instance_count): the whole result is validated again by the same rules (a managed one
    stays where it was placed unless its instance_type changes)."""
    if not isinstance(patch, dict):
        raise _invalid([("", "The body must be a mapping of fields.")], "InvalidDeployment")
    endpoint = deployment.endpoint
    # Locked and re-read: the worker writes runner/status on this row, and two PATCHes must not lose a generation.
    deployment = OnlineDeployment.objects.select_for_update().get(pk=deployment.pk)
    deployment.endpoint = endpoint
    if deployment.provisioning_state == ProvisioningState.DELETING:
        raise Conflict(f"Deployment '{deployment.name}' is being deleted.")
    for key in DEPLOYMENT_FIXED:
        if key in patch and patch[key] != deployment.spec.get(key):
            raise BadRequest(f"The {key} of a deployment cannot be changed.", code="ImmutableField", target=key)
    if "resources" in patch and patch["resources"] == deployment.resources:
        patch = {key: value for key, value in patch.items() if key != "resources"}  # a GET body sent back as it was
    body = {**deployment.spec, **patch}
    spec, instance_type, resources, placement = _validated_deployment(endpoint, body, deployment.placement)
    changes = changed_fields({**deployment.spec, "placement": deployment.placement}, {**spec, "placement": placement})
    if not changes:
        return deployment
    deployment.spec, deployment.instance_type, deployment.resources = spec, instance_type, resources
    deployment.instance_count, deployment.placement = spec["instance_count"], placement
    deployment.generation += 1
    deployment.provisioning_state = ProvisioningState.UPDATING
    deployment.save(update_fields=["spec", "instance_type", "resources", "instance_count", "placement", "generation",
                                   "provisioning_state", "updated_at"])
    audit_record(actor=user, action=AuditAction.UPDATE, target_type="online-deployment",
                 target_name=f"{endpoint.name}/{deployment.name}", workspace=endpoint.workspace, changes=changes)
    _enqueue("reconcile_deployment", deployment.pk)
    return deployment


def _mark_deleting(deployment: OnlineDeployment) -> None:
    deployment.provisioning_state = ProvisioningState.DELETING
    deployment.generation += 1
    deployment.save(update_fields=["provisioning_state", "generation", "updated_at"])
    _enqueue("reconcile_deployment", deployment.pk)


@transaction.atomic
def deployment_delete(*, user, deployment: OnlineDeployment) -> OnlineDeployment:
    """Delete a deployment that takes no traffic (live or mirrored); reconcile stops it and removes the row."""
    endpoint = OnlineEndpoint.objects.select_for_update().get(pk=deployment.endpoint_id)
    share, mirrored = endpoint.traffic.get(deployment.name, 0), endpoint.mirror_traffic.get(deployment.name, 0)
    if share or mirrored:
        what = f"{share}% of the traffic" if share else f"{mirrored}% mirrored traffic"
        raise BadRequest(f"Deployment '{deployment.name}' takes {what}; move it to other deployments first.",
                         code="DeploymentHasTraffic", target="traffic")
    if deployment.provisioning_state != ProvisioningState.DELETING:
        _mark_deleting(deployment)
        audit_record(actor=user, action=AuditAction.DELETE, target_type="online-deployment",
                     target_name=f"{endpoint.name}/{deployment.name}", workspace=endpoint.workspace)
    return deployment


# The data plane: scoring and server logs reach the running servers themselves (a local server's socket, or a cluster's
# Service through the API server's service proxy). Transports come through here, never to endpoints.dataplane directly:
# it is the layout contract's one exception to "only reconcile calls controlplane.kube" (see .importlinter).
DEPLOYMENT_HEADER = dataplane.HEADER
ScoringError = dataplane.ScoringError


def endpoint_score(*, endpoint: OnlineEndpoint, deployments: dict[str, OnlineDeployment], body: bytes, content_type: str,
                   requested: str | None) -> dataplane.Answer:
    """Answer one scoring request from the deployment the traffic (or `requested`) picks; the mirror gets its share."""
    return dataplane.score(endpoint, deployments, body, content_type, requested)


def deployment_logs(*, deployment: OnlineDeployment, lines: int) -> str:
    """The last `lines` lines of the deployment's server output (every replica's on Kubernetes)."""
    return dataplane.deployment_logs(deployment, lines)
