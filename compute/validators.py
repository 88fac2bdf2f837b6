"""Field rules for compute records (pure: no database, no network)."""
import re
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from croniter import croniter
from django.core.exceptions import ValidationError
from tzlocal.windows_tz import win_tz

from controlplane import addresses
from controlplane.kube import names
from controlplane.parsers import load_yaml

ISO_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$")
USERNAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
AZURE_RESOURCE_ID = re.compile(r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/[^/]+/.+$", re.IGNORECASE)
WEEK_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

# Windows time-zone name (any case) → IANA name, from CLDR's windowsZones table.
WINDOWS_TIME_ZONES = {windows.casefold(): iana for windows, iana in win_tz.items()}

IDLE_SHUTDOWN_MIN_MINUTES = 15
IDLE_SHUTDOWN_MAX_MINUTES = 3 * 24 * 60


def validate_namespace(value: str) -> None:
    if names.dns_label_problem(value):
        raise ValidationError(
            f"'{value}' is not a Kubernetes namespace name: lowercase letters, digits and '-', at most 63 characters."
        )


def validate_node_selector(selector: dict) -> None:
    for key, value in selector.items():
        problem = names.label_key_problem(key) or names.label_value_problem(value)
        if problem:
            raise ValidationError(problem)


def kubeconfig_summary(text: str, context: str | None) -> dict:
    """Check a kubeconfig's structure and return the chosen context, its cluster server and namespace."""
    try:
        config = load_yaml(text)
    except (yaml.YAMLError, ValueError):  # ValueError: NUL or a lone surrogate in a value
        raise ValidationError("The kubeconfig is not valid YAML.") from None
    if not isinstance(config, dict) or config.get("kind", "Config") != "Config":
        raise ValidationError("The kubeconfig must be a YAML mapping of kind Config.")
    contexts = {item.get("name"): item.get("context") or {} for item in _named_list(config, "contexts")}
    clusters = {item.get("name"): item.get("cluster") or {} for item in _named_list(config, "clusters")}
    users = {item.get("name"): item.get("user") or {} for item in _named_list(config, "users")}
    chosen = context or config.get("current-context")
    if not chosen:
        raise ValidationError("The kubeconfig has no current-context; name one in `context`.")
    if chosen not in contexts:
        raise ValidationError(f"Context '{chosen}' is not in the kubeconfig (it has: {', '.join(map(str, contexts)) or 'none'}).")
    cluster = clusters.get(contexts[chosen].get("cluster"))
    if cluster is None:
        raise ValidationError(f"Context '{chosen}' names a cluster that the kubeconfig does not define.")
    if contexts[chosen].get("user") not in users:
        raise ValidationError(f"Context '{chosen}' names a user that the kubeconfig does not define.")
    server = str(cluster.get("server") or "")
    try:
        addresses.parse_server_url(server, f"The server of context '{chosen}' ({server or 'none'})")
    except addresses.AddressRefused as exc:
        raise ValidationError(str(exc)) from None
    if isinstance(cluster, dict) and cluster.get("proxy-url"):
        raise ValidationError("The kubeconfig's cluster uses `proxy-url`; Dockyard connects to API servers directly.")
    _refuse_host_access(cluster, users[contexts[chosen]["user"]])
    return {"context": chosen, "server": server, "namespace": contexts[chosen].get("namespace")}


# Fields that make the worker run a program or read its own files: a workspace owner must not reach the host.
HOST_FIELDS = {
    "exec": "runs a command on Dockyard's worker", "auth-provider": "runs a cloud auth plugin on the worker",
    "tokenFile": "reads a file on the worker", "client-certificate": "reads a file on the worker",
    "client-key": "reads a file on the worker", "certificate-authority": "reads a file on the worker",
}


def _refuse_host_access(cluster: dict, user: dict) -> None:
    for section, values in (("cluster", cluster), ("user", user)):
        for key, why in HOST_FIELDS.items():
            if isinstance(values, dict) and values.get(key):
                inline = {"tokenFile": "token", "auth-provider": "token"}.get(key, f"{key}-data")
                raise ValidationError(
                    f"The kubeconfig's {section} uses `{key}`, which {why}; embed the credential instead ({inline})."
                )


def _named_list(config: dict, key: str) -> list[dict]:
    items = config.get(key) or []
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise ValidationError(f"The kubeconfig's `{key}` must be a list of named entries.")
    return items


def iso_duration_minutes(value: str) -> int:
    match = ISO_DURATION.match(value or "")
    if not match or value in ("P", "PT"):
        raise ValidationError(f"'{value}' is not an ISO-8601 duration such as PT30M or P1DT2H.")
    days, hours, minutes, seconds = (int(part or 0) for part in match.groups())
    if seconds % 60:
        raise ValidationError("The idle time must be a whole number of minutes.")
    return days * 1440 + hours * 60 + minutes + seconds // 60


def validate_idle_minutes(minutes: int) -> None:
    if not IDLE_SHUTDOWN_MIN_MINUTES <= minutes <= IDLE_SHUTDOWN_MAX_MINUTES:
        raise ValidationError(
            f"The idle time before shutdown must be between 15 minutes and 3 days (4320 minutes); got {minutes}."
        )


def iana_time_zone(name: str) -> str:
    """The IANA name of a time zone written as an IANA name or as a Windows one (Azure ML's list uses those).

    IANA names win (`UTC` stays `UTC`); Windows names, in any case, map through CLDR's windowsZones table as the
    tzlocal package ships it.
    """
    if not isinstance(name, str) or "\x00" in name:
        raise ValidationError("A time zone is a name such as UTC, Europe/Berlin or Pacific Standard Time.")
    try:
        ZoneInfo(name)
        return name
    except (ZoneInfoNotFoundError, ValueError, OSError):
        pass
    iana = WINDOWS_TIME_ZONES.get(name.casefold())
    if iana is None:
        raise ValidationError(
            f"'{name[:80]}' is not a known time zone; use an IANA name such as Europe/Berlin or a Windows name such as "
            "Pacific Standard Time."
        )
    return iana


def validate_time_zone(name: str) -> None:
    iana_time_zone(name)


PUBLIC_KEY_TYPES = ("ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
                    "sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com")
PUBLIC_KEY_BODY = re.compile(r"AAAA[A-Za-z0-9+/]+={0,3}")


def public_key_problem(value: str) -> str | None:
    """Why a value is not one OpenSSH public key line (`<type> <base64> [comment]`), or None."""
    if "PRIVATE KEY" in value:
        return "This is a private key; ssh_key_value takes the public key (the .pub file), and the private key stays with you."
    parts = value.strip().split(None, 2)
    if len(parts) < 2 or parts[0] not in PUBLIC_KEY_TYPES or not PUBLIC_KEY_BODY.fullmatch(parts[1]) or "\n" in value.strip():
        return "Must be one OpenSSH public key line such as 'ssh-ed25519 AAAA... user@host'."
    return None


def validate_cron(expression: str) -> None:
    if len(expression.split()) != 5 or not croniter.is_valid(expression):
        raise ValidationError(f"'{expression}' is not a cron expression of five fields (minute hour day month weekday).")


def validate_start_time(value: str) -> None:
    try:
        datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise ValidationError(f"'{value}' is not an ISO-8601 date and time such as 2026-03-10T21:00:00.") from None


def validate_resource_id(value: str) -> None:
    if not AZURE_RESOURCE_ID.match(value):
        raise ValidationError(
            "Must be an Azure resource ID: /subscriptions/<id>/resourceGroups/<group>/providers/<provider>/<type>/<name>."
        )
