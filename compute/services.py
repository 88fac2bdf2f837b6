"""Changes to compute records: validate, save, bump generation, audit, enqueue reconcile after commit."""
from dataclasses import replace

from django.db import transaction

from controlplane.api import BadRequest, Conflict, NotFound, PermissionDenied, ValidationError
from controlplane.celery import enqueue_on_commit
from controlplane.reconciling import ProvisioningState
from controlplane.specs import SpecErrors, enum_choice
from workspaces import access
from workspaces.audit import audit_record, changed_fields
from workspaces.choices import AuditAction
from workspaces.models import Workspace

from . import hostkeys, instances, selectors, shapes, spec
from .choices import SSH_TYPES, ComputeType, StopCause
from .connections import HOST_KEY
from .models import Cluster, ComputeTarget, InstanceType
from .validators import CHECKS

EDITABLE_COMMON = ("description", "tags")
# Jobs point at their compute by a reverse relation only: the jobs app depends on compute, never the other way.
ENDED_JOB_STATUSES = ("Completed", "Failed", "Canceled")


def _invalid(errors: list[tuple[str, str]]) -> ValidationError:
    """The spec's problems as the API's ValidationError: each field path with its messages, in the order found."""
    detail: dict[str, list[str]] = {}
    for path, message in errors:
        detail.setdefault(path, []).append(message)
    return ValidationError(detail)


def _kind(compute_type: object) -> spec.ComputeKind:
    try:
        return spec.kind_for(compute_type)
    except SpecErrors as exc:
        raise _invalid(exc.errors) from None


def _validated(kind: spec.ComputeKind, data: dict, workspace: Workspace,
               stored_secrets: dict | None = None) -> tuple[dict, dict, dict]:
    """Parse a body of `kind` in `workspace`: (common fields, properties, secrets)."""
    def computes() -> dict[str, str]:  # asked only by the bodies that name another compute (a compute cluster's host)
        return dict(ComputeTarget.objects.filter(workspace=workspace).values_list("name", "type"))

    def instance_types(name: str) -> list[str] | None:  # a compute instance's instance type, where the host is proven
        host = selectors.kubernetes_compute_list(workspace=workspace).filter(name=name).first()
        return [row["name"] for row in selectors.instance_type_list(compute=host)] if host and host.cluster_id else None

    checks = replace(CHECKS, workspace_computes=computes, instance_types=instance_types,
                     local_compute=lambda: access.local_compute_refusal(workspace))
    try:
        return spec.parse_compute(kind, data, checks, stored_secrets)
    except SpecErrors as exc:
        raise _invalid(exc.errors) from None


def _enqueue(compute: ComputeTarget) -> None:
    """Ask for a reconcile once the change is committed; if the broker is down the resync catches up."""
    from .tasks import reconcile_compute

    enqueue_on_commit(reconcile_compute, compute.pk)


@transaction.atomic
def compute_create(*, user, workspace: Workspace, data: dict) -> ComputeTarget:
    """Create a compute record of any type; reconcile brings it to Succeeded or Failed."""
    if not isinstance(data, dict):
        raise ValidationError({"non_field_errors": ["The body must be a mapping of fields."]})
    kind = _kind(data.get("type"))
    common, properties, secrets = _validated(kind, data, workspace)
    existing = ComputeTarget.objects.filter(workspace=workspace, name=common["name"]).first()
    if existing:
        being = " and is being deleted" if existing.provisioning_state == ProvisioningState.DELETING else ""
        raise Conflict(f"A compute named '{common['name']}' already exists in workspace '{workspace.name}'{being}.")
    assignee = _instance_user(user, workspace, properties) if kind.compute_type == ComputeType.COMPUTEINSTANCE else None
    compute = ComputeTarget(
        workspace=workspace, name=common["name"], type=kind.compute_type,
        description=common.get("description", ""), tags=common.get("tags", {}),
        properties=properties, created_by=user,
    )
    _require_staff_for_in_cluster(user, properties)
    compute.secrets = {key: value for key, value in secrets.items() if value}
    if assignee is not None:
        compute.secrets = {**compute.secrets, instances.TOKEN_KEY: instances.new_token()}
    compute.save()  # linked to a Cluster only once its own credentials pass the checks (reconcile)
    if assignee is not None:
        instances.instance_create(compute=compute, assigned_user=assignee)
    audit_record(
        actor=user, action=AuditAction.CREATE, target_type="compute", target_name=compute.name, workspace=workspace,
        changes=changed_fields({}, {**properties, **secrets, "type": compute.type}, frozenset(secrets)),
    )
    _enqueue(compute)
    return compute


def _instance_user(user, workspace: Workspace, properties: dict):
    """A new compute instance's user: the member it names, else its creator."""
    properties.setdefault("assigned_user", user.username)
    return instances.assigned_user_for(workspace=workspace, username=properties["assigned_user"])


def _require_staff_for_in_cluster(user, properties: dict) -> None:
    """The in-cluster ServiceAccount is Dockyard's own: only staff may hand it to a workspace."""
    if properties.get("in_cluster") and not getattr(user, "is_staff", False):
        raise PermissionDenied("Only staff can attach the cluster Dockyard runs in (in_cluster: true); "
                               "attach it with a kubeconfig of your own instead.")


def _fixed_value(field: str, value: object) -> object:
    """A type in any case is the same type (Azure ML reads `AmlCompute` as amlcompute)."""
    return enum_choice(value, ComputeType.values) or value if field == "type" else value


REACH_FIELDS = ("server", "context", "in_cluster")  # with the kubeconfig: what the credentials are and where they go


def _unlink_if_credentials_changed(compute: ComputeTarget, before: dict, stored_secrets: dict, new_secrets: dict) -> None:
    """New credentials (or a new server) must pass the checks again before they see the cluster's instance types."""
    moved = any(before.get(key) != compute.properties.get(key) for key in REACH_FIELDS)
    if moved or stored_secrets.get("kubeconfig") != new_secrets.get("kubeconfig"):
        compute.cluster = None


# What the SSH check keeps in an attached host's properties (compute/reconcile/vms.py): not a body field.
HOST_KEY_PROPERTIES = ("host_key", "host_key_confirmed", "presented_host_key")
# What a host is: another address or port is another host, whose key is recorded afresh.
HOST_FIELDS = ("address", "ssh_port")


def _stored_body(compute: ComputeTarget) -> dict:
    given = {key: value for key, value in compute.properties.items() if key not in HOST_KEY_PROPERTIES}
    return {**given, "name": compute.name, "type": compute.type, "description": compute.description, "tags": compute.tags}


def _kept_host_key(compute: ComputeTarget, properties: dict) -> dict:
    """The recorded host key of an SSH host, kept through a change unless the change moves to another host or names a
    fingerprint the recorded key does not have (then the key is scanned again and checked against it)."""
    kept = {key: compute.properties[key] for key in HOST_KEY_PROPERTIES if key in compute.properties}
    moved = any(compute.properties.get(key) != properties.get(key) for key in HOST_FIELDS)
    expected = properties.get("host_key_fingerprint")
    other_key = expected and kept.get("host_key") and hostkeys.fingerprint(kept["host_key"]) != expected
    return {} if moved or other_key else kept


@transaction.atomic
def compute_update(*, user, compute: ComputeTarget, patch: dict) -> ComputeTarget:
    """Apply a partial update; name and type are fixed, omitted secrets are kept."""
    if not isinstance(patch, dict):
        raise ValidationError({"non_field_errors": ["The body must be a mapping of fields."]})
    if compute.provisioning_state == ProvisioningState.DELETING:
        raise Conflict(f"Compute '{compute.name}' is being deleted.")
    for fixed in ("name", "type"):
        if fixed in patch and _fixed_value(fixed, patch[fixed]) != getattr(compute, fixed):
            raise BadRequest(f"The {fixed} of a compute cannot be changed.", code="ImmutableField", target=fixed)
    kind = _kind(compute.type)
    stored_secrets = compute.secrets
    body = kind.merge_for_update(_stored_body(compute), patch)
    common, properties, secrets = _validated(kind, body, compute.workspace, stored_secrets)
    _refuse_moving_pool(compute, properties)
    assignee = _new_instance_user(compute, properties)
    if compute.type in SSH_TYPES:
        properties.update(_kept_host_key(compute, properties))
    before = {**compute.properties, **{key: getattr(compute, key) for key in EDITABLE_COMMON}}
    new_secrets = {**stored_secrets, **{key: value for key, value in secrets.items() if value}}
    compute.properties = properties
    for key in EDITABLE_COMMON:
        setattr(compute, key, common.get(key, getattr(compute, key)))
    changes = changed_fields(before, {**properties, **{key: getattr(compute, key) for key in EDITABLE_COMMON}})
    changes.update(changed_fields(stored_secrets, new_secrets, frozenset(new_secrets)))
    if not changes:
        return compute
    _require_staff_for_in_cluster(user, properties)
    compute.secrets = new_secrets
    if compute.type == ComputeType.KUBERNETES:
        _unlink_if_credentials_changed(compute, before, stored_secrets, new_secrets)
    if assignee is not None:
        instances.instance_reassign(compute=compute, assigned_user=assignee)
    compute.generation += 1
    compute.provisioning_state = ProvisioningState.UPDATING
    compute.save()
    audit_record(
        actor=user, action=AuditAction.UPDATE, target_type="compute", target_name=compute.name,
        workspace=compute.workspace, changes=changes,
    )
    _enqueue(compute)
    return compute


def _refuse_moving_pool(compute: ComputeTarget, properties: dict) -> None:
    """A compute cluster's pool lives on one cluster, an instance's disk too: moving would leave them behind."""
    host = compute.properties.get(HOST_KEY)
    what = {ComputeType.AMLCOMPUTE: "compute cluster", ComputeType.COMPUTEINSTANCE: "compute instance"}.get(compute.type)
    if what and host and properties.get(HOST_KEY) != host:
        raise BadRequest(f"A {what} cannot move to another kubernetes compute (it lives on '{host}'); delete "
                         "it and create it again there.", code="ImmutableField", target=HOST_KEY)


def _new_instance_user(compute: ComputeTarget, properties: dict):
    """The member a change gives a compute instance to (checked), or None when its user stays."""
    name = properties.get("assigned_user")
    if compute.type != ComputeType.COMPUTEINSTANCE or not name or name == compute.properties.get("assigned_user"):
        return None
    return instances.assigned_user_for(workspace=compute.workspace, username=name)


def _refuse_hosting(compute: ComputeTarget) -> None:
    """A kubernetes compute's credentials act for the compute clusters and compute instances that live on it: those
    go first."""
    if compute.type != ComputeType.KUBERNETES:
        return
    hosted = dict(ComputeTarget.objects.filter(
        workspace_id=compute.workspace_id, type__in=[ComputeType.AMLCOMPUTE, ComputeType.COMPUTEINSTANCE],
        **{f"properties__{HOST_KEY}": compute.name},
    ).order_by("name").values_list("name", "type"))
    clusters = [name for name, kind in hosted.items() if kind == ComputeType.AMLCOMPUTE]
    instances = [name for name, kind in hosted.items() if kind == ComputeType.COMPUTEINSTANCE]
    what = ([f"the compute cluster(s) {', '.join(clusters)}"] if clusters else []) + (
        [f"the compute instance(s) {', '.join(instances)}"] if instances else [])
    if what:
        raise BadRequest(f"Compute '{compute.name}' hosts {' and '.join(what)}; delete them first.",
                         code="ComputeInUse", target="name")


@transaction.atomic
def compute_delete(*, user, compute: ComputeTarget) -> ComputeTarget:
    """Mark a compute Deleting; reconcile removes what it owns and then the row (a finalizer)."""
    _refuse_hosting(compute)
    active = compute.jobs.exclude(status__in=ENDED_JOB_STATUSES).count()
    if active:
        raise Conflict(f"Compute '{compute.name}' still has {active} job(s) that have not ended; cancel them first.")
    if compute.online_endpoints.exists():
        raise Conflict(f"Compute '{compute.name}' still serves online endpoints; delete them first.")
    _refuse_serving_deployments(compute)
    if compute.provisioning_state != ProvisioningState.DELETING:
        compute.provisioning_state = ProvisioningState.DELETING
        compute.generation += 1
        compute.save(update_fields=["provisioning_state", "generation", "updated_at"])
        audit_record(
            actor=user, action=AuditAction.DELETE, target_type="compute", target_name=compute.name,
            workspace=compute.workspace,
        )
    _enqueue(compute)
    return compute


def _refuse_serving_deployments(compute: ComputeTarget) -> None:
    """A compute cluster whose nodes managed deployments were placed on serves them: those go (or move) first."""
    if compute.type != ComputeType.AMLCOMPUTE:
        return
    placed = sorted(compute.workspace.online_endpoints.filter(
        deployments__placement__compute=compute.name, deployments__placement__compute_type=compute.type,
    ).values_list("name", "deployments__name"))
    if placed:
        named = ", ".join(f"{endpoint}/{deployment}" for endpoint, deployment in placed)
        raise Conflict(f"Compute '{compute.name}' runs the managed deployment(s) {named}; delete them first.")


@transaction.atomic
def compute_recheck(*, user, compute: ComputeTarget) -> ComputeTarget:
    """Run a compute's checks again now (a Kubernetes attachment: reachability, namespace, rights, CRD; then its nodes)."""
    if compute.provisioning_state == ProvisioningState.DELETING:
        raise Conflict(f"Compute '{compute.name}' is being deleted.")
    compute.generation += 1
    compute.provisioning_state = ProvisioningState.UPDATING
    compute.save(update_fields=["generation", "provisioning_state", "updated_at"])
    audit_record(
        actor=user, action=AuditAction.ACTION, verb="recheck", target_type="compute", target_name=compute.name,
        workspace=compute.workspace,
    )
    _enqueue(compute)  # a check that passes syncs the cluster (nodes, imports) right after
    return compute


@transaction.atomic
def compute_confirm_host_key(*, user, compute: ComputeTarget, fingerprint: str) -> ComputeTarget:
    """Pin the host key an SSH host presented (first contact, or a reinstalled host's new key) once an admin compared
    its fingerprint with the host's own; the check then logs in and probes."""
    if compute.type not in SSH_TYPES:
        raise Conflict(f"Compute '{compute.name}' is a {compute.type} compute; only SSH hosts have a host key to confirm.")
    if compute.provisioning_state == ProvisioningState.DELETING:
        raise Conflict(f"Compute '{compute.name}' is being deleted.")
    waiting = _key_waiting(compute)
    if waiting is None:
        raise Conflict(f"Compute '{compute.name}' has no host key waiting for confirmation.")
    presented = hostkeys.fingerprint(waiting)
    if not isinstance(fingerprint, str) or fingerprint.strip() != presented:
        raise BadRequest(f"The host presented {presented}, not the fingerprint given; compare it with the host's own "
                         "(ssh-keygen -lf) and confirm the one the host has.", code="HostKeyMismatch", target="fingerprint")
    pinned = compute.properties.get("host_key") if compute.properties.get("host_key_confirmed") else None
    properties = {key: value for key, value in compute.properties.items() if key != "presented_host_key"}
    compute.properties = {**properties, "host_key": waiting, "host_key_confirmed": True, "host_key_fingerprint": presented}
    compute.generation += 1
    compute.provisioning_state = ProvisioningState.UPDATING
    compute.save(update_fields=["properties", "generation", "provisioning_state", "updated_at"])
    audit_record(
        actor=user, action=AuditAction.ACTION, verb="confirm-host-key", target_type="compute", target_name=compute.name,
        workspace=compute.workspace,
        changes={"host_key_fingerprint": [hostkeys.fingerprint(pinned) if pinned else None, presented]},
    )
    _enqueue(compute)
    return compute


def _key_waiting(compute: ComputeTarget) -> str | None:
    """The host key an admin may confirm: a new one the host presented instead of the pinned one, else the one
    recorded on first contact while unconfirmed; None when nothing waits."""
    properties = compute.properties
    if properties.get("presented_host_key"):
        return properties["presented_host_key"]
    if properties.get("host_key") and not properties.get("host_key_confirmed"):
        return properties["host_key"]
    return None


def _enqueue_instance_type(record: InstanceType, compute: ComputeTarget) -> None:
    """Reconcile after commit with the credentials of the attachment that asked (`compute`)."""
    from .tasks import reconcile_instance_type

    enqueue_on_commit(reconcile_instance_type, record.pk, compute.pk)


def cluster_of(compute: ComputeTarget) -> Cluster | None:
    """The cluster behind a Kubernetes compute, None until its credentials passed the checks; other types have none."""
    if compute.type != ComputeType.KUBERNETES:
        raise BadRequest(
            f"Compute '{compute.name}' is of type {compute.type}; instance types belong to kubernetes computes.",
            code="UnsupportedComputeType", target="compute",
        )
    return compute.cluster if compute.cluster_id else None


def proven_cluster_of(compute: ComputeTarget) -> Cluster:
    """The cluster, for a change: refused while the attachment's own credentials have not passed the checks."""
    cluster = cluster_of(compute)
    if cluster is None:
        raise Conflict(
            f"Compute '{compute.name}' has not passed its checks against the cluster "
            f"(it is {compute.provisioning_state}): its instance types can be changed once its own credentials pass."
        )
    return cluster


def _shapes(compute: ComputeTarget, body: object) -> list[shapes.Shape]:
    try:
        return shapes.parse_body(body, compute.properties.get("node_selector") or {})
    except SpecErrors as exc:
        details = [{"target": path, "message": message} for path, message in exc.errors]
        message = f"{details[0]['target']}: {details[0]['message']}" if details[0]["target"] else details[0]["message"]
        raise BadRequest(message, code="InvalidInstanceType", details=details) from None


def _audit_instance_type(user, compute: ComputeTarget, action: str, name: str, changes: dict | None = None) -> None:
    audit_record(
        actor=user, action=action, target_type="instancetype", target_name=f"{compute.name}/{name}",
        workspace=compute.workspace, changes=changes,
    )


@transaction.atomic
def instance_types_create(*, user, compute: ComputeTarget, body: object) -> list[InstanceType]:
    """Create one instance type or a whole InstanceTypeList: all or nothing."""
    cluster = proven_cluster_of(compute)
    new = _shapes(compute, body)
    taken = sorted(InstanceType.objects.filter(cluster=cluster, name__in=[s.name for s in new]).values_list("name", flat=True))
    if taken:
        raise Conflict(f"Instance type(s) {', '.join(taken)} already exist on this cluster; use PUT or PATCH to change them.")
    records = [InstanceType.objects.create(cluster=cluster, name=s.name, created_by=user, **InstanceType.shape_fields(s)) for s in new]
    for record in records:
        _audit_instance_type(user, compute, AuditAction.CREATE, record.name, changed_fields({}, InstanceType.shape_fields(record.shape())))
        _enqueue_instance_type(record, compute)
    return records


def _merged(current: dict, patch: dict) -> dict:
    """JSON merge patch (RFC 7386): maps merge, null removes."""
    result = dict(current)
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _merged(result[key], value)
        else:
            result[key] = value
    return result


@transaction.atomic
def instance_type_update(*, user, compute: ComputeTarget, name: str, body: object, partial: bool) -> InstanceType:
    """Replace (PUT) or merge-patch (PATCH) an instance type; editing an imported one adopts it; PUT may create."""
    cluster = proven_cluster_of(compute)
    record = InstanceType.objects.select_for_update().filter(cluster=cluster, name=name).first()
    if not isinstance(body, dict):
        raise BadRequest("The body must be a mapping.", code="InvalidInstanceType", target="")
    if record is None and (partial and name != shapes.DEFAULT_NAME):
        raise NotFound(f"Instance type '{name}' does not exist on this cluster.")
    if record is not None and record.provisioning_state == ProvisioningState.DELETING:
        raise Conflict(f"Instance type '{name}' is being deleted.")
    base = _body_of_shape(record.shape()) if record else {"name": name, "resources": shapes.DEFAULT_SHAPE.resources()}
    cr_form = "metadata" in body or "spec" in body  # a CR names itself in metadata; a top-level name is refused there
    if partial:
        document = _merged(base, _flat_patch(body) if cr_form else body)
    else:
        document = body if cr_form else {**body, "name": body.get("name", name)}
    (shape,) = _shapes(compute, document)
    if shape.name != name:
        raise BadRequest("The name of an instance type cannot be changed.", code="ImmutableField", target="name")
    if record is None:
        return instance_types_create(user=user, compute=compute, body=_body_of_shape(shape))[0]
    before = InstanceType.shape_fields(record.shape())
    changes = changed_fields(before, InstanceType.shape_fields(shape))
    adopt = record.source == InstanceType.Source.CLUSTER
    if not changes and not adopt:
        return record
    for key, value in InstanceType.shape_fields(shape).items():
        setattr(record, key, value)
    record.source = InstanceType.Source.DOCKYARD
    record.generation += 1
    record.provisioning_state = ProvisioningState.UPDATING
    record.save()
    _audit_instance_type(user, compute, AuditAction.UPDATE, name, changes)
    _enqueue_instance_type(record, compute)
    return record


def _flat_patch(body: dict) -> dict:
    """A merge patch written in CR form, as the flat fields it changes."""
    metadata, spec = body.get("metadata"), body.get("spec")
    if not isinstance(metadata or {}, dict) or not isinstance(spec or {}, dict):
        raise BadRequest("metadata and spec must be mappings.", code="InvalidInstanceType", target="spec")
    return {**({"name": metadata["name"]} if metadata and "name" in metadata else {}), **(spec or {})}


def _body_of_shape(shape: shapes.Shape) -> dict:
    return {"name": shape.name, "nodeSelector": shape.node_selector, "resources": shape.resources()}


@transaction.atomic
def instance_type_delete(*, user, compute: ComputeTarget, name: str) -> InstanceType:
    """Mark an instance type Deleting; reconcile deletes its CR, then the record (the built-in default returns)."""
    cluster = proven_cluster_of(compute)
    record = InstanceType.objects.select_for_update().filter(cluster=cluster, name=name).first()
    if record is None:
        if name == shapes.DEFAULT_NAME:
            raise BadRequest("The built-in defaultinstancetype cannot be deleted; create one with this name to override it.",
                             code="BuiltInInstanceType", target="name")
        raise NotFound(f"Instance type '{name}' does not exist on this cluster.")
    if record.provisioning_state != ProvisioningState.DELETING:
        record.provisioning_state = ProvisioningState.DELETING
        record.generation += 1
        record.save(update_fields=["provisioning_state", "generation", "updated_at"])
        _audit_instance_type(user, compute, AuditAction.DELETE, name)
    _enqueue_instance_type(record, compute)
    return record


@transaction.atomic
def compute_instance_action(*, user, compute: ComputeTarget, action: str, cause: str = StopCause.USER) -> ComputeTarget:
    """Start, stop or restart a compute instance: ask for it on the record, bump the generation, reconcile after commit."""
    if instances.request_action(user=user, compute=compute, action=action, cause=cause):
        _enqueue(compute)
    return compute


def instance_open_allowed(user, compute: ComputeTarget) -> bool:
    """Whether `user` may open the instance's servers (JupyterLab, VS Code, terminal): its assigned user or staff."""
    return instances.open_allowed(user, compute)
