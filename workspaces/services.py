"""Changes to workspaces, memberships and tokens; each one is audited."""
import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.cache import cache
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.utils import timezone

from controlplane.api import BadRequest, Conflict, PermissionDenied, Throttled, ValidationError

from . import access, selectors
from .audit import audit_record, changed_fields
from .authentication import hash_token
from .choices import AuditAction, Role
from .models import ApiToken, Invitation, Membership, Workspace

WORKSPACE_FIELDS = ("display_name", "description", "tags")
LOCAL_COMPUTE_FIELDS = ("local_compute_enabled", "local_network_enabled")
TOKEN_PREFIX = "dy_"
INVITATION_GONE = "This link cannot be used: it was used already, has expired, or never existed. Ask a staff user for a new one."


@transaction.atomic
def workspace_create(*, user, name: str, display_name: str = "", description: str = "", tags: dict | None = None) -> Workspace:
    """Create a workspace; its creator becomes its first owner (who may create is DOCKYARD_WORKSPACE_CREATORS)."""
    access.require_workspace_creator(user)
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
    """Change a workspace's display fields; its local-compute flags only through staff (unchanged values pass)."""
    wanted = {key: fields[key] for key in LOCAL_COMPUTE_FIELDS if key in fields}
    if any(value != getattr(workspace, key) for key, value in wanted.items()):
        workspace_local_compute_set(
            user=user, workspace=workspace, enabled=wanted.get("local_compute_enabled", workspace.local_compute_enabled),
            network=wanted.get("local_network_enabled"),
        )
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
def workspace_local_compute_set(*, user, workspace: Workspace, enabled: bool, network: bool | None = None) -> Workspace:
    """Staff only: let the workspace run sandboxed `compute: local` jobs and deployments (and give them network)."""
    if not user.is_staff:
        raise PermissionDenied("Only staff can enable or disable local compute for a workspace.")
    if enabled and not settings.DOCKYARD_LOCAL_COMPUTE:
        raise BadRequest("The local compute is turned off on this server (DOCKYARD_LOCAL_COMPUTE).",
                         code="LocalComputeOff", target="allow_local_compute")
    before = {key: getattr(workspace, key) for key in LOCAL_COMPUTE_FIELDS}
    workspace.local_compute_enabled = enabled
    if network is not None:
        workspace.local_network_enabled = network
    workspace.save(update_fields=[*LOCAL_COMPUTE_FIELDS, "updated_at"])
    changes = changed_fields(before, {key: getattr(workspace, key) for key in LOCAL_COMPUTE_FIELDS})
    if changes:
        audit_record(
            actor=user, action=AuditAction.UPDATE, verb="local-compute", target_type="workspace",
            target_name=workspace.name, workspace=workspace, changes=changes,
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


MISS_WINDOW_SECONDS = 3600


def _misses_key(actor) -> str:
    return f"dockyard:member-add-misses:{actor.pk}"


def _user_named(actor, username: str):
    """The active user to add; one answer for a name nobody has and for an account that cannot be added.

    Which names exist is not an owner's to learn by trying: misses are counted per actor, and past
    DOCKYARD_MEMBER_ADD_MISSES_PER_HOUR every add is refused with 429 until the hour is over.
    """
    if actor.is_staff:  # staff see every account anyway, and can create the missing one
        return _user_named_for_staff(username)
    key = _misses_key(actor)
    if (cache.get(key) or 0) >= settings.DOCKYARD_MEMBER_ADD_MISSES_PER_HOUR:
        raise Throttled(detail="Too many adds named no addable user; try again later.")
    user = get_user_model().objects.filter(username=username, is_active=True).first()
    if user is None:
        cache.add(key, 0, timeout=MISS_WINDOW_SECONDS)
        cache.incr(key)
        raise ValidationError({"user": [f"'{username}' cannot be added: there is no active user by that name; "
                                        "ask a staff user to create the account."]})
    return user


def _user_named_for_staff(username: str):
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ValidationError({"user": [f"There is no user named '{username}': create the account first."]})
    if not user.is_active:
        raise ValidationError({"user": [f"'{username}' is deactivated: activate the account first."]})
    return user


@transaction.atomic
def member_add(*, actor, workspace: Workspace, username: str, role: str) -> Membership:
    """Give a user a role in the workspace."""
    user = _user_named(actor, username)
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


def token_create(
    *, user, name: str = "", expires_at: datetime | None = None, days: int | None = None, parent: ApiToken | None = None
) -> tuple[ApiToken, str]:
    """Issue a token; the raw value is returned once and only its hash is stored.

    A token minted with another token (`parent`) expires no later than it and is revoked with it.
    """
    if expires_at is None:
        expires_at = timezone.now() + timedelta(days=days or settings.API_TOKEN_DEFAULT_DAYS)
    if parent is not None and parent.expires_at is not None:
        expires_at = min(expires_at, parent.expires_at)
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, name=name, prefix=raw[:10], key_hash=hash_token(raw), expires_at=expires_at, parent=parent
    )
    audit_record(actor=user, action=AuditAction.CREATE, target_type="token", target_name=token.prefix)
    return token, raw


def _descendants(token: ApiToken) -> list[ApiToken]:
    """Tokens minted from this one, from theirs, and so on (one query per generation)."""
    found, generation = [], [token.pk]
    while generation:
        children = list(ApiToken.objects.filter(parent_id__in=generation))
        found += children
        generation = [child.pk for child in children]
    return found


@transaction.atomic
def token_revoke(*, user, token: ApiToken) -> None:
    """Revoke (delete) a token and every token minted from it, transitively."""
    for revoked in [token, *_descendants(token)]:
        audit_record(actor=user, action=AuditAction.DELETE, target_type="token", target_name=revoked.prefix)
    token.delete()  # the parent foreign key cascades to the descendants


def _checked_user_fields(username: str, email: str) -> tuple[str, str]:
    """The new account's name and e-mail, stripped; ValidationError naming the field when one is not usable."""
    username, email = username.strip(), email.strip()
    errors = {}
    if not username:
        errors["username"] = ["Give the user a name."]
    elif len(username) > 150:
        errors["username"] = ["A user name has at most 150 characters."]
    elif username.strip(".") == "":
        # The name is a path segment of members/{user}/, where '.' and '..' mean something else.
        errors["username"] = ["A user name must hold something besides dots."]
    else:
        try:
            UnicodeUsernameValidator()(username)
        except DjangoValidationError as exc:
            errors["username"] = exc.messages
    if email:
        try:
            validate_email(email)
        except DjangoValidationError:
            errors["email"] = [f"'{email}' is not an e-mail address."]
    if errors:
        raise ValidationError(errors)
    return username, email


@transaction.atomic
def user_create(*, actor, username: str, email: str = "") -> tuple[object, Invitation, str]:
    """Create an account without a password, and the one-time link (raw token returned once) that sets it; staff only."""
    if not actor.is_staff:
        raise PermissionDenied("Only staff can create users.")
    username, email = _checked_user_fields(username, email)
    users = get_user_model().objects
    # Names differing only in letter case would be told apart by nobody signing in or adding a member.
    if users.filter(username__iexact=username).exists():
        raise Conflict(f"There is already a user named '{username}'.")
    user = users.create_user(username=username, email=email)  # no password given: an unusable one
    invitation, raw = invitation_create(actor=actor, user=user)
    audit_record(actor=actor, action=AuditAction.CREATE, target_type="user", target_name=username,
                 changes={"email": [None, email]} if email else {})
    return user, invitation, raw


def invitation_create(*, actor, user) -> tuple[Invitation, str]:
    """A one-time, expiring link for `user` to set a password; only the token's hash is stored."""
    raw = secrets.token_urlsafe(32)
    expires_at = timezone.now() + timedelta(hours=settings.DOCKYARD_INVITATION_HOURS)
    invitation = Invitation.objects.create(user=user, key_hash=hash_token(raw), created_by=actor, expires_at=expires_at)
    return invitation, raw


@transaction.atomic
def invitation_accept(*, raw: str, password: str):
    """Set the invited user's password and spend the link (and any other open link of theirs)."""
    invitation = selectors.invitation_open(raw=raw, lock=True)
    if invitation is None:
        raise ValidationError({"token": [INVITATION_GONE]})
    user = invitation.user
    try:
        validate_password(password, user)
    except DjangoValidationError as exc:
        raise ValidationError({"password": exc.messages}) from None
    user.set_password(password)
    user.save(update_fields=["password"])
    Invitation.objects.filter(user=user, used_at__isnull=True).update(used_at=timezone.now())
    audit_record(actor=user, action=AuditAction.ACTION, verb="set password", target_type="user", target_name=user.username)
    return user
