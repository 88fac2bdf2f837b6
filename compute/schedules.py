"""When a compute instance's start/stop schedules fire (pure: times in, times out).

Both kinds of trigger walk local wall-clock times of the trigger's zone (`time_zone_iana`, which the spec derives from
an IANA or Windows name) and then place each on the UTC line:
- a local time that does not exist (the hour skipped when clocks go forward) fires as that many minutes past the
  jump, the way zoneinfo reads it (02:30 on the spring-forward night in Berlin is 03:30 CEST);
- a local time that happens twice (the hour repeated when clocks go back) fires once, the first time;
- firings only ever move forward: a wall-clock time that maps to an instant not after the one asked from is skipped.

A recurrence (every `interval` minutes, hours, days, weeks or months, at schedule.hours/minutes on schedule.week_days)
counts its intervals from `start_time` in the zone, so "every 2 weeks on Monday at 08:00" fires on alternate Mondays,
which cron cannot say; without a start_time they count from RECURRENCE_ANCHOR (a Monday). `start_time` is also the
earliest firing of either kind.
"""
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import croniter
from dateutil import rrule

# A firing missed by more than this (the beat was down, the worker busy) is skipped, not replayed: an instance that
# should have stopped at 18:00 is not stopped at 09:00 the next morning when the beat comes back.
GRACE = timedelta(minutes=10)
RECURRENCE_ANCHOR = datetime(2024, 1, 1)  # a Monday, 00:00 local: where intervals count from without a start_time
MAX_STEPS = 10_000  # wall-clock candidates looked at for one firing (a DST fold or the grace window need a few)
FREQUENCIES = {"minute": rrule.MINUTELY, "hour": rrule.HOURLY, "day": rrule.DAILY, "week": rrule.WEEKLY,
               "month": rrule.MONTHLY}
WEEK_DAYS = {"Monday": rrule.MO, "Tuesday": rrule.TU, "Wednesday": rrule.WE, "Thursday": rrule.TH, "Friday": rrule.FR,
             "Saturday": rrule.SA, "Sunday": rrule.SU}


def zone_of(trigger: dict) -> ZoneInfo:
    return ZoneInfo(trigger.get("time_zone_iana") or trigger.get("time_zone") or "UTC")


def _local_start(trigger: dict, zone: ZoneInfo) -> datetime | None:
    """start_time as a wall-clock time of the zone (an offset written in it is honoured)."""
    text = trigger.get("start_time")
    if not text:
        return None
    start = datetime.fromisoformat(text)
    return start.astimezone(zone).replace(tzinfo=None) if start.tzinfo else start


def _recurrence(trigger: dict, start: datetime | None) -> rrule.rrule:
    frequency = trigger["frequency"]
    schedule = trigger.get("schedule") or {}
    by: dict = {}
    if frequency in ("day", "week", "month"):  # hours and minutes say when in the day; finer frequencies ignore them
        by = {"byhour": schedule.get("hours", [0]), "byminute": schedule.get("minutes", [0]), "bysecond": 0}
    if schedule.get("week_days") and frequency in ("day", "week"):
        by["byweekday"] = [WEEK_DAYS[day] for day in schedule["week_days"]]
    return rrule.rrule(FREQUENCIES[frequency], interval=int(trigger.get("interval") or 1),
                       dtstart=start or RECURRENCE_ANCHOR, wkst=rrule.MO, cache=False, **by)


def _wall_clock(trigger: dict, local: datetime, start: datetime | None) -> Iterator[datetime]:
    """The trigger's wall-clock times (naive, in the zone) strictly after `local`, in order."""
    if trigger["type"] == "recurrence":
        yield from _recurrence(trigger, start).xafter(local)
        return
    times = croniter(trigger["expression"], local)
    while True:
        yield times.get_next(datetime)


def next_fire(trigger: dict, after: datetime) -> datetime | None:
    """The first firing strictly after `after` (aware), in UTC; None when the trigger never fires again."""
    zone = zone_of(trigger)
    start = _local_start(trigger, zone)
    # Just after clocks went forward, walk from before the jump: a time in the skipped hour lands after it, so it can
    # be after `after` on the UTC line while its wall-clock reading is before `after`'s.
    jump = after.astimezone(zone).utcoffset() - (after - timedelta(days=1)).astimezone(zone).utcoffset()
    local = after.astimezone(zone).replace(tzinfo=None) - max(jump, timedelta(0))
    if start is not None and local < start:
        local = start - timedelta(microseconds=1)  # start_time itself may fire
    for _, candidate in zip(range(MAX_STEPS), _wall_clock(trigger, local, start), strict=False):
        instant = candidate.replace(tzinfo=zone).astimezone(UTC)  # fold=0: a repeated hour's first time
        if instant > after:
            return instant
    return None


def due(schedules: list[dict], fired_at: dict, now: datetime, grace: timedelta = GRACE) -> list[tuple[int, str, datetime]]:
    """The firings to act on now, oldest first: (index, action, fire time) for each enabled schedule whose latest
    firing not after `now` is newer than the one it last fired for (`fired_at`: {"<index>": iso}) and within `grace`.

    Each schedule fires at most once a call, for its latest due time, and `fired_at` then records that time, so a
    firing is acted on once however often this is asked; older ones missed by more than `grace` are skipped.
    """
    firings = []
    for index, schedule in enumerate(schedules):
        if schedule.get("state", "enabled") != "enabled":
            continue
        last = fired_at.get(str(index))
        since = max(datetime.fromisoformat(last), now - grace) if last else now - grace
        fire = _latest_before(schedule["trigger"], since, now)
        if fire is not None:
            firings.append((index, schedule["action"], fire))
    return sorted(firings, key=lambda firing: (firing[2], firing[0]))


def _latest_before(trigger: dict, since: datetime, now: datetime) -> datetime | None:
    """The latest firing in (since, now], or None."""
    latest = None
    fire = next_fire(trigger, since)
    for _ in range(MAX_STEPS):
        if fire is None or fire > now:
            return latest
        latest = fire
        fire = next_fire(trigger, fire)
    return latest
