"""Who may do what in a workspace: the one place the API and the studio ask."""
from django.conf import settings
from django.db.models import OuterRef, Subquery
from django.http import Http404
from rest_framework.exceptions import PermissionDenied

from .choices import ROLE_RANK, Role
from .models import Membership, Workspace

ACTIONS = {
    "read": Role.READER,
    "use": Role.CONTRIBUTOR,  # submit jobs, deploy endpoints, use compute
    "manage": Role.OWNER,  # members, compute, workspace settings
}


def role_of(user, workspace: Workspace) -> str | None:
    """The user's role in the workspace (staff count as owners), or None."""
    if user.is_staff:
        return Role.OWNER
    cached = getattr(workspace, "_role_cache", {})
    if user.pk not in cached:
        cached[user.pk] = Membership.objects.filter(workspace=workspace, user=user).values_list("role", flat=True).first()
        workspace._role_cache = cached
    return cached[user.pk]


def can(user, workspace: Workspace, action: str) -> bool:
    role = role_of(user, workspace)
    return role is not None and ROLE_RANK[role] >= ROLE_RANK[ACTIONS[action]]


def workspace_for(user, name: str) -> Workspace:
    """The workspace if the user may see it; otherwise 404, so names don't leak."""
    # The user's role comes in the same query: every workspace-scoped request asks for it next.
    role = Membership.objects.filter(workspace=OuterRef("pk"), user=user).values("role")[:1]
    workspace = Workspace.objects.filter(name=name).annotate(member_role=Subquery(role)).first()
    if workspace is not None:
        workspace._role_cache = {user.pk: workspace.member_role}
    if workspace is None or role_of(user, workspace) is None:
        raise Http404
    return workspace


def require(user, workspace: Workspace, action: str) -> None:
    if not can(user, workspace, action):
        needed = ACTIONS[action]
        raise PermissionDenied(f"This needs the {needed} role in workspace '{workspace.name}'.")


def permissions_for(user, workspace: Workspace) -> dict[str, bool]:
    """Flags for templates: which buttons to show."""
    return {action: can(user, workspace, action) for action in ACTIONS}


def may_create_workspaces(user) -> bool:
    """DOCKYARD_WORKSPACE_CREATORS: `staff` (production default) or `anyone` signed in."""
    return user.is_staff or settings.DOCKYARD_WORKSPACE_CREATORS == "anyone"


def require_workspace_creator(user) -> None:
    if not may_create_workspaces(user):
        raise PermissionDenied("Only staff can create workspaces on this server (DOCKYARD_WORKSPACE_CREATORS).")


def local_compute_allowed(workspace: Workspace) -> bool:
    """Whether `compute: local` may be used here: the server allows it and staff enabled it for the workspace."""
    return settings.DOCKYARD_LOCAL_COMPUTE and workspace.local_compute_enabled


def local_compute_refusal(workspace: Workspace) -> str | None:
    """Why `compute: local` is refused in this workspace, in a sentence; None when it is allowed."""
    if not settings.DOCKYARD_LOCAL_COMPUTE:
        return "The local compute is turned off on this server (DOCKYARD_LOCAL_COMPUTE)."
    if not workspace.local_compute_enabled:
        return f"Local compute is not enabled for workspace '{workspace.name}'; a staff user can enable it."
    return None
