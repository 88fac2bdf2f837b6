"""Rules of single compute fields, pure: each returns why a value is wrong, or None.

compute/validators.py raises Django's ValidationError with these sentences for the callers that want one.
"""
import re
from datetime import datetime

from controlplane.kube import names

ISO_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$")
USERNAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
AZURE_RESOURCE_ID = re.compile(r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/[^/]+/.+$", re.IGNORECASE)
WEEK_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
IDLE_SHUTDOWN_MIN_MINUTES = 15
IDLE_SHUTDOWN_MAX_MINUTES = 3 * 24 * 60
PUBLIC_KEY_TYPES = ("ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
                    "sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com")
PUBLIC_KEY_BODY = re.compile(r"AAAA[A-Za-z0-9+/]+={0,3}")
RESERVED_COMPUTE_NAMES = {"local"}


def compute_name_problem(value: str) -> str | None:
    """Azure ML's rule: 2–24 letters, digits or hyphens, starting with a letter; says what is wrong."""
    value = value or ""
    problems = []
    if not 2 <= len(value) <= 24:
        problems.append(f"must be 2 to 24 characters long (it has {len(value)})")
    if value and not re.match(r"[A-Za-z]", value[0]):
        problems.append("must start with a letter")
    bad = sorted(set(re.sub(r"[A-Za-z0-9-]", "", value)))
    if bad:
        problems.append("may contain only letters, digits and hyphens (found " + " ".join(repr(c) for c in bad) + ")")
    if problems:
        return f"Name '{value}' " + "; ".join(problems) + "."
    if value.lower() in RESERVED_COMPUTE_NAMES:
        return f"Name '{value}' is reserved for the built-in local compute."
    return None


def namespace_problem(value: str) -> str | None:
    if names.dns_label_problem(value):
        return f"'{value}' is not a Kubernetes namespace name: lowercase letters, digits and '-', at most 63 characters."
    return None


def node_selector_problem(selector: dict) -> str | None:
    for key, value in selector.items():
        problem = names.label_key_problem(key) or names.label_value_problem(value)
        if problem:
            return problem
    return None


class DurationProblem(ValueError):
    """An idle time that is no duration Dockyard takes; the message says why."""


def iso_duration_minutes(value: str) -> int:
    """The minutes of an ISO-8601 duration such as PT30M; DurationProblem when it is none or not whole minutes."""
    match = ISO_DURATION.match(value or "")
    if not match or value in ("P", "PT"):
        raise DurationProblem(f"'{value}' is not an ISO-8601 duration such as PT30M or P1DT2H.")
    days, hours, minutes, seconds = (int(part or 0) for part in match.groups())
    if seconds % 60:
        raise DurationProblem("The idle time must be a whole number of minutes.")
    return days * 1440 + hours * 60 + minutes + seconds // 60


def idle_minutes_problem(minutes: int) -> str | None:
    if not IDLE_SHUTDOWN_MIN_MINUTES <= minutes <= IDLE_SHUTDOWN_MAX_MINUTES:
        return f"The idle time before shutdown must be between 15 minutes and 3 days (4320 minutes); got {minutes}."
    return None


def public_key_problem(value: str) -> str | None:
    """Why a value is not one OpenSSH public key line (`<type> <base64> [comment]`), or None."""
    if "PRIVATE KEY" in value:
        return "This is a private key; ssh_key_value takes the public key (the .pub file), and the private key stays with you."
    parts = value.strip().split(None, 2)
    if len(parts) < 2 or parts[0] not in PUBLIC_KEY_TYPES or not PUBLIC_KEY_BODY.fullmatch(parts[1]) or "\n" in value.strip():
        return "Must be one OpenSSH public key line such as 'ssh-ed25519 AAAA... user@host'."
    return None


def start_time_problem(value: str) -> str | None:
    try:
        datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return f"'{value}' is not an ISO-8601 date and time such as 2026-03-10T21:00:00."
    return None


def resource_id_problem(value: str) -> str | None:
    if not AZURE_RESOURCE_ID.match(value):
        return "Must be an Azure resource ID: /subscriptions/<id>/resourceGroups/<group>/providers/<provider>/<type>/<name>."
    return None
