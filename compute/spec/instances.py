"""A compute instance's body: where it runs (kubernetes compute or local), its shape, its user, idle shutdown, and
start/stop schedules (pure)."""
from controlplane.kube import names

from .. import vmsizes
from .fields import Boolean, Checks, Choice, Integer, Mapping, Pattern, Refused, Text, rule, world_rule
from .forms import Form, Many, problem
from .kinds import USERNAME_MESSAGE, ComputeKind, size_rule
from .rules import USERNAME, WEEK_DAYS, DurationProblem, idle_minutes_problem, iso_duration_minutes, start_time_problem

MAX_SCHEDULES = 4


class Trigger(Form):
    """When a schedule fires: a cron expression, or a recurrence (every `interval` `frequency`s, at hours/minutes)."""

    shown = ("time_zone_iana",)
    fields = {
        "type": Choice(["cron", "recurrence"]),
        "expression": Text(required=False, rules=(world_rule("cron"),)),
        "frequency": Choice(["minute", "hour", "day", "week", "month"], required=False),
        "interval": Integer(minimum=1, maximum=1000, required=False, default=1),
        "schedule": Mapping(required=False),
        "start_time": Text(required=False, rules=(rule(start_time_problem),)),
        # an IANA name (Europe/Berlin) or a Windows one (Pacific Standard Time); stored as written
        "time_zone": Text(required=False, default="UTC", max_length=64, trim=False, rules=(world_rule("time_zone"),)),
    }

    def validate(self, values: dict, checks: Checks) -> dict:
        try:
            values["time_zone_iana"] = checks.time_zone(values["time_zone"])
        except Refused as exc:
            raise problem("", exc.messages[0]) from None
        if values["type"] == "cron" and not values.get("expression"):
            raise problem("expression", "A cron trigger needs an expression.")
        if values["type"] == "recurrence":
            if not values.get("frequency"):
                raise problem("frequency", "A recurrence trigger needs a frequency.")
            values["schedule"] = recurrence_schedule(values.get("schedule") or {})
        return values


def _int_list(value, low: int, high: int, name: str) -> list[int]:
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(item, int) and not isinstance(item, bool) and low <= item <= high for item in items):
        raise problem(f"schedule.{name}", f"Must be whole numbers from {low} to {high}.")
    return items


def recurrence_schedule(schedule: dict) -> dict:
    """The hours, minutes and week days a recurrence fires at (problems under `schedule`)."""
    unknown = set(schedule) - {"hours", "minutes", "week_days"}
    if unknown:
        raise problem("schedule", f"Unknown field(s): {', '.join(sorted(unknown))}.")
    result = {
        "hours": _int_list(schedule.get("hours", 0), 0, 23, "hours"),
        "minutes": _int_list(schedule.get("minutes", 0), 0, 59, "minutes"),
    }
    days = schedule.get("week_days")
    if days is not None:
        days = days if isinstance(days, list) else [days]
        if not days or not all(isinstance(day, str) and day.lower() in WEEK_DAYS for day in days):
            raise problem("schedule.week_days", "Must be day names, Monday to Sunday.")
        result["week_days"] = [day.capitalize() for day in days]
    return result


class StartStop(Form):
    fields = {
        "action": Choice(["start", "stop"]),
        "state": Choice(["enabled", "disabled"], required=False, default="enabled"),
        "trigger": Trigger(),
    }


class Schedules(Form):
    fields = {"compute_start_stop": Many(StartStop(), required=False, default=list)}

    def check_compute_start_stop(self, value: list, checks: Checks) -> list:
        if len(value) > MAX_SCHEDULES:
            raise problem("", f"A compute instance can have at most {MAX_SCHEDULES} start/stop schedules.")
        return value


LOCAL = "local"  # kubernetes_compute: the sandboxed local server on the worker's host, where the workspace allows it
HOST = "kubernetes_compute"
# Azure ML's fields kept as given without acting on them (compute/spec/audit.py says why for each).
INSTANCE_KEPT_AS_GIVEN = ("location", "identity", "network_settings", "enable_node_public_ip")
# What GET adds to a compute instance (its run state): taken in a body sent back, and ignored.
INSTANCE_SHOWN = ("state", "state_reason", "state_changed_at", "last_activity", "last_activity_source", "desired_state",
                  "stop_cause", "applications")
_NO_SSH = ("SSH into a compute instance is not offered: open a terminal in its JupyterLab (or VS Code) from the studio "
           "instead")
_BUILT_IN = "A compute instance runs Dockyard's instance image with JupyterLab, VS Code (code-server) and a terminal built in"
# Refused unless false or empty, so Azure ML files that say "no SSH" load unchanged.
REFUSED_UNLESS_EMPTY = ("ssh_public_access_enabled", "ssh_settings")


def instance_type_problem(value: str) -> str | None:
    if names.dns_subdomain_problem(value):
        return f"'{value}' is not an instance type name: lowercase letters, digits, '-' and '.'."
    return None


def host_problem(name: str | None, computes: dict[str, str], local_refusal: str | None) -> str | None:
    """Why `name` cannot host a compute instance (None when it can); `computes` are the workspace's {name: type}."""
    hosts = sorted(key for key, kind in computes.items() if kind == "kubernetes")
    listed = f"the kubernetes computes here: {', '.join(hosts)}" if hosts else "this workspace has no kubernetes compute"
    if name == LOCAL:
        return f"{local_refusal} A compute instance on 'local' needs it." if local_refusal else None
    if name is None:
        if len(hosts) == 1 or (not hosts and local_refusal is None):
            return None
        if hosts:
            return (f"Several kubernetes computes could host this compute instance ({', '.join(hosts)}); name one in "
                    "kubernetes_compute.")
        return ("A compute instance runs on an attached Kubernetes cluster and this workspace has none; attach one "
                "(type: kubernetes) first, then name it in kubernetes_compute (or, where staff enabled local compute "
                "for the workspace, give kubernetes_compute: local).")
    if name not in computes:
        return f"There is no compute named '{name}' in this workspace; {listed}."
    if computes[name] != "kubernetes":
        return f"'{name}' is a {computes[name]} compute; a compute instance runs on a kubernetes compute ({listed})."
    return None


def default_host(computes: dict[str, str]) -> str:
    """The host when none is named and host_problem passed: the only kubernetes compute, else local."""
    return next((key for key, kind in computes.items() if kind == "kubernetes"), LOCAL)


class ComputeInstance(ComputeKind):
    compute_type = "computeinstance"
    kept_as_given = INSTANCE_KEPT_AS_GIVEN
    shown = INSTANCE_SHOWN
    refused = {
        "setup_scripts": f"Setup scripts are not run: {_BUILT_IN}. Install what you need from its terminal (your home "
                         "directory is on the instance's disk, which a stop keeps); remove setup_scripts.",
        "custom_applications": f"Custom applications are not offered: {_BUILT_IN}; start other servers from its "
                               "terminal. Remove custom_applications.",
        "enable_os_patching": "A compute instance is a container on the attached cluster: it is patched when Dockyard's "
                              "instance image is updated (a restart picks it up), not by OS patching; remove this field.",
        "enable_sso": "Dockyard opens a compute instance with your Dockyard sign-in, for its assigned user (and staff) "
                      "only; there is no separate single sign-on setting. Remove enable_sso.",
        "enable_root_access": "Root access is decided by the instance image Dockyard runs, not per instance; remove "
                              "enable_root_access.",
        "create_on_behalf_of": "Give assigned_user (a member's user name) instead: the instance is made for that user; "
                               "remove create_on_behalf_of.",
        "ssh_public_access_enabled": f"{_NO_SSH}. Remove ssh_public_access_enabled (or set it to false).",
        "ssh_settings": f"{_NO_SSH}, so no SSH key is installed. Remove ssh_settings.",
    }
    own = {
        HOST: Text(required=False, max_length=64),
        "instance_type": Text(required=False, allow_null=True, default=None, max_length=253,
                              rules=(rule(instance_type_problem),)),
        "size": Text(required=False, allow_null=True, default=None, rules=(size_rule(vmsizes.INSTANCE),)),
        # a member's user name; the create service fills in the creator's and checks membership
        "assigned_user": Pattern(USERNAME, required=False, max_length=64, messages={"invalid": USERNAME_MESSAGE}),
        "idle_time_before_shutdown_minutes": Integer(required=False, allow_null=True, default=None),
        "idle_time_before_shutdown": Text(required=False, allow_null=True, default=None),
        "schedules": Schedules(required=False, default=dict),
    }
    idle_pair = ("idle_time_before_shutdown_minutes", "idle_time_before_shutdown")
    shape_pair = ("instance_type", "size")

    def convert(self, data, checks: Checks):
        if isinstance(data, dict):
            data = {key: value for key, value in data.items() if key not in REFUSED_UNLESS_EMPTY or not _empty(value)}
        return super().convert(data, checks)

    @classmethod
    def merge_for_update(cls, stored: dict, patch: dict) -> dict:
        for pair in (cls.idle_pair, cls.shape_pair):  # the patch's choice of the pair replaces the stored one
            if any(key in patch for key in pair):
                stored = {key: value for key, value in stored.items() if key not in pair}
        return {**stored, **patch}

    def validate(self, values: dict, checks: Checks) -> dict:
        values = self._idle(values)
        values["schedules"] = {"compute_start_stop": (values.get("schedules") or {}).get("compute_start_stop", [])}
        values[HOST] = self._host(values.get(HOST), checks)
        self._shape(values, checks)
        return values

    @staticmethod
    def _idle(values: dict) -> dict:
        minutes = values.get("idle_time_before_shutdown_minutes")
        iso = values.get("idle_time_before_shutdown")
        try:
            iso_minutes = iso_duration_minutes(iso) if iso else None
            if minutes is not None and iso_minutes is not None and minutes != iso_minutes:
                raise DurationProblem(f"It says {iso_minutes} minutes but idle_time_before_shutdown_minutes says {minutes}.")
            minutes = minutes if minutes is not None else iso_minutes
            message = idle_minutes_problem(minutes) if minutes is not None else None
            if message:
                raise DurationProblem(message)
        except DurationProblem as exc:
            raise problem("idle_time_before_shutdown" if iso else "idle_time_before_shutdown_minutes", str(exc)) from None
        values["idle_time_before_shutdown_minutes"] = minutes
        values["idle_time_before_shutdown"] = f"PT{minutes}M" if minutes is not None else None
        return values

    @staticmethod
    def _host(name: str | None, checks: Checks) -> str:
        """The kubernetes compute named (or local), else the workspace's only one, else local where it is allowed."""
        computes = {} if name == LOCAL else checks.workspace_computes()
        message = host_problem(name, computes, checks.local_compute() if name in (None, LOCAL) else None)
        if message:
            raise problem(HOST, message)
        return name or default_host(computes)

    @staticmethod
    def _shape(values: dict, checks: Checks) -> None:
        """instance_type or size, not both: an instance type is the cluster's own shape, a size Azure ML's VM."""
        instance_type, size = values.get("instance_type"), values.get("size")
        if instance_type and size:
            raise problem("instance_type", "Give instance_type or size, not both: an instance type is already a shape "
                                           "(requests, limits, node selector).")
        if size:
            values["size"] = vmsizes.vm_size(size).name
        if not instance_type:
            return
        if values[HOST] == LOCAL:
            raise problem("instance_type", "A compute instance on 'local' runs in the sandbox on the worker's host, "
                                           "which has no instance types; remove instance_type.")
        known = checks.instance_types(values[HOST])
        if known is not None and instance_type not in known:
            raise problem("instance_type", f"Kubernetes compute '{values[HOST]}' has no instance type "
                                           f"'{instance_type}'; it has: {', '.join(known)}.")


def _empty(value) -> bool:
    """false, no, off, 0, null, "" or an empty mapping: what says "no SSH"."""
    if isinstance(value, str):
        return value.strip().lower() in Boolean.FALSE or not value.strip()
    return value in (None, False, 0) or value == {}
