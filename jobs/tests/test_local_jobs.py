"""Local jobs end to end: the REST API, a real Celery worker on the Redis broker, real processes on this host.

The worker runs in a thread of the test process (solo pool, as tests/test_worker.py), so it sees the test's settings
and os.environ. Every process group a job started is checked to be gone, and killed in teardown if a test failed.
"""
import base64
import json
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from celery.contrib.testing.worker import start_worker
from celery.signals import task_prerun
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from compute.runners import local as runner
from controlplane.celery import app
from jobs import services
from jobs.files import claim_run_folder
from jobs.models import Job
from jobs.reconcile.local import run_folder
from jobs.tasks import reconcile_job, resync_jobs

pytestmark = pytest.mark.usefixtures("local_compute")  # off by default: enabled as staff would
BASE = "/api/v1/workspaces/team-a/jobs"
SECRETS = {
    "SECRET_KEY": "django-secret-of-the-worker",
    "DATABASE_URL": "postgres://dockyard:db-password-of-the-worker@db/dockyard",
    "FIELD_ENCRYPTION_KEYS": "encryption-key-of-the-worker",
    "AWS_SECRET_ACCESS_KEY": "cloud-key-of-the-worker",
}


def wait_for(predicate, timeout: float = 20.0, what: str = "the condition", interval: float = 0.05):
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"{what} was not reached within {timeout} s (last value: {value!r})")


def live_members(pgid: int) -> list[int]:
    """Live (not zombie) processes whose process group is `pgid`."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2:].split()
        if fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def group_gone(pgid: int) -> bool:
    """Nothing of the group is left: no live member now, and (once PID 1 has reaped the zombies) no member at all."""
    assert live_members(pgid) == [], f"processes of group {pgid} are still alive"
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def job_dir(settings, tmp_path):
    settings.DOCKYARD_JOB_DIR = tmp_path / "jobs"
    yield settings.DOCKYARD_JOB_DIR
    for pid_file in Path(settings.DOCKYARD_JOB_DIR).glob("*/*/" + runner.PID_FILE):
        pgid = int(pid_file.read_text().strip() or 0)
        if pgid and live_members(pgid):  # a test that failed half-way: stop what it started
            os.killpg(pgid, signal.SIGKILL)


@pytest.fixture
def worker(transactional_db, job_dir):
    app.control.purge()
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=15):
        yield
    app.control.purge()


@pytest.fixture
def task_runs():
    """(time, job id, tick) of every reconcile_job the worker starts, as it starts it."""
    runs: list[tuple[float, int, bool]] = []
    lock = threading.Lock()

    def record(sender=None, args=None, kwargs=None, **_):
        if sender is not None and sender.name == reconcile_job.name:
            with lock:
                runs.append((time.monotonic(), (args or [kwargs.get("job_id")])[0], bool((kwargs or {}).get("tick"))))

    task_prerun.connect(record, weak=False)
    yield runs
    task_prerun.disconnect(record)


def submit(api, **body) -> str:
    response = api.post(f"{BASE}/", {"compute": "local", **body}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()["name"]


def job_of(api, name: str) -> dict:
    response = api.get(f"{BASE}/{name}/")
    assert response.status_code == 200, response.json()
    return response.json()


def ended(api, name: str, timeout: float = 20.0) -> dict:
    return wait_for(lambda: (job := job_of(api, name))["status"] in ("Completed", "Failed", "Canceled") and job,
                    timeout, f"the end of job {name}")


def running(name: str, timeout: float = 20.0) -> Job:
    return wait_for(lambda: Job.objects.filter(name=name, status="Running").first(), timeout, f"job {name} running")


def log_of(api, name: str) -> list[str]:
    texts, url = [], f"{BASE}/{name}/logs?limit=500"
    while True:
        page = api.get(url).json()
        texts += [line["text"] for line in page["results"]]
        if page["complete"] or not page["results"]:
            return texts
        url = page["next"]


def events_of(api, name: str) -> list[dict]:
    data = api.get(f"{BASE}/{name}/events").json()
    return data["results"] if isinstance(data, dict) else data  # the list envelope (or a bare list)


def test_echo_and_python_complete_with_their_output(worker, owner_api, workspace):
    echo = submit(owner_api, command="echo hello world; echo second line")
    python = submit(owner_api, command="""python3 -c "print('answer', 6 * 7)" """)  # the system python3
    job = ended(owner_api, echo)
    assert (job["status"], job["exit_code"], job["status_reason"]) == ("Completed", 0, "")
    assert job["start_time"] and job["end_time"] and job["duration"] >= 0
    assert log_of(owner_api, echo) == ["hello world", "second line"]
    job = ended(owner_api, python)
    assert job["status"] == "Completed", job["status_reason"]
    assert log_of(owner_api, python) == ["answer 42"]
    reasons = [event["reason"] for event in events_of(owner_api, echo)]
    assert reasons[0] == "NotStarted" and "Started" in reasons and reasons[-1] == "Completed"


def test_a_failing_command_fails_with_its_exit_code(worker, owner_api, workspace):
    name = submit(owner_api, command="echo about to fail; echo on stderr >&2; exit 3")
    job = ended(owner_api, name)
    assert (job["status"], job["exit_code"]) == ("Failed", 3)
    assert job["status_reason"] == "The command exited with code 3."
    assert log_of(owner_api, name) == ["about to fail", "on stderr"]
    events = events_of(owner_api, name)
    assert events[-1]["reason"] == "Failed" and events[-1]["type"] == "Warning"


def test_a_command_killed_by_a_signal_fails_with_that_signal(worker, owner_api, workspace):
    job = ended(owner_api, submit(owner_api, command="kill -KILL $$"))
    assert (job["status"], job["exit_code"]) == ("Failed", 137)
    assert "signal 9" in job["status_reason"]


def test_cancel_stops_the_process_group(worker, owner_api, workspace):
    name = submit(owner_api, command="echo before; sleep 600 & sleep 600; echo never")
    pgid = running(name).runner["pid"]
    wait_for(lambda: len(live_members(pgid)) >= 3, 10, "the command's processes")
    wait_for(lambda: "before" in log_of(owner_api, name), 10, "the first line")
    begun = time.monotonic()
    response = owner_api.post(f"{BASE}/{name}/cancel")
    assert response.status_code == 202 and response.json()["status"] == "CancelRequested"
    job = ended(owner_api, name, timeout=10)
    assert job["status"] == "Canceled" and time.monotonic() - begun < 6
    assert "stopped" in job["status_reason"] and job["exit_code"] is None
    wait_for(lambda: group_gone(pgid), 15, "the end of the process group")
    assert log_of(owner_api, name) == ["before"]
    assert owner_api.post(f"{BASE}/{name}/cancel").status_code == 400  # it has ended: nothing to cancel


def test_cancel_before_the_first_look_cancels_without_starting(transactional_db, job_dir, owner_api, workspace):
    app.control.purge()
    name = submit(owner_api, command="echo should not run")  # no worker yet: the message waits in the queue
    assert owner_api.post(f"{BASE}/{name}/cancel").status_code == 202
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=15):
        job = ended(owner_api, name)
    app.control.purge()
    assert job["status"] == "Canceled" and not (run_folder(Job.objects.get(name=name)) / runner.PID_FILE).exists()


def test_timeout_fails_the_job_and_stops_its_processes(worker, owner_api, workspace):
    name = submit(owner_api, command="echo started; sleep 600", limits={"timeout": 2})
    pgid = running(name).runner["pid"]
    job = ended(owner_api, name, timeout=15)
    assert job["status"] == "Failed" and "timed out" in job["status_reason"], job["status_reason"]
    assert 2 <= job["duration"] < 8
    wait_for(lambda: group_gone(pgid), 15, "the end of the process group")
    assert log_of(owner_api, name) == ["started"]


def test_the_environment_has_the_job_variables_and_none_of_the_worker_secrets(worker, owner_api, workspace, monkeypatch):
    for key, value in SECRETS.items():
        monkeypatch.setenv(key, value)  # the worker's own environment (the worker runs in this process)
    name = submit(owner_api, command="env", environment_variables={"GREETING": "hi there", "EPOCHS": 3})
    job = ended(owner_api, name)
    assert job["status"] == "Completed", job["status_reason"]
    lines = log_of(owner_api, name)
    variables = dict(line.split("=", 1) for line in lines if "=" in line)
    assert variables["GREETING"] == "hi there" and variables["EPOCHS"] == "3"
    assert variables["DOCKYARD_JOB_NAME"] == name and variables["DOCKYARD_WORKSPACE"] == "team-a"
    assert variables["PATH"] == "/usr/local/bin:/usr/bin:/bin:/opt/dockyard/bin" and variables["HOME"] == variables["DOCKYARD_JOB_DIR"]
    for key in (*SECRETS, "CELERY_BROKER_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"):
        assert key not in variables
    text = "\n".join(lines)
    assert not [value for value in SECRETS.values() if value in text]


def test_python_runs_azure_mls_commands_on_a_host_with_only_python3(worker, owner_api, workspace):
    name = submit(owner_api, command="python -c 'import sys; print(sys.version_info[0])'")
    job = ended(owner_api, name)
    assert job["status"] == "Completed", (job["status_reason"], log_of(owner_api, name))
    assert log_of(owner_api, name) == ["3"]


def test_venv_comes_first_on_path(worker, owner_api, workspace, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    command = 'echo "PATH=$PATH"; echo "VIRTUAL_ENV=$VIRTUAL_ENV"; python -c "import sys; print(sys.prefix)"'
    name = submit(owner_api, command=command, environment={"venv": str(venv)})
    job = ended(owner_api, name)
    assert job["status"] == "Completed", job["status_reason"]
    path, virtual_env, prefix = log_of(owner_api, name)
    assert path.removeprefix("PATH=").split(os.pathsep)[0] == str(venv / "bin")
    assert virtual_env == f"VIRTUAL_ENV={venv}" and prefix == str(venv)


def test_inputs_are_substituted_and_outputs_folders_exist(worker, owner_api, workspace):
    inputs = {"lr": 0.01, "data": {"type": "uri_folder", "path": "/data/cifar"}, "run": {"type": "string", "default": "r-1"}}
    command = ("echo lr=${{inputs.lr}} data=${{inputs.data}} run=${{inputs.run}}; "
               "test -d ${{outputs.model}} && echo weights > ${{outputs.model}}/w.txt && echo wrote; pwd")
    name = submit(owner_api, command=command, inputs=inputs, outputs={"model": {"type": "uri_folder"}})
    job = ended(owner_api, name)
    assert job["status"] == "Completed", (job["status_reason"], log_of(owner_api, name))
    workdir = run_folder(Job.objects.get(name=name)) / "workdir"
    assert log_of(owner_api, name) == ["lr=0.01 data=/data/cifar run=r-1", "wrote", str(workdir)]
    assert (workdir / "outputs" / "model" / "w.txt").read_text() == "weights\n"


def test_two_jobs_at_once_both_complete(worker, owner_api, workspace):
    first = submit(owner_api, command="sleep 1.5; echo first")
    second = submit(owner_api, command="sleep 1.5; echo second")
    a, b = ended(owner_api, first), ended(owner_api, second)
    assert a["status"] == b["status"] == "Completed"
    assert log_of(owner_api, first) == ["first"] and log_of(owner_api, second) == ["second"]
    assert a["start_time"] < b["end_time"] and b["start_time"] < a["end_time"]  # they ran side by side


def test_deleting_a_running_job_kills_it_and_removes_the_row(worker, owner_api, workspace):
    name = submit(owner_api, command="sleep 600")
    job = running(name)
    pgid, folder = job.runner["pid"], run_folder(job)
    assert owner_api.delete(f"{BASE}/{name}/").status_code == 202
    wait_for(lambda: not Job.objects.filter(name=name).exists(), 15, "the row's removal")
    assert owner_api.get(f"{BASE}/{name}/").status_code == 404
    wait_for(lambda: group_gone(pgid), 15, "the end of the process group")
    assert not folder.exists()


def test_a_start_whose_record_was_not_saved_is_adopted_not_started_twice(transactional_db, job_dir, owner, workspace,
                                                                         monkeypatch):
    """The worker died between spawning the process and committing its pid: the next look finds the run folder."""
    monkeypatch.setattr(services, "_enqueue", lambda job: None)  # as if the message went with the dead worker
    app.control.purge()
    with transaction.atomic():
        job = services.job_create(user=owner, workspace=workspace, data={"command": "unused", "compute": "local"})
    folder = claim_run_folder(job)  # as _start does before it spawns
    process = runner.spawn("echo started; sleep 1; echo done", folder, folder / "workdir", {"PATH": os.environ["PATH"]})
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=15):
        resync_jobs.delay()
        job = wait_for(lambda: Job.objects.filter(pk=job.pk, status="Completed").first(), 20, "the adopted job's end")
    app.control.purge()
    assert job.runner["pid"] == process.pid and job.exit_code == 0
    assert [line.text for line in job.log_lines.all()] == ["started", "done"]


# The look-again chain: one per running job, none once it has ended, not broken by a busy row.


def hold_the_row(pk: int, seconds: float) -> threading.Thread:
    """Hold the job's row lock from another connection for a while, as a slow cancel or a look would."""
    from django.db import connection

    held = threading.Event()

    def hold():
        try:
            with transaction.atomic():
                Job.objects.select_for_update().get(pk=pk)
                held.set()
                time.sleep(seconds)
        finally:
            connection.close()

    thread = threading.Thread(target=hold)
    thread.start()
    assert held.wait(10)
    return thread


def test_looks_that_find_the_row_busy_do_not_end_the_chain(worker, owner_api, workspace, task_runs):
    name = submit(owner_api, command="sleep 3; echo done")
    pk = running(name).pk
    hold_the_row(pk, 2.0).join()  # every look in these two seconds finds the row locked and is skipped
    job = ended(owner_api, name, timeout=10)  # (no resync runs here: a chain that ended would leave it Running)
    assert job["status"] == "Completed" and log_of(owner_api, name) == ["done"]


def test_a_cancel_whose_own_message_is_lost_is_done_by_the_chain(worker, owner_api, workspace, monkeypatch):
    """The cancel's reconcile can find the row locked by a look and be skipped: the next look cancels."""
    name = submit(owner_api, command="sleep 600")
    pgid = running(name).runner["pid"]
    monkeypatch.setattr(services, "_enqueue", lambda job: None)
    assert owner_api.post(f"{BASE}/{name}/cancel").status_code == 202
    job = ended(owner_api, name, timeout=10)
    assert job["status"] == "Canceled"
    wait_for(lambda: group_gone(pgid), 15, "the end of the process group")


def ticks_of(runs, pk: int, since: float, until: float | None = None) -> int:
    return sum(1 for at, job_id, _ in list(runs) if job_id == pk and at >= since and (until is None or at < until))


def test_no_looks_are_scheduled_after_a_job_ends(worker, owner_api, workspace, task_runs):
    name = submit(owner_api, command="sleep 1.5; echo done")
    pk = running(name).pk
    wait_for(lambda: pending_looks(pk) == 1, 5, "the next look waiting in the broker")  # (what is counted below)
    job = ended(owner_api, name)
    assert job["status"] == "Completed"
    ended_at = time.monotonic()
    time.sleep(2.5)
    assert ticks_of(task_runs, pk, ended_at + 0.2) == 0  # (a look that was already due may still arrive)
    assert pending_looks(pk) == 0


def pending_looks(pk: int) -> int:
    """reconcile_job messages of the job in the broker: queued, or reserved by the worker until their countdown."""
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    queued = broker.lrange(settings.CELERY_TASK_DEFAULT_QUEUE, 0, -1)
    held = [json.loads(raw)[0] for raw in broker.hvals("unacked")]
    return sum(1 for message in queued + held if looks_at(message, pk))


def looks_at(message: bytes | dict, pk: int) -> bool:
    """Whether a broker message is a reconcile_job of the job."""
    message = json.loads(message) if isinstance(message, bytes) else message
    if message["headers"].get("task") != reconcile_job.name:
        return False
    args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
    return args[0] == pk


def test_a_resync_during_a_run_does_not_leave_a_second_chain(worker, owner_api, workspace, task_runs):
    name = submit(owner_api, command="sleep 9; echo done")
    pk = running(name).pk
    time.sleep(1.0)
    # Every way a second look can arrive: the resync (the heartbeat made to look stale), a redelivered submit, and
    # stray ticks at different phases of the chain's half-second rhythm.
    Job.objects.filter(pk=pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    assert resync_jobs() == 1
    reconcile_job.delay(pk)
    for offset in (0.0, 0.1, 0.2, 0.25, 0.3, 0.4):
        reconcile_job.apply_async((pk,), {"tick": True}, countdown=offset)
    time.sleep(2.5)  # duplicates find a fresh heartbeat and end
    start = time.monotonic()
    time.sleep(4.0)
    per_second = ticks_of(task_runs, pk, start, start + 4.0) / 4.0
    assert 1.0 <= per_second <= 2.5, f"{per_second} looks per second: more than one chain"
    job = ended(owner_api, name)
    assert job["status"] == "Completed" and log_of(owner_api, name) == ["done"]
    stop = time.monotonic()
    time.sleep(2.0)
    assert ticks_of(task_runs, pk, stop + 0.6) == 0
