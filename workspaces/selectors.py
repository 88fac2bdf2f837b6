"""Read paths for workspaces, members, tokens and events."""
from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
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


def workspace_visible(*, user, name: str) -> Workspace | None:
    """The workspace called `name` if the user may see it, else None."""
    return workspace_list(user=user).filter(name=name).first()


def workspace_card_list(*, user) -> QuerySet[Workspace]:
    """The user's workspaces with their role and how many members and computes each has, in one query."""
    role = Membership.objects.filter(workspace=OuterRef("pk"), user=user).values("role")[:1]
    # Counted in subqueries: workspace_list joins memberships for non-staff, which would skew a plain Count.
    members = Membership.objects.filter(workspace=OuterRef("pk")).order_by().values("workspace")
    members = members.annotate(n=Count("pk")).values("n")
    return workspace_list(user=user).annotate(
        my_role=Subquery(role),
        member_count=Coalesce(Subquery(members, output_field=IntegerField()), 0),
        compute_count=Count("computes", distinct=True),
    )


def member_list(*, workspace: Workspace) -> QuerySet[Membership]:
    return Membership.objects.filter(workspace=workspace).select_related("user")


def token_none() -> QuerySet[ApiToken]:
    """No tokens: what schema generation lists (it has no user and no {ws})."""
    return ApiToken.objects.none()


def member_get(*, workspace: Workspace, username: str) -> Membership | None:
    return member_list(workspace=workspace).filter(user__username=username).first()


def token_list(*, user) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user)


def event_none() -> QuerySet[AuditEvent]:
    """No audit events: what schema generation lists (it has no user and no {ws})."""
    return AuditEvent.objects.none()


def token_get(*, user, token_id: int) -> ApiToken | None:
    return token_list(user=user).filter(pk=token_id).first()


def event_list(*, workspace: Workspace) -> QuerySet[AuditEvent]:
    return AuditEvent.objects.filter(workspace=workspace)


def event_page(*, workspace: Workspace, before: str, size: int) -> list[AuditEvent]:
    """Up to `size` events, newest first, listed after the one with pk `before` (from the newest when it is none)."""
    events = event_list(workspace=workspace)
    anchor = events.filter(pk=before).first() if before.isdigit() else None
    if anchor is not None:
        events = events.filter(Q(created_at__lt=anchor.created_at) | Q(created_at=anchor.created_at, pk__lt=anchor.pk))
    return list(events[:size])


def invitation_open(*, raw: str, lock: bool = False) -> Invitation | None:
    """The unused, unexpired invitation of an active user whose token is `raw` (row-locked when `lock`), or None."""
    invitations = Invitation.objects.select_for_update() if lock else Invitation.objects.all()
    return invitations.select_related("user").filter(
        key_hash=hash_token(raw), used_at__isnull=True, expires_at__gt=timezone.now(), user__is_active=True,
    ).first()
