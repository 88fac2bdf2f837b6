"""Changes to compute records: validate, save, bump generation, audit, enqueue reconcile after commit."""
from functools import partial

from django.db import transaction
from rest_framework.exceptions import ValidationError

from controlplane.api import BadRequest, Conflict
from workspaces.audit import audit_record, changed_fields
from workspaces.choices import AuditAction
from workspaces.models import Workspace

from .choices import ProvisioningState
from .models import ComputeTarget
from .serializers import COMMON_FIELDS, serializer_for

EDITABLE_COMMON = ("description", "tags")


def _validated(serializer_class, data: dict, stored_secrets: dict | None = None) -> tuple[dict, dict, dict]:
    """Run the type's serializer; split the result into common fields, properties and secrets."""
    serializer = serializer_class(data=data, context={"secrets": stored_secrets or {}})
    serializer.is_valid(raise_exception=True)
    values = dict(serializer.validated_data)
    secrets = {key: values.pop(key) for key in serializer_class.secret_fields if key in values}
    common = {key: values.pop(key) for key in list(values) if key in COMMON_FIELDS}
    return common, values, secrets


def _enqueue(compute: ComputeTarget) -> None:
    """Ask for a reconcile once the change is committed; if the broker is down the resync catches up."""
    from .tasks import reconcile_compute

    transaction.on_commit(partial(reconcile_compute.delay, compute.pk), robust=True)


@transaction.atomic
def compute_create(*, user, workspace: Workspace, data: dict) -> ComputeTarget:
    """Create a compute record of any type; reconcile brings it to Succeeded or Failed."""
    if not isinstance(data, dict):
        raise ValidationError({"non_field_errors": ["The body must be a mapping of fields."]})
    serializer_class = serializer_for(data.get("type"))
    common, properties, secrets = _validated(serializer_class, data)
    existing = ComputeTarget.objects.filter(workspace=workspace, name=common["name"]).first()
    if existing:
        being = " and is being deleted" if existing.provisioning_state == ProvisioningState.DELETING else ""
        raise Conflict(f"A compute named '{common['name']}' already exists in workspace '{workspace.name}'{being}.")
    compute = ComputeTarget(
        workspace=workspace, name=common["name"], type=serializer_class.compute_type,
        description=common.get("description", ""), tags=common.get("tags", {}),
        properties=properties, created_by=user,
    )
    compute.secrets = {key: value for key, value in secrets.items() if value}
    compute.save()
    audit_record(
        actor=user, action=AuditAction.CREATE, target_type="compute", target_name=compute.name, workspace=workspace,
        changes=changed_fields({}, {**properties, **secrets, "type": compute.type}, frozenset(secrets)),
    )
    _enqueue(compute)
    return compute


def _stored_body(compute: ComputeTarget) -> dict:
    return {**compute.properties, "name": compute.name, "type": compute.type, "description": compute.description, "tags": compute.tags}


@transaction.atomic
def compute_update(*, user, compute: ComputeTarget, patch: dict) -> ComputeTarget:
    """Apply a partial update; name and type are fixed, omitted secrets are kept."""
    if not isinstance(patch, dict):
        raise ValidationError({"non_field_errors": ["The body must be a mapping of fields."]})
    if compute.provisioning_state == ProvisioningState.DELETING:
        raise Conflict(f"Compute '{compute.name}' is being deleted.")
    for fixed in ("name", "type"):
        if fixed in patch and patch[fixed] != getattr(compute, fixed):
            raise BadRequest(f"The {fixed} of a compute cannot be changed.", code="ImmutableField", target=fixed)
    serializer_class = serializer_for(compute.type)
    stored_secrets = compute.secrets
    body = serializer_class.merge_for_update(_stored_body(compute), patch)
    common, properties, secrets = _validated(serializer_class, body, stored_secrets)
    before = {**compute.properties, **{key: getattr(compute, key) for key in EDITABLE_COMMON}}
    new_secrets = {**stored_secrets, **{key: value for key, value in secrets.items() if value}}
    compute.properties = properties
    for key in EDITABLE_COMMON:
        setattr(compute, key, common.get(key, getattr(compute, key)))
    changes = changed_fields(before, {**properties, **{key: getattr(compute, key) for key in EDITABLE_COMMON}})
    changes.update(changed_fields(stored_secrets, new_secrets, frozenset(new_secrets)))
    if not changes:
        return compute
    compute.secrets = new_secrets
    compute.generation += 1
    compute.provisioning_state = ProvisioningState.UPDATING
    compute.save()
    audit_record(
        actor=user, action=AuditAction.UPDATE, target_type="compute", target_name=compute.name,
        workspace=compute.workspace, changes=changes,
    )
    _enqueue(compute)
    return compute


@transaction.atomic
def compute_delete(*, user, compute: ComputeTarget) -> ComputeTarget:
    """Mark a compute Deleting; reconcile removes what it owns and then the row (a finalizer)."""
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
