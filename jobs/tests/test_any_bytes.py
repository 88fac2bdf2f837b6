"""Logs take any bytes, and one job's trouble never stops the observation of the others (issue 9, finding 6).

A NUL in a job's output was refused by PostgreSQL: a local job stayed Running for ever (its cancel and delete failed
too), and on Kubernetes the error ended the compute's observation loop, so its other jobs never moved again. Here
the output holds NUL, bytes that are not UTF-8 and characters str.splitlines() would split at; the failures that
are left (a record that no longer makes sense, lines that cannot be stored) are put in the data, not mocked.
"""
import time

import pytest
from django.utils import timezone

from jobs import reconcile, tasks
from jobs.choices import TERMINAL
from jobs.manifests import kube_job_name
from jobs.models import Job, JobEvent, JobLogLine, JobSync
from jobs.spec import parse_job
from jobs.tests.test_kubernetes import attach, load, run_reconcile, submit
from tests.e2e_support import fresh_client_state, wait_for

BASE = "/api/v1/workspaces/team-a"
# A NUL, two bytes that are not UTF-8, a UTF-8 encoded surrogate (not valid UTF-8 either), and \x1c / U+2028, at
# which str.splitlines() (but not the kubelet) ends a line.
POISON = b"a\x00b\xff\xfe\nsep\x1cnext.part line\nlone \xed\xa0\x80 surrogate\nu\xe2\x80\xa8v\nend\n"
POISON_LINES = ["a\ufffdb\ufffd\ufffd", "sep\x1cnext.part line", "lone \ufffd\ufffd\ufffd surrogate", "u\u2028v", "end"]


@pytest.fixture(autouse=True)
def fresh_clients(fake_kube):
    fresh_client_state(fake_kube)
    yield
    fresh_client_state(fake_kube)


@pytest.fixture
def loop(monkeypatch):
    """look() runs one pass of the real observation task (tasks.observe_jobs); returns whether it asked for the next."""
    next_looks = []
    monkeypatch.setattr(tasks.observe_jobs, "apply_async", lambda *args, **kwargs: next_looks.append(kwargs))

    def look(compute) -> bool:
        JobSync.objects.filter(compute=compute).update(heartbeat_at=None)  # the loop's own pace is not the test's
        before = len(next_looks)
        tasks.observe_jobs.apply((compute.pk,), throw=True)
        return len(next_looks) > before

    return look


def pod_of(fake, job_name: str) -> str:
    kube_name = kube_job_name("team-a", job_name)
    return next(pod["metadata"]["name"] for pod in fake.list("pods", "default")
                if pod["metadata"]["labels"].get("dockyard.dev/job") == kube_name)


def texts(name: str) -> list[str]:
    return list(JobLogLine.objects.filter(job__name=name).order_by("seq").values_list("text", flat=True))


def test_a_poisoned_pod_log_is_stored_and_the_computes_other_job_completes(owner_api, workspace, fake_kube, loop):
    compute = attach(owner_api, fake_kube)
    fake_kube.plan_pods(run_seconds=5, logs="")  # only the lines appended below (not the fake's "no container" line)
    for name in ("poisoned", "clean"):
        submit(owner_api, name=name)
        run_reconcile(name)
    fake_kube.advance(1)
    fake_kube.append_pod_logs("default", pod_of(fake_kube, "poisoned"), POISON)
    fake_kube.append_pod_logs("default", pod_of(fake_kube, "clean"), "epoch 1\n")
    assert loop(compute)
    fake_kube.advance(5)
    assert loop(compute)

    assert (load("clean").status, texts("clean")) == ("Completed", ["epoch 1"])
    assert (load("poisoned").status, texts("poisoned")) == ("Completed", POISON_LINES)
    page = owner_api.get(f"{BASE}/jobs/poisoned/logs/").json()
    assert [line["text"] for line in page["results"]] == POISON_LINES
    download = owner_api.get(f"{BASE}/jobs/poisoned/logs/", {"download": "true"})
    assert download.content.decode() == "".join(f"{line}\n" for line in POISON_LINES)


def test_a_job_whose_observation_raises_is_marked_and_the_others_go_on(owner_api, workspace, fake_kube, loop):
    compute = attach(owner_api, fake_kube)
    fake_kube.plan_pods(run_seconds=5, logs="working\n")
    for name in ("unreadable", "drifted", "clean"):
        submit(owner_api, name=name)
        run_reconcile(name)
    # The record lost its Job's name (observe_compute raised KeyError); the other's line count fell behind its lines,
    # so its next lines collide with a stored one (IntegrityError inside the write).
    Job.objects.filter(name="unreadable").update(runner={"submitted": True, "namespace": "default"})
    drifted = load("drifted")
    JobLogLine.objects.create(job=drifted, seq=0, text="left over", time=timezone.now())
    fake_kube.advance(1)
    assert loop(compute)
    fake_kube.advance(5)
    assert loop(compute)  # the loop goes on: it asked for its next look every time

    assert (load("clean").status, texts("clean")) == ("Completed", ["working"])
    for name, error in (("unreadable", "KeyError: 'job'"), ("drifted", "IntegrityError")):
        job = load(name)
        assert job.status == "Queued"  # as it was: no look of it got through
        assert job.status_reason.startswith(f"Dockyard could not process what the cluster reports for this job ({error}")
        # said once, not at every look
        assert JobEvent.objects.filter(job=job, reason="ObservationFailed").count() == 1
    assert texts("drifted") == ["left over"]  # its failed look wrote nothing


# --- local jobs ------------------------------------------------------------------------------------------------------

@pytest.fixture
def local_job(workspace, settings, tmp_path):
    settings.DOCKYARD_JOB_DIR = tmp_path / "jobs"
    workspace.local_compute_enabled = True
    workspace.save(update_fields=["local_compute_enabled"])

    def make(name: str, command: str) -> Job:
        spec = parse_job({"name": name, "command": command, "compute": "local"})
        return Job.objects.create(workspace=workspace, name=name, spec=spec, compute_name="local", target="local")

    return make


def run_to_the_end(name: str) -> Job:
    """Look at the local job as the task's chain does, until it has ended."""
    def ended():
        reconcile.reconcile_job(Job.objects.select_related("workspace").get(name=name))
        job = Job.objects.get(name=name)
        return job if job.status in TERMINAL else time.sleep(0.05)

    return wait_for(ended, 30, 0, f"the end of job {name}")


def test_a_local_job_printing_nul_and_invalid_utf8_completes_with_a_readable_log(owner_api, local_job):
    local_job("nul", r"printf 'a\0b\xff\n'; printf 'done\n'")
    job = run_to_the_end("nul")
    assert (job.status, job.exit_code) == ("Completed", 0)
    assert texts("nul") == ["a\ufffdb\ufffd", "done"]
    page = owner_api.get(f"{BASE}/jobs/nul/logs/").json()
    assert [line["text"] for line in page["results"]] == ["a\ufffdb\ufffd", "done"]


def test_a_local_job_whose_output_cannot_be_stored_still_ends(owner_api, local_job):
    job = local_job("drifted", "echo first")
    JobLogLine.objects.create(job=job, seq=0, text="left over", time=timezone.now())  # the count fell behind
    job = run_to_the_end("drifted")
    assert (job.status, job.exit_code) == ("Completed", 0)
    warning = JobEvent.objects.get(job=job, reason="OutputLost")
    assert warning.type == "Warning" and "IntegrityError" in warning.message
    assert owner_api.delete(f"{BASE}/jobs/drifted/").status_code == 202
    reconcile.reconcile_job(Job.objects.select_related("workspace").get(name="drifted"))
    assert not Job.objects.filter(name="drifted").exists()
