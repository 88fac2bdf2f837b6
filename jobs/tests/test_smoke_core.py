"""Core paths of jobs, driven directly (no worker): local run, Kubernetes submit and observe."""
import time

import pytest

from compute import reconcile as compute_reconcile
from compute.models import ComputeTarget
from controlplane.kube import client as kube
from jobs import reconcile
from jobs.models import Job

pytestmark = pytest.mark.usefixtures("local_compute")  # off by default: enabled as staff would
BASE = "/api/v1/workspaces/team-a/jobs"


@pytest.fixture(autouse=True)
def job_dir(settings, tmp_path):
    settings.DOCKYARD_JOB_DIR = tmp_path / "jobs"
    kube._clients.clear()


def run_until_done(job_name, seconds=10):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        job = Job.objects.select_related("workspace", "compute").get(name=job_name)
        delay = reconcile.reconcile_job(job)
        if delay is None:
            return Job.objects.get(name=job_name)
        time.sleep(0.1)
    raise AssertionError("job did not finish")


def test_local_job_runs(owner_api, workspace):
    response = owner_api.post(f"{BASE}/", {"command": "echo hello ${{inputs.who}}; echo two", "compute": "local",
                                           "inputs": {"who": "world"}}, format="json")
    assert response.status_code == 201, response.json()
    job = run_until_done(response.json()["name"])
    assert job.status == "Completed", job.status_reason
    page = owner_api.get(f"{BASE}/{job.name}/logs").json()
    assert [line["text"] for line in page["results"]] == ["hello world", "two"]


def test_local_failure(owner_api, workspace):
    name = owner_api.post(f"{BASE}/", {"command": "exit 3", "compute": "local"}, format="json").json()["name"]
    job = run_until_done(name)
    assert job.status == "Failed" and job.exit_code == 3


def test_kubernetes_job(owner_api, workspace, fake_kube):
    body = {"name": "k8s", "type": "kubernetes", "kubeconfig": fake_kube.kubeconfig_yaml()}
    assert owner_api.post("/api/v1/workspaces/team-a/computes/", body, format="json").status_code == 201
    compute_reconcile.reconcile_compute(ComputeTarget.objects.get(name="k8s"))
    compute_reconcile.sync_cluster(ComputeTarget.objects.get(name="k8s").cluster)
    fake_kube.plan_pods(run_seconds=5, logs="epoch 1\nepoch 2\n")
    response = owner_api.post(f"{BASE}/", {"name": "train", "command": "python train.py", "compute": "azureml:k8s",
                                           "environment": {"image": "python:3.11"}}, format="json")
    assert response.status_code == 201, response.json()
    job = Job.objects.select_related("workspace", "compute").get(name="train")
    reconcile.reconcile_job(job)
    job.refresh_from_db()
    assert job.status == "Queued", job.status_reason
    fake_kube.advance(2)
    jobs = list(Job.objects.select_related("workspace", "compute", "compute__cluster").filter(name="train"))
    observed = reconcile.observe_compute(jobs[0].compute, jobs)
    reconcile.apply_observation(jobs[0], *observed[jobs[0].pk])
    assert Job.objects.get(name="train").status == "Running"
    fake_kube.advance(10)
    jobs = list(Job.objects.select_related("workspace", "compute", "compute__cluster").filter(name="train"))
    observed = reconcile.observe_compute(jobs[0].compute, jobs)
    reconcile.apply_observation(jobs[0], *observed[jobs[0].pk])
    job = Job.objects.get(name="train")
    assert job.status == "Completed", job.status_reason
    assert [line.text for line in job.log_lines.all()] == ["epoch 1", "epoch 2"]
