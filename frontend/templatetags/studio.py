"""Template helpers of the studio: the workspace switcher, state badges, and short renderings of values."""
import json

from django import template
from django.urls import reverse
from django.utils import timezone

from assets.specs.references import InvalidReference, is_reference, parse_reference
from compute.choices import ComputeType
from compute.schedules import next_fire, zone_of
from controlplane.reconciling import ProvisioningState
from jobs.choices import JobStatus, Target
from workspaces import selectors

register = template.Library()

STATE_STYLES = {
    ProvisioningState.SUCCEEDED: ("success", "check-circle-fill"),
    ProvisioningState.CREATING: ("primary", "arrow-repeat"),
    ProvisioningState.UPDATING: ("primary", "arrow-repeat"),
    ProvisioningState.FAILED: ("danger", "x-octagon-fill"),
    ProvisioningState.DELETING: ("secondary", "trash3"),
    # Job statuses: grey before anything happens, amber while waiting, blue while at work, then the outcome.
    JobStatus.NOT_STARTED: ("secondary", "clock"),
    JobStatus.QUEUED: ("warning", "hourglass-split"),
    JobStatus.STARTING: ("info", "rocket-takeoff"),
    JobStatus.RUNNING: ("primary", "arrow-repeat"),
    JobStatus.CANCEL_REQUESTED: ("warning", "slash-circle"),
    JobStatus.COMPLETED: ("success", "check-circle-fill"),
    JobStatus.FAILED: ("danger", "x-octagon-fill"),
    JobStatus.CANCELED: ("secondary", "slash-circle"),
}
ACTION_STYLES = {"create": "success", "update": "primary", "delete": "danger", "action": "secondary"}


@register.inclusion_tag("frontend/partials/workspace_menu.html", takes_context=True)
def workspace_menu(context, current=None):
    user = context["request"].user
    workspaces = selectors.workspace_list(user=user) if user.is_authenticated else []
    return {"workspaces": workspaces, "current": current}


@register.inclusion_tag("frontend/partials/state_badge.html")
def state_badge(state: str):
    colour, icon = STATE_STYLES.get(state, ("secondary", "question-circle"))
    return {"state": state, "colour": colour, "icon": icon}


@register.filter
def action_colour(action: str) -> str:
    return ACTION_STYLES.get(action, "secondary")


@register.filter
def type_label(compute_type: str) -> str:
    return ComputeType(compute_type).label if compute_type in ComputeType.values else compute_type


@register.filter
def summary(compute) -> str:
    """The one line that tells a compute apart in its tab."""
    p = compute.properties
    if compute.type == ComputeType.COMPUTEINSTANCE:
        idle = p.get("idle_time_before_shutdown_minutes")
        return p.get("size", "") + (f" · idle shutdown {idle} min" if idle else "")
    if compute.type == ComputeType.AMLCOMPUTE:
        tier = "low priority" if p.get("tier") == "low_priority" else "dedicated"
        return f"{p.get('size', '')} · {p.get('min_instances')}–{p.get('max_instances')} nodes · {tier}"
    if compute.type == ComputeType.KUBERNETES:
        return f"{p.get('server', '')} · namespace {p.get('namespace', 'default')}"
    if "address" in p:
        probed = compute.status or {}
        size = f" · {probed['cpus']} CPUs · {len(probed.get('gpus') or [])} GPUs" if probed.get("cpus") else ""
        return f"{p.get('admin_username')}@{p['address']}:{p.get('ssh_port', 22)}{size}"
    return p.get("workspace_url") or p.get("account_name") or p.get("resource_id", "").rsplit("/", 1)[-1]


# A compute cluster's `status.scaling` (the reconcile's) in a word or two.
SCALING_LABELS = {"steady": "steady", "scaling_up": "scaling up", "scaling_down": "scaling down", "at_limit": "at its limit"}


@register.filter
def scaling_label(scaling: str) -> str:
    return SCALING_LABELS.get(scaling, scaling or "")


@register.filter
def show(value) -> str:
    """A property value in one line: maps as key=value, structures as compact JSON, nothing as an em dash."""
    if value in (None, "", [], {}):
        return "—"
    if isinstance(value, dict) and all(isinstance(item, str) for item in value.values()):
        return ", ".join(f"{key}={item}" for key, item in value.items())
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(", ", ": "))
    return str(value)


@register.filter
def change_rows(changes: dict) -> list[tuple[str, str]]:
    """An audit event's {field: [old, new]} as (field, "old → new"); secret fields arrive already masked."""
    rows = []
    for key, change in (changes or {}).items():
        if isinstance(change, list) and len(change) == 2:
            old, new = change
            text = f"{show(new)}" if old is None else f"{show(old)} → {show(new)}"
        else:
            text = show(change)
        rows.append((key, text))
    return rows


@register.filter
def megabytes(value) -> str:
    """Megabytes as a person reads them: 512 MiB, 15.5 GiB, 1.8 TiB; unknown as an em dash."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "—"
    for unit, size in (("TiB", 1024 * 1024), ("GiB", 1024)):
        if value >= size:
            return f"{value / size:.1f} {unit}".replace(".0 ", " ")
    return f"{value:g} MiB"


@register.filter
def item(mapping, key: str):
    """mapping[key] for keys a template cannot spell, such as nvidia.com/gpu; None when absent."""
    return mapping.get(key) if isinstance(mapping, dict) else None


@register.filter
def duration(seconds) -> str:
    """Seconds as a person reads a run time: 42s, 3m 05s, 2h 01m, 1d 04h; nothing as an em dash."""
    if seconds is None:
        return "—"
    seconds = int(seconds)
    minutes, secs = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days}d {hours:02d}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"


@register.filter
def placement(job) -> str:
    """Where a job runs in a few words: local, its compute, or serverless and where placement put it."""
    if job.target == Target.LOCAL:
        return "local"
    # List rows carry the compute's name (one query for the page); a single job has the compute itself.
    compute = job.compute_ref if hasattr(job, "compute_ref") else (job.compute.name if job.compute_id else None)
    if job.target == Target.SERVERLESS:
        return f"serverless → {compute}" if compute else "serverless (not placed yet)"
    return compute or f"{job.compute_name} (removed)"


@register.filter
def status_alert(status: str) -> str:
    """The alert colour of a status reason worth stopping at (failed, waiting); "" for the rest, shown as plain text."""
    return {JobStatus.FAILED: "danger", JobStatus.QUEUED: "warning"}.get(status, "")


@register.filter
def schedule_when(trigger: dict) -> str:
    """A start/stop trigger in words: `cron 0 18 * * *`, or `every week at 19:30 on Monday, Friday`."""
    if trigger.get("type") == "cron":
        return f"cron {trigger.get('expression', '')}"
    interval, frequency = trigger.get("interval", 1), trigger.get("frequency", "")
    text = f"every {frequency}" if interval == 1 else f"every {interval} {frequency}s"
    schedule = trigger.get("schedule") or {}
    times = [f"{hour:02d}:{minute:02d}" for hour in schedule.get("hours", []) for minute in schedule.get("minutes", [])]
    if times:
        text += " at " + ", ".join(times)
    if schedule.get("week_days"):
        text += " on " + ", ".join(schedule["week_days"])
    return text


WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
WEEKEND = ("Saturday", "Sunday")


def days_text(days: list[str]) -> str:
    """Week days as a person says them: weekday, weekend day, day, or the names."""
    chosen = set(days)
    if chosen == set(WEEKDAYS):
        return "weekday"
    if chosen == set(WEEKEND):
        return "weekend day"
    if chosen == set(WEEKDAYS + WEEKEND):
        return "day"
    return ", ".join(day for day in WEEKDAYS + WEEKEND if day in chosen)


def recurrence_text(trigger: dict) -> str:
    """`every weekday at 08:00`, `every 2 weeks on Monday at 07:30`, `every day at 18:00`."""
    interval, frequency = trigger.get("interval") or 1, trigger.get("frequency") or "day"
    schedule = trigger.get("schedule") or {}
    days = schedule.get("week_days") or []
    if interval == 1:
        text = f"every {days_text(days)}" if days else f"every {frequency}"
    else:
        text = f"every {interval} {frequency}s" + (f" on {days_text(days)}" if days else "")
    times = [f"{hour:02d}:{minute:02d}" for hour in schedule.get("hours", []) for minute in schedule.get("minutes", [])]
    return text + (" at " + ", ".join(times) if times else "")


@register.filter
def schedule_sentence(row: dict) -> str:
    """A start/stop schedule as one sentence: "Starts every weekday at 08:00 Europe/Berlin"."""
    trigger = row.get("trigger") or {}
    verb = "Starts" if row.get("action") == "start" else "Stops"
    zone = trigger.get("time_zone") or "UTC"
    if trigger.get("type") == "cron":
        return f"{verb} on the cron schedule {trigger.get('expression', '')} ({zone})"
    disabled = " (disabled)" if str(row.get("state", "")).lower() == "disabled" else ""
    return f"{verb} {recurrence_text(trigger)} {zone}{disabled}"


@register.filter
def schedule_next(row: dict) -> str:
    """When the schedule fires next (compute.schedules.next_fire), in the schedule's time zone; "" when it never does."""
    if str(row.get("state", "")).lower() == "disabled" or not isinstance(row.get("trigger"), dict):
        return ""
    try:
        moment = next_fire(row["trigger"], timezone.now())
        zone = zone_of(row["trigger"])
    except (ValueError, KeyError):  # a stored trigger the firing task cannot read either: shown without its next time
        return ""
    return moment.astimezone(zone).strftime("%a %Y-%m-%d %H:%M") if moment else ""  # in the schedule's own zone


COLLECTIONS = {"environment": "environments", "model": "models", "data": "data"}


@register.simple_tag
def asset_url(workspace_name: str, value, kind: str) -> str:
    """The studio page of the workspace's asset a reference names (`azureml:name:version` → that version,
    `azureml:name@latest` → the name's versions); "" for anything else (curated, another registry or workspace)."""
    if not is_reference(value):
        return ""
    try:
        reference = parse_reference(value, kind)
    except InvalidReference:
        return ""
    if reference.registry or reference.workspace not in (None, workspace_name) or reference.is_curated_name:
        return ""
    collection = COLLECTIONS[reference.kind or kind]
    if reference.version:
        return reverse("frontend:asset-version", args=[workspace_name, collection, reference.name, reference.version])
    return reverse("frontend:asset", args=[workspace_name, collection, reference.name])
