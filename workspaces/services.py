"""Changes to workspaces, memberships and tokens; each one is audited."""
import secrets
from datetime import datetime, timedelta

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from rest_framework.exceptions import ValidationError

from controlplane.api import BadRequest, Conflict

from .audit import audit_record, changed_fields
from .authentication import hash_token
from .choices import AuditAction, Role
from .models import ApiToken, Membership, Workspace

WORKSPACE_FIELDS = ("display_name", "description", "tags")
TOKEN_PREFIX = "dy_"


@transaction.atomic
def workspace_create(*, user, name: str, display_name: str = "", description: str = "", tags: dict | None = None) -> Workspace:
    """Create a workspace; its creator becomes its first owner."""
    if Workspace.objects.filter(name=name).exists():
        raise Conflict(f"A workspace named '{name}' already exists.")
    workspace = Workspace.objects.create(
        name=name, display_name=display_name or name, description=description, tags=tags or {}, created_by=user
    )
    Membership.objects.create(workspace=workspace, user=user, role=Role.OWNER)
    audit_record(actor=user, action=AuditAction.CREATE, target_type="workspace", target_name=name, workspace=workspace)
    return workspace


@transaction.atomic
def workspace_update(*, user, workspace: Workspace, **fields) -> Workspace:
    """Change a workspace's display fields."""
    before = {key: getattr(workspace, key) for key in WORKSPACE_FIELDS}
    for key, value in fields.items():
        if key in WORKSPACE_FIELDS:
            setattr(workspace, key, value)
    workspace.save()
    changes = changed_fields(before, {key: getattr(workspace, key) for key in WORKSPACE_FIELDS})
    if changes:
        audit_record(
            actor=user, action=AuditAction.UPDATE, target_type="workspace", target_name=workspace.name,
            workspace=workspace, changes=changes,
        )
    return workspace


@transaction.atomic
def workspace_delete(*, user, workspace: Workspace) -> None:
    """Delete an empty workspace; one that still has compute must be emptied first."""
    if workspace.computes.exists():
        raise Conflict(f"Workspace '{workspace.name}' still has compute targets; delete them first.")
    if workspace.jobs.exists() or workspace.online_endpoints.exists():
        raise Conflict(f"Workspace '{workspace.name}' still has jobs or online endpoints; delete them first.")
    audit_record(actor=user, action=AuditAction.DELETE, target_type="workspace", target_name=workspace.name)
    workspace.delete()


def _user_named(username: str):
    user = get_user_model().objects.filter(username=username, is_active=True).first()
    if user is None:
        raise ValidationError({"user": [f"There is no active user named '{username}'."]})
    return user


@transaction.atomic
def member_add(*, actor, workspace: Workspace, username: str, role: str) -> Membership:
    """Give a user a role in the workspace."""
    user = _user_named(username)
    if Membership.objects.filter(workspace=workspace, user=user).exists():
        raise Conflict(f"'{username}' is already a member of '{workspace.name}'.")
    membership = Membership.objects.create(workspace=workspace, user=user, role=role)
    audit_record(
        actor=actor, action=AuditAction.CREATE, target_type="member", target_name=username,
        workspace=workspace, changes={"role": [None, role]},
    )
    return membership


def _other_owners(membership: Membership) -> bool:
    return (
        Membership.objects.select_for_update()
        .filter(workspace=membership.workspace, role=Role.OWNER)
        .exclude(pk=membership.pk)
        .exists()
    )


@transaction.atomic
def member_update(*, actor, membership: Membership, role: str) -> Membership:
    """Change a member's role; the last owner cannot step down."""
    if membership.role == Role.OWNER and role != Role.OWNER and not _other_owners(membership):
        raise BadRequest("The last owner cannot be demoted; make someone else an owner first.", code="LastOwner", target="role")
    old = membership.role
    membership.role = role
    membership.save(update_fields=["role", "updated_at"])
    if old != role:
        audit_record(
            actor=actor, action=AuditAction.UPDATE, target_type="member", target_name=membership.user.username,
            workspace=membership.workspace, changes={"role": [old, role]},
        )
    return membership


@transaction.atomic
def member_remove(*, actor, membership: Membership) -> None:
    """Remove a member; the last owner cannot be removed."""
    if membership.role == Role.OWNER and not _other_owners(membership):
        raise BadRequest("The last owner cannot be removed; make someone else an owner first.", code="LastOwner")
    audit_record(
        actor=actor, action=AuditAction.DELETE, target_type="member", target_name=membership.user.username,
        workspace=membership.workspace, changes={"role": [membership.role, None]},
    )
    membership.delete()


def token_create(*, user, name: str = "", expires_at: datetime | None = None, days: int | None = None) -> tuple[ApiToken, str]:
    """Issue a token; the raw value is returned once and only its hash is stored."""
    from django.conf import settings

    if expires_at is None:
        expires_at = timezone.now() + timedelta(days=days or settings.API_TOKEN_DEFAULT_DAYS)
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(user=user, name=name, prefix=raw[:10], key_hash=hash_token(raw), expires_at=expires_at)
    audit_record(actor=user, action=AuditAction.CREATE, target_type="token", target_name=token.prefix)
    return token, raw


def token_revoke(*, user, token: ApiToken) -> None:
    """Revoke (delete) a token."""
    audit_record(actor=user, action=AuditAction.DELETE, target_type="token", target_name=token.prefix)
    token.delete()
