"""Read paths for workspaces, members, tokens and events."""
from django.db.models import QuerySet

from .models import ApiToken, AuditEvent, Membership, Workspace


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
