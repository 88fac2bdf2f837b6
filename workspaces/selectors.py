"""Read paths for workspaces, members, tokens and events."""
from django.db.models import QuerySet
from django.utils import timezone

from .authentication import hash_token
from .models import ApiToken, AuditEvent, Invitation, Membership, Workspace


def workspace_list(*, user) -> QuerySet[Workspace]:
    """Workspaces the user may see: all for staff, their memberships otherwise."""
    workspaces = Workspace.objects.all()
    return workspaces if user.is_staff else workspaces.filter(memberships__user=user)


def member_list(*, workspace: Workspace) -> QuerySet[Membership]:
    return Membership.objects.filter(workspace=workspace).select_related("user")


def token_list(*, user) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user)


def event_list(*, workspace: Workspace) -> QuerySet[AuditEvent]:
    return AuditEvent.objects.filter(workspace=workspace)


def invitation_open(*, raw: str, lock: bool = False) -> Invitation | None:
    """The unused, unexpired invitation of an active user whose token is `raw` (row-locked when `lock`), or None."""
    invitations = Invitation.objects.select_for_update() if lock else Invitation.objects.all()
    return invitations.select_related("user").filter(
        key_hash=hash_token(raw), used_at__isnull=True, expires_at__gt=timezone.now(), user__is_active=True,
    ).first()
