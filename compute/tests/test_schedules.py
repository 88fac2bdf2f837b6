"""When start/stop schedules fire: next-fire tables across DST changes, week days and intervals; what is due, once."""
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from compute.schedules import GRACE, due, next_fire


def utc(*parts) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def cron(expression: str, zone: str = "UTC", windows: str | None = None, **more) -> dict:
    """A stored cron trigger: the spec keeps the zone as written and its IANA name."""
    return {"type": "cron", "expression": expression, "time_zone": windows or zone, "time_zone_iana": zone, **more}


def every(frequency: str, interval: int = 1, zone: str = "UTC", **more) -> dict:
    schedule = {key: more.pop(key) for key in ("hours", "minutes", "week_days") if key in more}
    return {"type": "recurrence", "frequency": frequency, "interval": interval, "schedule": schedule,
            "time_zone": zone, "time_zone_iana": zone, **more}


BERLIN, LA = "Europe/Berlin", "America/Los_Angeles"

NEXT_FIRE = [
    # (label, trigger, after, expected firing in UTC)
    ("berlin-winter", cron("0 18 * * *", BERLIN), utc(2026, 1, 10, 12), utc(2026, 1, 10, 17)),
    ("berlin-summer", cron("0 18 * * *", BERLIN), utc(2026, 7, 10, 12), utc(2026, 7, 10, 16)),
    # 29 March 2026: 02:00 CET jumps to 03:00 CEST; 02:30 does not exist and fires as 03:30 CEST
    ("berlin-skipped-hour", cron("30 2 * * *", BERLIN), utc(2026, 3, 28, 12), utc(2026, 3, 29, 1, 30)),
    ("berlin-skipped-hour-asked-after-the-jump", cron("30 2 * * *", BERLIN), utc(2026, 3, 29, 1, 25), utc(2026, 3, 29, 1, 30)),
    ("berlin-day-after-the-jump", cron("30 2 * * *", BERLIN), utc(2026, 3, 29, 1, 30), utc(2026, 3, 30, 0, 30)),
    # 25 October 2026: 03:00 CEST goes back to 02:00 CET; 02:30 happens twice and fires the first time only
    ("berlin-repeated-hour", cron("30 2 * * *", BERLIN), utc(2026, 10, 24, 12), utc(2026, 10, 25, 0, 30)),
    ("berlin-repeated-hour-once", cron("30 2 * * *", BERLIN), utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)),
    # 8 March 2026 in Los Angeles: PST (-8) to PDT (-7); week days only
    ("la-friday-before-dst", cron("0 8 * * 1-5", LA), utc(2026, 3, 6, 12), utc(2026, 3, 6, 16)),
    ("la-weekend-skipped-monday-after-dst", cron("0 8 * * 1-5", LA), utc(2026, 3, 6, 16), utc(2026, 3, 9, 15)),
    ("windows-pacific-standard-time", cron("0 8 * * 1-5", LA, windows="Pacific Standard Time"), utc(2026, 3, 6, 16),
     utc(2026, 3, 9, 15)),
    # 1 November 2026: back to PST
    ("la-after-fall-back", cron("0 8 * * *", LA), utc(2026, 10, 31, 16), utc(2026, 11, 1, 16)),
    # recurrences
    ("every-2-weeks-on-monday", every("week", 2, LA, hours=[8], minutes=[0], week_days=["Monday"],
                                      start_time="2026-01-05T08:00:00"), utc(2026, 1, 5, 16), utc(2026, 1, 19, 16)),
    ("every-2-weeks-across-dst", every("week", 2, LA, hours=[8], minutes=[0], week_days=["Monday"],
                                       start_time="2026-01-05T08:00:00"), utc(2026, 3, 2, 16), utc(2026, 3, 16, 15)),
    ("every-2-weeks-not-the-odd-monday", every("week", 2, LA, hours=[8], minutes=[0], week_days=["Monday"],
                                               start_time="2026-01-05T08:00:00"), utc(2026, 1, 6), utc(2026, 1, 19, 16)),
    ("weekends-at-nine", every("day", 1, BERLIN, hours=[9], minutes=[0], week_days=["Saturday", "Sunday"]),
     utc(2026, 1, 5), utc(2026, 1, 10, 8)),
    ("twice-a-day", every("day", 1, BERLIN, hours=[9, 18], minutes=[30]), utc(2026, 1, 5, 8, 31), utc(2026, 1, 5, 17, 30)),
    ("every-6-hours-from-start", every("hour", 6, start_time="2026-01-01T00:30:00"), utc(2026, 1, 1, 1), utc(2026, 1, 1, 6, 30)),
    ("every-30-minutes", every("minute", 30, start_time="2026-01-01T00:00:00"), utc(2026, 1, 1, 0, 10), utc(2026, 1, 1, 0, 30)),
    ("every-3-days", every("day", 3, hours=[7], minutes=[0], start_time="2026-01-01T07:00:00"), utc(2026, 1, 1, 8),
     utc(2026, 1, 4, 7)),
    ("monthly-on-the-start-day", every("month", 1, hours=[6], minutes=[0], start_time="2026-01-15T06:00:00"),
     utc(2026, 1, 15, 7), utc(2026, 2, 15, 6)),
    ("start-time-is-the-first-firing", cron("0 18 * * *", start_time="2026-05-01T18:00:00"), utc(2026, 1, 1),
     utc(2026, 5, 1, 18)),
    ("start-time-with-an-offset", every("day", 1, BERLIN, hours=[9], minutes=[0], start_time="2026-01-10T00:00:00+00:00"),
     utc(2026, 1, 1), utc(2026, 1, 10, 8)),
    ("strictly-after", cron("0 18 * * *"), utc(2026, 1, 10, 18), utc(2026, 1, 11, 18)),
]


@pytest.mark.parametrize("trigger, after, expected", [case[1:] for case in NEXT_FIRE], ids=[case[0] for case in NEXT_FIRE])
def test_next_fire(trigger, after, expected):
    assert next_fire(trigger, after) == expected


def test_every_2_weeks_fires_on_alternate_mondays_only():
    trigger = every("week", 2, LA, hours=[8], minutes=[0], week_days=["Monday"], start_time="2026-01-05T08:00:00")
    fired, at = [], utc(2026, 1, 1)
    for _ in range(6):
        at = next_fire(trigger, at)
        fired.append(at.astimezone(ZoneInfo(LA)))
    assert [str(item.date()) for item in fired] == ["2026-01-05", "2026-01-19", "2026-02-02", "2026-02-16",
                                                     "2026-03-02", "2026-03-16"]
    assert {(item.hour, item.minute) for item in fired} == {(8, 0)}  # 08:00 local on both sides of the DST change


def stop_at(expression: str, state: str = "enabled", action: str = "stop") -> dict:
    return {"action": action, "state": state, "trigger": cron(expression)}


DUE = [
    # (label, schedules, fired_at, now, expected [(index, action, fire time)])
    ("on-time", [stop_at("0 18 * * *")], {}, utc(2026, 1, 5, 18, 0, 30), [(0, "stop", utc(2026, 1, 5, 18))]),
    ("not-yet", [stop_at("0 18 * * *")], {}, utc(2026, 1, 5, 17, 59), []),
    ("already-fired", [stop_at("0 18 * * *")], {"0": "2026-01-05T18:00:00+00:00"}, utc(2026, 1, 5, 18, 5), []),
    ("late-within-the-grace", [stop_at("0 18 * * *")], {"0": "2026-01-04T18:00:00+00:00"},
     utc(2026, 1, 5, 18) + GRACE - timedelta(seconds=1), [(0, "stop", utc(2026, 1, 5, 18))]),
    # the beat was down for the night: yesterday's 18:00 is not replayed at 09:00
    ("missed-by-more-than-the-grace", [stop_at("0 18 * * *")], {"0": "2026-01-04T18:00:00+00:00"},
     utc(2026, 1, 6, 9), []),
    ("disabled", [stop_at("0 18 * * *", state="disabled")], {}, utc(2026, 1, 5, 18, 0, 30), []),
    # a minutely schedule the beat was slow for fires once, for its latest time
    ("several-in-the-window-fire-once", [stop_at("* * * * *")], {"0": "2026-01-05T17:55:00+00:00"},
     utc(2026, 1, 5, 18, 0, 30), [(0, "stop", utc(2026, 1, 5, 18))]),
    ("oldest-first", [stop_at("5 18 * * *"), stop_at("0 18 * * *", action="start")], {},
     utc(2026, 1, 5, 18, 6), [(1, "start", utc(2026, 1, 5, 18)), (0, "stop", utc(2026, 1, 5, 18, 5))]),
    ("indexes-are-kept-past-a-disabled-one", [stop_at("0 18 * * *", state="disabled"), stop_at("0 18 * * *", action="start")],
     {}, utc(2026, 1, 5, 18, 1), [(1, "start", utc(2026, 1, 5, 18))]),
]


@pytest.mark.parametrize("items, fired_at, now, expected", [case[1:] for case in DUE], ids=[case[0] for case in DUE])
def test_due(items, fired_at, now, expected):
    assert due(items, fired_at, now) == expected


def test_a_firing_recorded_is_not_due_again():
    items = [stop_at("*/5 * * * *")]
    now = utc(2026, 1, 5, 18, 1)
    [(index, _, fire)] = due(items, {}, now)
    fired_at = {str(index): fire.isoformat()}
    assert due(items, fired_at, now + timedelta(minutes=3)) == []
    assert due(items, fired_at, now + timedelta(minutes=4)) == [(0, "stop", utc(2026, 1, 5, 18, 5))]
