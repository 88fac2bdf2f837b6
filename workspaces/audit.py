"""Recording audit events: field names and non-secret values only."""
from .models import AuditEvent, Workspace

SECRET_MARK = "(secret changed)"


def changed_fields(before: dict, after: dict, secret_fields: frozenset = frozenset()) -> dict:
    """{field: [old, new]} for fields whose value changed; secrets are named, never shown."""
    changes = {}
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        changes[key] = SECRET_MARK if key in secret_fields else [old, new]
    return changes


def audit_record(
    *, actor, action: str, target_type: str, target_name: str, workspace: Workspace | None = None,
    changes: dict | None = None, verb: str = "",
) -> AuditEvent:
    """Append one audit event."""
    return AuditEvent.objects.create(
        workspace=workspace,
        actor=actor if actor and actor.is_authenticated else None,
        actor_name=getattr(actor, "username", "") or "system",
        action=action,
        verb=verb,
        target_type=target_type,
        target_name=target_name,
        changes=changes or {},
    )
