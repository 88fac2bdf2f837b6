"""scheduling.k8s.io/v1 PriorityClass: ValidatePriorityClass and ValidatePriorityClassUpdate, with their messages."""
from __future__ import annotations

from ..errors import FieldError, forbidden, invalid, not_supported

HIGHEST_USER_DEFINABLE = 1_000_000_000  # scheduling.HighestUserDefinablePriority
SYSTEM_CRITICAL = 2 * HIGHEST_USER_DEFINABLE  # scheduling.SystemCriticalPriority
SYSTEM_PREFIX = "system-"
# The built-in classes kube-apiserver creates at start (pkg/apis/scheduling/v1 helpers): name -> (value, description)
SYSTEM_CLASSES = {
    "system-node-critical": (SYSTEM_CRITICAL + 1000,
                             "Used for system critical pods that must not be moved from their current node."),
    "system-cluster-critical": (SYSTEM_CRITICAL, "Used for system critical pods that must run in the cluster, "
                                                 "but can be moved to another node if necessary."),
}
PREEMPTION_POLICIES = ["Never", "PreemptLowerPriority"]


def _known_system_class(name: str, value, global_default) -> str | None:
    """IsKnownSystemPriorityClass: None when known and matching, else its error."""
    if name not in SYSTEM_CLASSES:
        return f"{name} is not a known system priority class"
    if value != SYSTEM_CLASSES[name][0]:
        return f"value of {name} PriorityClass must be {SYSTEM_CLASSES[name][0]}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return None


def priority_class(obj: dict) -> list[FieldError]:
    """Reserved `system-` names, the user-definable ceiling, the preemption policy enum."""
    name = (obj.get("metadata") or {}).get("name") or ""
    value = obj.get("value", 0)
    errors = []
    if name.startswith(SYSTEM_PREFIX):
        error = _known_system_class(name, value, obj.get("globalDefault", False))
        if error:
            errors.append(forbidden("metadata.name", f"priority class names with '{SYSTEM_PREFIX}' prefix are "
                                                     f"reserved for system use only. error: {error}"))
    elif isinstance(value, int) and value > HIGHEST_USER_DEFINABLE:
        errors.append(forbidden("value", f"maximum allowed value of a user defined priority is "
                                         f"{HIGHEST_USER_DEFINABLE}"))
    policy = obj.get("preemptionPolicy")
    if policy is not None and policy not in PREEMPTION_POLICIES:
        errors.append(not_supported("preemptionPolicy", policy, PREEMPTION_POLICIES))
    return errors


def priority_class_update(new: dict, old: dict) -> list[FieldError]:
    """value and preemptionPolicy are immutable."""
    errors = []
    if new.get("value") != old.get("value"):
        errors.append(forbidden("value", "may not be changed in an update."))
    if new.get("preemptionPolicy") != old.get("preemptionPolicy"):
        errors.append(invalid("preemptionPolicy", new.get("preemptionPolicy"), "field is immutable"))
    return errors
