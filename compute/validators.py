"""Field rules for compute records as Django validators, and the Checks the pure body parser is given.

The rules themselves live in compute/spec/rules.py (pure); what needs the world (addresses resolved against the
network policy, YAML, the cron and time-zone grammars, Django's URL grammar, the clock) is here.
"""
import os
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from croniter import croniter
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.utils import timezone
from tzlocal.windows_tz import win_tz

from controlplane import addresses
from controlplane.parsers import load_yaml

from . import spec
from .spec import rules

# Windows time-zone name (any case) → IANA name, from CLDR's windowsZones table.
WINDOWS_TIME_ZONES = {windows.casefold(): iana for windows, iana in win_tz.items()}


def _raising(problem: str | None) -> None:
    if problem:
        raise ValidationError(problem)


def validate_namespace(value: str) -> None:
    _raising(rules.namespace_problem(value))


def validate_node_selector(selector: dict) -> None:
    _raising(rules.node_selector_problem(selector))


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
    try:
        return rules.iso_duration_minutes(value)
    except rules.DurationProblem as exc:
        raise ValidationError(str(exc)) from None


def validate_idle_minutes(minutes: int) -> None:
    _raising(rules.idle_minutes_problem(minutes))


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


def validate_cron(expression: str) -> None:
    if len(expression.split()) != 5 or not croniter.is_valid(expression):
        raise ValidationError(f"'{expression}' is not a cron expression of five fields (minute hour day month weekday).")


def validate_start_time(value: str) -> None:
    _raising(rules.start_time_problem(value))


def validate_resource_id(value: str) -> None:
    _raising(rules.resource_id_problem(value))


def _refused_as_spec(check):
    """A Django validator as a Checks entry: its ValidationError becomes spec.Refused with the same messages."""

    def run(*args):
        try:
            return check(*args)
        except ValidationError as exc:
            raise spec.Refused(*exc.messages) from None

    return run


def cluster_summary(kubeconfig: str, context: str | None) -> dict:
    """The kubeconfig's chosen context and server, the server's address checked now (the worker checks again)."""
    try:
        summary = kubeconfig_summary(kubeconfig, context)
        endpoint = addresses.parse_server_url(summary["server"])
        addresses.check_at_save(endpoint.host, endpoint.port)
    except ValidationError as exc:
        raise spec.Refused(*exc.messages) from None
    except addresses.AddressRefused as exc:
        raise spec.Refused(f"The cluster server {summary['server']}: {exc}") from None
    return summary


def check_ssh_host(value: str) -> None:
    """A host name or IP Dockyard may connect to over SSH, checked now (the runner checks again before it connects)."""
    host = value.strip("[]").lower() if value.startswith("[") else value.lower()
    try:
        addresses.check_host_syntax(host, f"The address '{value}'")
        addresses.check_at_save(host, 22)
    except addresses.AddressRefused as exc:
        raise spec.Refused(str(exc)) from None


def in_cluster_server() -> tuple[str | None, str]:
    """The API server of the cluster Dockyard runs in, as its pod sees it (no host when not in a pod)."""
    return os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT", "443")


CHECKS = spec.Checks(
    today=lambda: timezone.now().date(),
    url=_refused_as_spec(URLValidator()),
    cron=_refused_as_spec(validate_cron),
    time_zone=_refused_as_spec(iana_time_zone),
    ssh_host=check_ssh_host,
    cluster=cluster_summary,
    in_cluster_server=in_cluster_server,
)
