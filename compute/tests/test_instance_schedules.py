"""The beat task fires due start/stop schedules: each firing once, a scheduled start of a running instance does
nothing, two workers at once fire once (the row lock)."""
import threading
import time
from datetime import UTC, datetime

import pytest
import time_machine
from django.db import connection, connections, transaction

from compute import instances, tasks
from compute.models import ComputeInstance, ComputeTarget
from compute.tests.factories import create_compute, host
from workspaces.models import AuditEvent

STOP_AT_18 = {"action": "stop", "trigger": {"type": "cron", "expression": "0 18 * * *", "time_zone": "Europe/Berlin"}}
START_AT_8 = {"action": "start", "trigger": {"type": "cron", "expression": "0 8 * * *", "time_zone": "Europe/Berlin"}}
EVERY_2_WEEKS = {"action": "start", "trigger": {
    "type": "recurrence", "frequency": "week", "interval": 2, "time_zone": "Pacific Standard Time",
    "schedule": {"hours": [8], "minutes": [0], "week_days": ["Monday"]}, "start_time": "2026-01-05T08:00:00"}}


def notebook(workspace, owner, *items, name: str = "notebook") -> ComputeTarget:
    host(workspace)
    return create_compute(workspace, owner, "computeinstance", name=name, schedules={"compute_start_stop": list(items)})


def instance(compute: ComputeTarget) -> ComputeInstance:
    return ComputeInstance.objects.get(compute=compute)


def scheduled_actions() -> list[tuple[str, str]]:
    return list(AuditEvent.objects.filter(action="action").order_by("pk").values_list("verb", "actor_name"))


@pytest.mark.django_db
def test_a_stop_fires_at_its_time_once(workspace, owner, django_capture_on_commit_callbacks):
    compute = notebook(workspace, owner, STOP_AT_18, START_AT_8)
    with time_machine.travel(datetime(2026, 1, 5, 16, 59, tzinfo=UTC), tick=False):  # 17:59 in Berlin
        assert tasks.fire_instance_schedules() == 0
    with time_machine.travel(datetime(2026, 1, 5, 17, 0, 20, tzinfo=UTC), tick=False), \
            django_capture_on_commit_callbacks() as callbacks:
        assert tasks.fire_instance_schedules() == 1
        assert tasks.fire_instance_schedules() == 0  # fired once
    assert len(callbacks) == 1  # one reconcile
    state = instance(compute)
    assert (state.desired_state, state.stop_cause) == ("stopped", "schedule")
    assert state.schedule_fired_at == {"0": "2026-01-05T17:00:00+00:00"}
    assert scheduled_actions() == [("stop", "system")]
    with time_machine.travel(datetime(2026, 1, 6, 7, 1, tzinfo=UTC), tick=False):  # 08:01 in Berlin
        assert tasks.fire_instance_schedules() == 1
    assert instance(compute).desired_state == "running"


@pytest.mark.django_db
def test_a_scheduled_start_of_a_running_instance_does_nothing(workspace, owner):
    compute = notebook(workspace, owner, START_AT_8)
    ComputeInstance.objects.filter(compute=compute).update(state="Running")
    with time_machine.travel(datetime(2026, 1, 6, 7, 0, 5, tzinfo=UTC), tick=False):
        assert tasks.fire_instance_schedules() == 1  # recorded as fired
    compute.refresh_from_db()
    assert compute.generation == 1 and scheduled_actions() == []
    assert instance(compute).schedule_fired_at == {"0": "2026-01-06T07:00:00+00:00"}


@pytest.mark.django_db
def test_every_2_weeks_in_a_windows_time_zone(workspace, owner):
    compute = notebook(workspace, owner, EVERY_2_WEEKS)
    ComputeInstance.objects.filter(compute=compute).update(desired_state="stopped", state="Stopped")
    for day, fires in ((12, False), (19, True)):  # Mondays; 08:00 PST is 16:00 UTC
        with time_machine.travel(datetime(2026, 1, day, 16, 1, tzinfo=UTC), tick=False):
            assert tasks.fire_instance_schedules() == int(fires)
    assert scheduled_actions() == [("start", "system")]


@pytest.mark.django_db
def test_a_day_without_the_beat_is_not_replayed(workspace, owner):
    compute = notebook(workspace, owner, STOP_AT_18)
    ComputeInstance.objects.filter(compute=compute).update(schedule_fired_at={"0": "2026-01-04T17:00:00+00:00"})
    with time_machine.travel(datetime(2026, 1, 6, 8, tzinfo=UTC), tick=False):
        assert tasks.fire_instance_schedules() == 0
    assert instance(compute).desired_state == "running"


@pytest.mark.django_db
def test_disabled_schedules_and_deleting_instances_are_left_alone(workspace, owner):
    notebook(workspace, owner, {**STOP_AT_18, "state": "disabled"})
    going = notebook(workspace, owner, STOP_AT_18, name="going")
    ComputeTarget.objects.filter(pk=going.pk).update(provisioning_state="Deleting")
    notebook(workspace, owner, name="plain")
    assert tasks.scheduled_instances() == [instance(ComputeTarget.objects.get(name="notebook")).pk]
    with time_machine.travel(datetime(2026, 1, 5, 17, 1, tzinfo=UTC), tick=False):
        assert tasks.fire_instance_schedules() == 0
    assert scheduled_actions() == []


def wait_until(check, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def waiting_on_a_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       "AND wait_event_type = 'Lock'")
        return cursor.fetchone()[0] > 0


@pytest.mark.django_db(transaction=True)
def test_two_workers_at_once_fire_once(workspace, owner, monkeypatch):
    """Worker A holds the row lock after acting; worker B, asking meanwhile, waits and then finds the firing recorded."""
    compute = notebook(workspace, owner, STOP_AT_18)
    pk = instance(compute).pk
    acted, release = threading.Event(), threading.Event()
    real = instances.request_action

    def slow_request(**kwargs):
        changed = real(**kwargs)
        if threading.current_thread().name == "worker-a":
            acted.set()
            assert release.wait(20)
        return changed

    monkeypatch.setattr(instances, "request_action", slow_request)
    monkeypatch.setattr(tasks, "enqueue_on_commit", lambda *args, **kwargs: None)  # no broker here
    now = datetime(2026, 1, 5, 17, 0, 30, tzinfo=UTC)
    fired: dict[str, int] = {}

    def worker():
        try:
            fired[threading.current_thread().name] = tasks.fire_schedules_of(pk, now)
        finally:
            connections.close_all()

    a = threading.Thread(target=worker, name="worker-a")
    a.start()
    assert acted.wait(20)
    b = threading.Thread(target=worker, name="worker-b")
    b.start()
    wait_until(waiting_on_a_lock, 20, "worker B to wait for the row lock")
    release.set()
    a.join(20)
    b.join(20)
    assert fired == {"worker-a": 1, "worker-b": 0}
    assert scheduled_actions() == [("stop", "system")]
    with transaction.atomic():
        assert instance(compute).schedule_fired_at == {"0": "2026-01-05T17:00:00+00:00"}
