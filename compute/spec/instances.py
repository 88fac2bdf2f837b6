"""A compute instance's body: size, idle shutdown, and start/stop schedules (pure)."""
from .. import vmsizes
from .fields import Checks, Choice, Integer, Mapping, Refused, Text, rule, world_rule
from .forms import Form, Many, problem
from .kinds import KEPT_AS_GIVEN, ComputeKind, size_rule
from .rules import WEEK_DAYS, DurationProblem, idle_minutes_problem, iso_duration_minutes, start_time_problem

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


class ComputeInstance(ComputeKind):
    compute_type = "computeinstance"
    kept_as_given = KEPT_AS_GIVEN
    refused = {
        key: f"{what} are not supported: Dockyard has no compute-instance backend yet, and the one planned runs a "
             "container image of your choice instead; remove this field."
        for key, what in (("setup_scripts", "Setup scripts"), ("custom_applications", "Custom applications"),
                          ("enable_os_patching", "OS patching settings"), ("enable_sso", "Single sign-on settings"),
                          ("enable_root_access", "Root-access settings"),
                          ("create_on_behalf_of", "Instances created on behalf of another user"),
                          ("ssh_settings", "SSH settings of a compute instance"))
    }
    own = {
        "size": Text(required=False, default="Standard_DS3_v2", rules=(size_rule(vmsizes.INSTANCE),)),
        "idle_time_before_shutdown_minutes": Integer(required=False, allow_null=True, default=None),
        "idle_time_before_shutdown": Text(required=False, allow_null=True, default=None),
        "schedules": Schedules(required=False, default=dict),
    }
    idle_pair = ("idle_time_before_shutdown_minutes", "idle_time_before_shutdown")

    @classmethod
    def merge_for_update(cls, stored: dict, patch: dict) -> dict:
        if any(key in patch for key in cls.idle_pair):
            stored = {key: value for key, value in stored.items() if key not in cls.idle_pair}
        return {**stored, **patch}

    def validate(self, values: dict, checks: Checks) -> dict:
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
        values["schedules"] = {"compute_start_stop": (values.get("schedules") or {}).get("compute_start_stop", [])}
        return values
