"""Jobs in a real browser, run by a real Celery worker: submit a local job, follow its log live to the end, cancel one.

The worker runs in a thread of the test process on the configured broker (tests/e2e_support.py); the log pane is the
browser's own EventSource on the REST API's `logs?follow=true` stream, signed in with the studio's session.
"""
import re
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from compute.models import Cluster, ComputeTarget
from jobs.models import Job, JobLogLine
from jobs.spec import parse_job
from tests.e2e_support import in_process_worker
from workspaces.choices import Role
from workspaces.models import Membership, Workspace
from workspaces.services import workspace_create

from .conftest import sign_in

pytestmark = pytest.mark.browser

# Two seconds a line: time enough, on a busy machine, to open the Logs tab while the job still runs.
MANIFEST = {
    "apiVersion": "batch/v1", "kind": "Job",
    "metadata": {"name": "resnet-ddp-3f2a1c", "namespace": "ml", "labels": {"dockyard.dev/job": "resnet-ddp-3f2a1c"}},
    "spec": {"completionMode": "Indexed", "completions": 2, "parallelism": 2, "backoffLimit": 0, "template": {"spec": {
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime",
                        "command": ["bash", "-c", "torchrun train.py --epochs 2"],
                        "resources": {"requests": {"cpu": "100m", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}}}]}}},
}
COUNT_TO_THREE = "for i in 1 2 3; do echo line $i; sleep 2; done"


@pytest.fixture
def worker(transactional_db, settings, tmp_path):
    """A real worker; local jobs get their folders under the test's tmp_path."""
    settings.DOCKYARD_JOB_DIR = tmp_path / "jobs"
    with in_process_worker():
        yield


@pytest.fixture
def people(django_user_model):
    """Olivia owns workspace "vision"; Bob may only read it."""
    olivia = django_user_model.objects.create_user(username="olivia", password="correct-horse-battery")
    bob = django_user_model.objects.create_user(username="bob", password="correct-horse-battery")
    workspace = workspace_create(user=olivia, name="vision", display_name="Vision team")
    workspace.local_compute_enabled = True  # off by default: enabled as staff would
    workspace.save(update_fields=["local_compute_enabled"])
    Membership.objects.create(workspace=workspace, user=bob, role=Role.READER)
    return olivia, bob


def fill_local_job(page, command: str, display_name: str) -> None:
    page.get_by_label("Compute").select_option("local")
    page.get_by_label("Command").fill(command)
    page.get_by_label("Display name").fill(display_name)


def job_name_of(page) -> str:
    return re.search(r"/jobs/([^/]+)/", page.url).group(1)


@pytest.fixture
def shot(screenshot):
    """A full-page screenshot from the top (scrolled, the sticky top bar would be drawn mid-page)."""
    def take(page, name: str) -> None:
        page.evaluate("window.scrollTo(0, 0)")
        screenshot(page, name)

    return take


def test_submit_a_local_job_and_follow_its_log(worker, people, page, shot):
    sign_in(page, "olivia")
    page.goto("/w/vision/compute/")
    page.locator(".sidenav").get_by_role("link", name="Jobs").click()
    expect(page.get_by_text("No jobs yet")).to_be_visible()
    shot(page, "jobs-01-empty")

    # A bad submission first: the error sits at its field and nothing is created
    page.get_by_role("link", name="Create").click()
    page.get_by_label("Compute").select_option("local")
    page.get_by_label("Instance count").fill("3")
    page.get_by_label("Command").fill("echo hi")
    page.get_by_role("button", name="Submit").click()
    expect(page.locator(".field", has=page.locator("#id_instance_count")).locator(".invalid-feedback")).to_contain_text(
        "instance_count must be 1")
    shot(page, "jobs-02-form-error")
    assert not Job.objects.exists()

    # The form and its live YAML
    page.get_by_label("Instance count").fill("1")
    fill_local_job(page, COUNT_TO_THREE, "Count to three")
    page.get_by_label("Experiment").fill("demo")
    page.get_by_label("Environment variables").fill("GREETING=hello")
    preview = page.locator("#yaml-preview")
    expect(preview).to_contain_text("compute: local")
    expect(preview).to_contain_text("display_name: Count to three")
    expect(preview).to_contain_text("GREETING: hello")
    shot(page, "jobs-03-form")
    page.get_by_role("button", name="Submit").click()

    # The job's page: its log follows live until the job ends, and the badge reaches Completed
    expect(page.get_by_role("heading", name="Count to three")).to_be_visible()
    name = job_name_of(page)
    page.locator(".hub-tabs").get_by_role("link", name=re.compile("^Logs")).click()
    log = page.locator("#job-log")
    expect(page.locator("#log-state")).to_have_attribute("data-state", "following")
    expect(log).to_contain_text("line 1")
    shot(page, "jobs-05-logs-following")
    expect(page.locator("#log-state")).to_have_attribute("data-state", "ended", timeout=20_000)
    expect(page.locator("#log-state")).to_contain_text("Completed (exit code 0)")
    expect(log.locator(".log-line")).to_have_text(["line 1", "line 2", "line 3"])  # each once, in order
    expect(page.locator("#job-status [data-state]")).to_have_attribute("data-state", "Completed")
    expect(page.get_by_role("button", name="Cancel")).to_have_count(0)
    shot(page, "jobs-06-logs-ended")
    job = Job.objects.get(name=name)
    assert (job.status, job.exit_code, job.log_line_count) == ("Completed", 0, 3)

    # The other tabs
    page.locator(".hub-tabs").get_by_role("link", name="Overview").click()
    expect(page.locator("#job-properties tr", has_text="Exit code").locator("td")).to_have_text("0")
    shot(page, "jobs-07-overview-completed")
    page.locator(".hub-tabs").get_by_role("link", name="YAML").click()
    expect(page.locator("#job-yaml")).to_contain_text("GREETING: hello")
    shot(page, "jobs-08-yaml")
    page.locator(".hub-tabs").get_by_role("link", name="Outputs").click()
    expect(page.locator("#job-outputs")).to_contain_text("No output files")  # it wrote nothing to ./outputs
    page.locator(".hub-tabs").get_by_role("link", name="Kubernetes manifest").click()
    expect(page.get_by_text("Not a Kubernetes job")).to_be_visible()
    page.locator(".hub-tabs").get_by_role("link", name=re.compile("^Events")).click()
    expect(page.locator('tr[data-reason="Completed"]')).to_be_visible()
    shot(page, "jobs-09-events")

    # The list, filtered in the URL
    page.get_by_role("navigation", name="breadcrumb").get_by_role("link", name="Jobs").click()
    expect(page.locator(f'tr[data-job="{name}"] [data-state]')).to_have_attribute("data-state", "Completed")
    page.get_by_label("Status").select_option("Completed")
    expect(page).to_have_url(re.compile(r"status=Completed"))
    expect(page.locator(f'tr[data-job="{name}"]')).to_be_visible()
    shot(page, "jobs-10-list")


def test_cancel_a_running_job_and_what_a_reader_sees(worker, people, page, shot):
    sign_in(page, "olivia")
    page.goto("/w/vision/jobs/new/form/")
    fill_local_job(page, "echo started; sleep 60", "Long sleep")
    page.get_by_role("button", name="Submit").click()
    expect(page.get_by_role("heading", name="Long sleep")).to_be_visible()
    name = job_name_of(page)
    expect(page.locator("#job-status [data-state]")).to_have_attribute("data-state", "Running")
    shot(page, "jobs-04-overview-running")
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Cancel").click()
    expect(page.locator("#job-status [data-state]")).to_have_attribute("data-state", "Canceled", timeout=15_000)
    shot(page, "jobs-11-canceled")
    page.locator(".hub-tabs").get_by_role("link", name=re.compile("^Logs")).click()
    expect(page.locator("#job-log")).to_contain_text("started")
    assert Job.objects.get(name=name).status == "Canceled"

    # Bob reads: no New job, no Cancel, Clone or Delete
    page.get_by_test_id("user-menu").click()
    page.get_by_role("button", name="Sign out").click()
    sign_in(page, "bob")
    page.goto("/w/vision/jobs/")
    expect(page.locator(f'tr[data-job="{name}"]')).to_be_visible()
    expect(page.get_by_role("link", name="New job")).to_have_count(0)
    shot(page, "jobs-12-reader-list")
    page.locator(f'tr[data-job="{name}"]').get_by_role("link").click()
    expect(page.get_by_role("heading", name="Long sleep")).to_be_visible()
    for button in ("Cancel", "Delete", "Clone"):
        expect(page.get_by_role("button", name=button)).to_have_count(0)
    expect(page.get_by_role("link", name="Clone")).to_have_count(0)


def test_kubernetes_jobs_as_the_worker_leaves_them(transactional_db, people, page, shot):
    """No cluster here: records as reconcile leaves them (queued, failed across ranks) to see how they read."""
    olivia, _ = people
    workspace = Workspace.objects.get(name="vision")
    cluster = Cluster.objects.create(server="https://k8s.example.internal:6443")
    compute = ComputeTarget.objects.create(workspace=workspace, name="gpu-k8s", type="kubernetes", cluster=cluster,
                                           provisioning_state="Succeeded", properties={"namespace": "ml"})
    body = {"command": "torchrun train.py --epochs 2", "compute": "azureml:gpu-k8s", "experiment_name": "resnet",
            "environment": {"image": "pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime"}, "tags": {"owner": "vision"},
            "resources": {"instance_type": "defaultinstancetype", "instance_count": 2}, "distribution": {"type": "pytorch"}}
    now = timezone.now()
    failed = Job.objects.create(
        workspace=workspace, name="resnet-ddp", display_name="ResNet DDP", experiment_name="resnet",
        spec={**parse_job({**body, "name": "resnet-ddp"}), "compute": "gpu-k8s"}, compute_name="gpu-k8s",
        target="kubernetes", compute=compute, instance_type="defaultinstancetype", status="Failed", exit_code=1,
        status_reason="Pod resnet-ddp-1 (rank 1) failed: exit code 1.", start_time=now - timedelta(minutes=3),
        end_time=now, created_by=olivia, manifests=[MANIFEST], tags={"owner": "vision"}, log_line_count=4)
    for seq, (source, text) in enumerate([("rank-0", "epoch 1 loss 2.31"), ("rank-1", "epoch 1 loss 2.29"),
                                          ("rank-0", "epoch 2 loss 1.87"), ("rank-1", "CUDA error: out of memory")]):
        JobLogLine.objects.create(job=failed, seq=seq, source=source, text=text, time=now)
    Job.objects.create(
        workspace=workspace, name="big-sweep", display_name="Big sweep", experiment_name="resnet",
        spec={**parse_job({**body, "name": "big-sweep"}), "compute": ""}, compute_name="", target="serverless",
        status="Queued", created_by=olivia,
        status_reason="Waiting for capacity: no Kubernetes compute of this workspace has a ready node that fits any "
                      "instance type; the job is placed when one does.")

    sign_in(page, "olivia")
    page.goto("/w/vision/jobs/")
    expect(page.locator('tr[data-job="big-sweep"] [data-state]')).to_have_attribute("data-state", "Queued")
    shot(page, "jobs-13-list-kubernetes")
    page.get_by_role("link", name="ResNet DDP").click()
    expect(page.locator(".status-reason")).to_contain_text("rank 1")
    shot(page, "jobs-14-failed-overview")
    page.locator(".hub-tabs").get_by_role("link", name=re.compile("^Logs")).click()
    expect(page.locator("#job-log .log-source").first).to_have_text("[rank-0]")
    shot(page, "jobs-15-logs-ranks")
    page.locator(".hub-tabs").get_by_role("link", name="Outputs").click()
    expect(page.locator("#job-outputs")).to_contain_text("No outputs kept")
    page.locator(".hub-tabs").get_by_role("link", name="Kubernetes manifest").click()
    expect(page.locator("#job-manifest")).to_contain_text("kind: Job")
    shot(page, "jobs-16-manifest")
    page.goto("/w/vision/jobs/big-sweep/")
    expect(page.locator(".status-reason")).to_contain_text("Waiting for capacity")
    expect(page.get_by_role("button", name="Cancel")).to_be_visible()
    shot(page, "jobs-17-queued")


# One word longer than any pane is wide (YAML cannot fold it), then the flag whose end must stay visible.
LONG_COMMAND = "python train.py --data=" + "/".join(f"folder-{index}" for index in range(60)) + " --last-flag"


@pytest.fixture
def waiting_job(transactional_db, people) -> Job:
    """A serverless job that waits in Queued, printed nothing, and has a command far wider than any pane."""
    olivia, _ = people
    body = {"command": LONG_COMMAND, "environment": {"image": "python:3.11"}}
    return Job.objects.create(
        workspace=Workspace.objects.get(name="vision"), name="waits", display_name="Waits for a node",
        spec=parse_job({**body, "name": "waits"}), compute_name="", target="serverless", status="Queued",
        created_by=olivia, status_reason="Waiting for a node: insufficient cpu")


def test_the_log_of_a_silent_queued_job_says_why_it_waits_at_once(waiting_job, page, shot):
    sign_in(page, "olivia")
    page.goto("/w/vision/jobs/waits/")
    page.locator(".hub-tabs").get_by_role("link", name=re.compile("^Logs")).click()
    # The stream's first event comes at once: well before its first keepalive (15 s), which ended "Connecting…".
    expect(page.locator("#log-state")).to_have_attribute("data-state", "following", timeout=5_000)
    expect(page.locator("#log-state")).to_contain_text("Queued: Waiting for a node: insufficient cpu", timeout=5_000)
    expect(page.locator("#job-log .log-empty")).to_contain_text("Queued: Waiting for a node: insufficient cpu")
    shot(page, "jobs-18-queued-log-says-why")


def test_yaml_panes_wrap_long_lines_instead_of_cutting_them(waiting_job, page, shot):
    sign_in(page, "olivia")
    page.goto("/w/vision/jobs/waits/")
    page.locator(".hub-tabs").get_by_role("link", name="YAML").click()
    pane = page.locator("#job-yaml")
    expect(pane).to_contain_text("--last-flag")
    # Nothing hidden to the right: the pane is no wider inside than it shows, and the line's end is inside it.
    assert pane.evaluate("pre => pre.scrollWidth <= pre.clientWidth + 1")
    inside = pane.evaluate("""pre => {
        const range = document.createRange();
        const text = pre.querySelector("code").firstChild;
        const at = text.data.indexOf("--last-flag");
        range.setStart(text, at); range.setEnd(text, at + "--last-flag".length);
        const word = range.getBoundingClientRect(), box = pre.getBoundingClientRect();
        return word.right <= box.right && word.left >= box.left;
    }""")
    assert inside
    shot(page, "jobs-19-yaml-long-lines")
