"""Writing observed state: only the fields that changed, so a steady resync writes nothing."""
from django.db import models


def set_status(record: models.Model, state: str, errors: list[dict], **observed) -> list[str]:
    """Set provisioning state/errors, observed_generation and any extra observed fields in memory; returns the changed ones."""
    values = {"provisioning_state": state, "provisioning_errors": errors, "observed_generation": record.generation, **observed}
    changed = [key for key, value in values.items() if getattr(record, key) != value]
    for key in changed:
        setattr(record, key, values[key])
    return changed


def record_status(record: models.Model, state: str, errors: list[dict], **observed) -> bool:
    """Set the status as `set_status` does and save only what changed."""
    changed = set_status(record, state, errors, **observed)
    if changed:
        record.save(update_fields=changed)
    return bool(changed)


def problem(code: str, message: str) -> dict:
    return {"code": code, "message": message}
