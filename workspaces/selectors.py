"""Read paths for workspaces, members, tokens and events."""
from django.db.models import OuterRef, QuerySet, Subquery, Value
from django.utils import timezone

from .authentication import hash_token
from .choices import Role
from .models import ApiToken, AuditEvent, Invitation, Membership, Workspace


def workspace_list(*, user) -> QuerySet[Workspace]:
    """Workspaces the user may see: all for staff, their memberships otherwise."""
    workspaces = Workspace.objects.all()
    return workspaces if user.is_staff else workspaces.filter(memberships__user=user)


def workspace_none() -> QuerySet[Workspace]:
    """No workspaces: what schema generation lists (it has no user and no {ws})."""
    return Workspace.objects.none()


def workspace_list_with_roles(*, user) -> QuerySet[Workspace]:
    """The workspaces `user` may see, each with `my_role`; staff count as owners everywhere (as access.role_of says)."""
    role = Value(Role.OWNER) if user.is_staff else Subquery(
        Membership.objects.filter(workspace=OuterRef("pk"), user=user).values("role")[:1]
    )
    return workspace_list(user=user).annotate(my_role=role).select_related("created_by")


def workspace_by_name(*, name: str) -> Workspace | None:
    """The workspace called `name`, or None (for answers that must not say whether it exists)."""
    return Workspace.objects.filter(name=name).first()


def member_none() -> QuerySet[Membership]:
    """No members: what schema generation lists (it has no user and no {ws})."""
    return Membership.objects.none()


def member_list(*, workspace: Workspace) -> QuerySet[Membership]:
    return Membership.objects.filter(workspace=workspace).select_related("user")


def token_none() -> QuerySet[ApiToken]:
    """No tokens: what schema generation lists (it has no user and no {ws})."""
    return ApiToken.objects.none()


def token_list(*, user) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user)


def event_none() -> QuerySet[AuditEvent]:
    """No audit events: what schema generation lists (it has no user and no {ws})."""
    return AuditEvent.objects.none()


def event_list(*, workspace: Workspace) -> QuerySet[AuditEvent]:
    return AuditEvent.objects.filter(workspace=workspace)


def invitation_open(*, raw: str, lock: bool = False) -> Invitation | None:
    """The unused, unexpired invitation of an active user whose token is `raw` (row-locked when `lock`), or None."""
    invitations = Invitation.objects.select_for_update() if lock else Invitation.objects.all()
    return invitations.select_related("user").filter(
        key_hash=hash_token(raw), used_at__isnull=True, expires_at__gt=timezone.now(), user__is_active=True,
    ).first()
