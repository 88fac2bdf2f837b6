"""Kubernetes jobs against the fake API server, through the real client: submit, observe, logs, cancel, delete, faults.

Reconcile and the observation are driven by hand (`reconcile_job`, `observe`) and the fake's clock by `advance()`,
so every step is deterministic. The last tests run the same path end to end: the REST API, a real Celery worker
(tasks reconcile_job and the observe_jobs loop) and the fake following the wall clock.
"""
import time
from datetime import timedelta

import pytest
from celery.exceptions import Retry
from django.utils import timezone
from kubernetes import client

from compute import reconcile as compute_reconcile
from compute.models import ComputeTarget, InstanceType
from controlplane.kube import client as kube
from controlplane.reconciling import backoff
from jobs import reconcile, tasks
from jobs.manifests import kube_job_name
from jobs.models import Job, JobSync
from tests.e2e_support import attach as attach_through_the_worker
from tests.e2e_support import fresh_client_state, in_process_worker, wait_for

BASE = "/api/v1/workspaces/team-a"
GROUP = "batch"
A100 = {"name": "a100", "nodeSelector": {"gpu": "a100"},
        "resources": {"requests": {"cpu": "1", "memory": "4Gi"}, "limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 1}}}
ALL_GPUS = {"name": "gpu4", "resources": {"requests": {"cpu": "1", "memory": "4Gi"},
                                          "limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 4}}}


@pytest.fixture(autouse=True)
def fresh_clients(fake_kube):
    fresh_client_state(fake_kube)
    yield
    fresh_client_state(fake_kube)


@pytest.fixture
def api(owner_api, workspace):
    return owner_api


@pytest.fixture
def compute(api, fake_kube):
    return attach(api, fake_kube)


def attach(api, fake, name: str = "k8s", **fields) -> ComputeTarget:
    """Attach the fake through the API and run the compute's reconcile and node sync, as the worker would."""
    body = {"name": name, "type": "kubernetes", "kubeconfig": fake.kubeconfig_yaml(), **fields}
    response = api.post(f"{BASE}/computes/", body, format="json")
    assert response.status_code == 201, response.json()
    compute_reconcile.reconcile_compute(ComputeTarget.objects.get(name=name))
    compute_reconcile.sync_cluster(ComputeTarget.objects.get(name=name).cluster)
    compute = ComputeTarget.objects.select_related("cluster").get(name=name)
    assert compute.provisioning_state == "Succeeded", compute.provisioning_errors
    return compute


def add_instance_type(api, compute: ComputeTarget, body: dict) -> None:
    response = api.post(f"{BASE}/computes/{compute.name}/instancetypes/", body, format="json")
    assert response.status_code == 201, response.json()
    compute_reconcile.reconcile_instance_type(InstanceType.objects.get(cluster=compute.cluster, name=body["name"]))


def submit(api, **body) -> str:
    body = {"command": "python train.py", "compute": "azureml:k8s", "environment": {"image": "python:3.11"}, **body}
    response = api.post(f"{BASE}/jobs/", body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()["name"]


def load(name: str) -> Job:
    return Job.objects.select_related("workspace", "compute", "compute__cluster").get(name=name)


def run_reconcile(name: str) -> Job:
    reconcile.reconcile_job(load(name))
    return load(name)


def observe(compute: ComputeTarget) -> None:
    """One look of the compute's observation loop (what tasks.observe_jobs does each tick)."""
    jobs = tasks._watched(compute.pk)
    if jobs:
        observed = reconcile.observe_compute(jobs[0].compute, jobs)
        for job in jobs:
            reconcile.apply_observation(job, *observed[job.pk])


def live_job(fake, name: str) -> dict | None:
    return fake.get("jobs", kube_job_name("team-a", name), "default", group=GROUP)


def pods_of(fake, name: str) -> list[dict]:
    kube_name = kube_job_name("team-a", name)
    return sorted((pod for pod in fake.list("pods", "default") if pod["metadata"]["labels"].get("dockyard.dev/job") == kube_name),
                  key=lambda pod: pod["metadata"]["name"])


def job_writes(fake) -> list:
    return [r for r in fake.requests.writes() if r.resource == "jobs"]


def lines(name: str) -> list[tuple[str, str]]:
    return [(line.source, line.text) for line in load(name).log_lines.all()]


# --- the lifecycle -------------------------------------------------------------------------------

def test_a_node_selector_no_node_matches_queues_the_job_until_a_node_appears(api, fake_kube, compute):
    add_instance_type(api, compute, A100)
    fake_kube.plan_pods(run_seconds=5, logs="epoch 1\nepoch 2\n")
    name = submit(api, name="train", resources={"instance_type": "a100"})
    job = run_reconcile(name)
    kube_name = kube_job_name("team-a", name)
    assert (job.status, job.status_reason) == ("Queued", f"Submitted as Job {kube_name}; waiting for its pods to be scheduled.")
    live = live_job(fake_kube, name)
    assert live["spec"]["template"]["spec"]["nodeSelector"] == {"gpu": "a100"}
    assert live["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"

    observe(compute)
    job = load(name)
    assert (job.status, job.status_reason) == ("Queued", "Waiting for a node: no node matches the nodeSelector gpu=a100.")
    assert job.start_time is None and not job.log_lines.exists()
    assert api.get(f"{BASE}/jobs/{name}/").json()["status_reason"] == job.status_reason

    fake_kube.add_node("a100-node-0", gpu=2, labels={"gpu": "a100"})
    fake_kube.advance(1)
    observe(compute)
    job = load(name)
    assert job.status == "Running" and job.start_time is not None and job.status_reason == ""
    assert pods_of(fake_kube, name)[0]["spec"]["nodeName"] == "a100-node-0"

    fake_kube.advance(5)
    observe(compute)
    job = load(name)
    assert (job.status, job.exit_code, job.status_reason) == ("Completed", 0, "")
    assert job.end_time is not None and job.start_time <= job.end_time
    assert lines(name) == [("", "epoch 1"), ("", "epoch 2")]
    body = api.get(f"{BASE}/jobs/{name}/").json()
    assert body["status"] == "Completed" and body["duration"] is not None and body["log_lines"] == 2
    assert [event.reason for event in job.events.all()] == ["NotStarted", "Queued", "Running", "Completed"]


def test_insufficient_gpus_queue_the_job_until_capacity_is_freed(api, fake_kube, compute):
    add_instance_type(api, compute, ALL_GPUS)
    fake_kube.plan_pods(run_seconds=None)  # both run until told
    first, second = submit(api, name="first", resources={"instance_type": "gpu4"}), submit(api, name="second", resources={"instance_type": "gpu4"})
    run_reconcile(first), run_reconcile(second)
    fake_kube.advance(1)
    observe(compute)
    assert load(first).status == "Running"
    job = load(second)
    assert (job.status, job.status_reason) == ("Queued", "Waiting for a node: insufficient nvidia.com/gpu.")

    fake_kube.finish_pod("default", pods_of(fake_kube, first)[0]["metadata"]["name"])
    fake_kube.advance(1)
    observe(compute)
    assert (load(first).status, load(second).status) == ("Completed", "Running")


def test_the_extension_selector_joins_the_instance_types(api, fake_kube):
    compute = attach(api, fake_kube, node_selector={"pool": "training"})
    add_instance_type(api, compute, A100)
    name = submit(api, resources={"instance_type": "a100"})
    run_reconcile(name)
    assert live_job(fake_kube, name)["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "training", "gpu": "a100"}
    observe(compute)
    assert load(name).status_reason == "Waiting for a node: no node matches the nodeSelector gpu=a100, pool=training."


def test_a_failing_command_fails_the_job_with_its_exit_code(api, fake_kube, compute):
    fake_kube.plan_pods(run_seconds=2, exit_code=3, logs="Traceback (most recent call last):\nValueError: bad lr\n")
    name = submit(api)
    run_reconcile(name)
    fake_kube.advance(5)
    observe(compute)
    job = load(name)
    assert (job.status, job.exit_code, job.status_reason) == ("Failed", 3, "The command exited with code 3.")
    assert job.end_time is not None
    assert lines(name)[-1] == ("", "ValueError: bad lr")
    assert job.events.last().type == "Warning"


def test_limits_timeout_fails_the_job_as_timed_out(api, fake_kube, compute):
    fake_kube.plan_pods(run_seconds=None)
    name = submit(api, limits={"timeout": 30})
    run_reconcile(name)
    assert live_job(fake_kube, name)["spec"]["activeDeadlineSeconds"] == 30
    fake_kube.advance(10)
    observe(compute)
    assert load(name).status == "Running"
    fake_kube.advance(25)
    observe(compute)
    job = load(name)
    assert (job.status, job.status_reason) == ("Failed", "The job timed out after 30 s (limits.timeout).")
    assert not [pod for pod in pods_of(fake_kube, name) if pod["status"]["phase"] == "Running"]


def test_an_image_that_cannot_be_pulled_keeps_the_job_queued_naming_the_image(api, fake_kube, compute):
    plan = fake_kube.plan_pods(run_seconds=3, image_pull_error="ErrImagePull")
    name = submit(api, environment={"image": "ghcr.io/team/trainer:v9"})
    run_reconcile(name)
    fake_kube.advance(1)
    observe(compute)
    job = load(name)
    assert job.status == "Queued"
    assert job.status_reason.startswith("The image ghcr.io/team/trainer:v9 cannot be pulled (ErrImagePull): rpc error: "
                                        'code = NotFound desc = failed to pull and unpack image "ghcr.io/team/trainer:v9"')
    fake_kube.advance(1)
    observe(compute)
    assert load(name).status_reason.startswith("The image ghcr.io/team/trainer:v9 cannot be pulled (ImagePullBackOff): "
                                               'Back-off pulling image "ghcr.io/team/trainer:v9": ErrImagePull: ')
    assert not fake_kube.requests.find(subresource="log")  # nothing to read from a container that never started

    plan.image_pull_error = None  # pushed: the kubelet's next attempt (10 s after the first) pulls it
    fake_kube.advance(9)
    observe(compute)
    assert load(name).status == "Running"


# --- logs ----------------------------------------------------------------------------------------

def test_logs_of_every_rank_are_fetched_incrementally_and_outlive_the_pods(api, fake_kube, compute):
    name = submit(api, name="ddp", resources={"instance_count": 3},
                  distribution={"type": "pytorch", "process_count_per_instance": 2})
    kube_name = kube_job_name("team-a", name)
    for rank in range(3):
        fake_kube.plan_pods(name_prefix=f"{kube_name}-{rank}-", run_seconds=20, logs=f"rank {rank} up\n")
    run_reconcile(name)
    service = fake_kube.get("services", kube_name, "default")
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["publishNotReadyAddresses"] is True
    pods = pods_of(fake_kube, name)
    assert [pod["spec"]["hostname"] for pod in pods] == [f"{kube_name}-{rank}" for rank in range(3)]
    assert {pod["spec"]["subdomain"] for pod in pods} == {kube_name}

    fake_kube.advance(1)
    observe(compute)
    assert sorted(lines(name)) == [("rank-0", "rank 0 up"), ("rank-1", "rank 1 up"), ("rank-2", "rank 2 up")]
    rank1 = pods[1]["metadata"]["name"]
    fake_kube.append_pod_logs("default", rank1, "same second")  # the same stamp (to the second) as the line before
    fake_kube.advance(2)
    fake_kube.append_pod_logs("default", rank1, "epoch 1\nepoch 2")
    fake_kube.requests.clear()
    observe(compute)
    assert [text for source, text in lines(name) if source == "rank-1"] == ["rank 1 up", "same second", "epoch 1", "epoch 2"]
    log_reads = fake_kube.requests.find(subresource="log")
    assert len(log_reads) == 3 and all(r.query["sinceTime"].endswith("Z") and r.query["timestamps"] == "true"
                                       for r in log_reads)  # only what came after the last stored line
    observe(compute)
    assert len(lines(name)) == 6  # a look with nothing new adds nothing

    fake_kube.advance(20)
    observe(compute)
    job = load(name)
    assert job.status == "Completed" and job.log_line_count == 6
    fake_kube.delete("jobs", kube_name, "default", group=GROUP)  # e.g. a TTL: the pods go with the Job
    assert not pods_of(fake_kube, name)
    page = api.get(f"{BASE}/jobs/{name}/logs").json()
    assert sorted((line["source"], line["text"]) for line in page["results"]) == sorted(lines(name))
    assert page["complete"] is True


def test_a_log_read_that_fails_transiently_does_not_hold_up_the_status_and_is_read_again(api, fake_kube, compute):
    name = submit(api, resources={"instance_count": 2})
    kube_name = kube_job_name("team-a", name)
    for rank in range(2):
        fake_kube.plan_pods(name_prefix=f"{kube_name}-{rank}-", run_seconds=2, logs=f"rank {rank} last words\n")
    run_reconcile(name)
    fake_kube.advance(5)  # the pods started and finished between two looks
    rank1 = pods_of(fake_kube, name)[1]["metadata"]["name"]
    fake_kube.faults.once("500", path=rf"/pods/{rank1}/log$")
    observe(compute)
    job = load(name)
    assert job.status == "Completed"  # status first; rank 1's last lines are caught up later
    assert lines(name) == [("rank-0", "rank 0 last words")]
    assert api.get(f"{BASE}/jobs/{name}/logs").json()["complete"] is False  # not every line is in yet
    observe(compute)
    assert lines(name) == [("rank-0", "rank 0 last words"), ("rank-1", "rank 1 last words")]  # none read twice
    assert api.get(f"{BASE}/jobs/{name}/logs").json()["complete"] is True
    fake_kube.requests.clear()
    observe(compute)
    assert not fake_kube.requests.find(subresource="log") and tasks._watched(compute.pk) == []


def test_a_job_whose_kubelet_does_not_answer_completes_and_its_logs_are_caught_up_once(api, fake_kube, compute):
    name = submit(api)
    kube_name = kube_job_name("team-a", name)
    fake_kube.plan_pods(name_prefix=f"{kube_name}-", run_seconds=5, logs="epoch 1\n")
    run_reconcile(name)
    fake_kube.advance(1)
    observe(compute)
    assert (load(name).status, lines(name)) == ("Running", [("", "epoch 1")])
    pod = pods_of(fake_kube, name)[0]["metadata"]["name"]
    fake_kube.append_pod_logs("default", pod, "epoch 2\nepoch 3")
    fake_kube.fail_pod_logs("default", pod)  # its node lost its address: every log read is a 500
    fake_kube.advance(5)
    observe(compute)
    job = load(name)
    assert (job.status, job.exit_code) == ("Completed", 0)
    observe(compute)  # still failing: the job stays Completed, the loop keeps it for its log
    assert lines(name) == [("", "epoch 1")] and [job.pk for job in tasks._watched(compute.pk)] == [job.pk]
    fake_kube.fail_pod_logs("default", pod, None)
    observe(compute)
    observe(compute)
    assert lines(name) == [("", "epoch 1"), ("", "epoch 2"), ("", "epoch 3")]  # caught up, nothing twice
    assert tasks._watched(compute.pk) == [] and load(name).status == "Completed"


def test_a_rank_whose_log_is_refused_does_not_cost_the_others_theirs(api, fake_kube, compute):
    name = submit(api, resources={"instance_count": 2})
    kube_name = kube_job_name("team-a", name)
    for rank in range(2):
        fake_kube.plan_pods(name_prefix=f"{kube_name}-{rank}-", run_seconds=2, logs=f"rank {rank} last words\n")
    run_reconcile(name)
    fake_kube.forbid(verb="get", resource="pods/log", name=pods_of(fake_kube, name)[0]["metadata"]["name"])
    fake_kube.advance(5)
    observe(compute)
    assert (load(name).status, lines(name)) == ("Completed", [("rank-1", "rank 1 last words")])


# --- cancel and delete ---------------------------------------------------------------------------

def test_cancel_deletes_the_job_in_the_foreground_and_keeps_its_logs(api, fake_kube, compute):
    fake_kube.plan_pods(run_seconds=None, logs="step 1\n")
    name = submit(api)
    run_reconcile(name)
    fake_kube.advance(1)
    fake_kube.append_pod_logs("default", pods_of(fake_kube, name)[0]["metadata"]["name"], "step 2")
    response = api.post(f"{BASE}/jobs/{name}/cancel")
    assert response.status_code == 202 and response.json()["status"] == "CancelRequested"
    assert reconcile.reconcile_job(load(name)) == reconcile.LOOK_AGAIN
    # As on a real cluster, the Job stays a moment (deletionTimestamp, foregroundDeletion) while its pods go first.
    assert live_job(fake_kube, name)["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert load(name).status == "CancelRequested"
    fake_kube.advance(1)
    job = run_reconcile(name)
    assert (job.status, job.status_reason) == ("Canceled", "Canceled by request.")
    assert job.end_time is not None and job.observed_generation == job.generation
    deletes = [r for r in fake_kube.requests.find(verb="delete") if r.resource == "jobs"]
    assert deletes and all(delete.body == {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Foreground"}
                           for delete in deletes)
    assert live_job(fake_kube, name) is None and not pods_of(fake_kube, name)
    assert lines(name) == [("", "step 1"), ("", "step 2")]  # read before the pod went
    assert api.post(f"{BASE}/jobs/{name}/cancel").status_code == 400  # it has ended


def test_deleting_the_record_removes_the_cluster_objects_first(api, fake_kube, compute, kube_api):
    name = submit(api, resources={"instance_count": 2}, distribution={"type": "pytorch", "process_count_per_instance": 1})
    kube_name = kube_job_name("team-a", name)
    run_reconcile(name)
    batch = client.BatchV1Api(kube_api)
    batch.patch_namespaced_job(kube_name, "default", {"metadata": {"finalizers": ["example.com/hold"]}})
    assert api.delete(f"{BASE}/jobs/{name}/").status_code == 202

    assert reconcile.reconcile_job(load(name)) == reconcile.LOOK_AGAIN
    fake_kube.advance(1)  # the garbage collector deletes the pods of the foreground-deleted Job
    assert reconcile.reconcile_job(load(name)) == reconcile.LOOK_AGAIN
    job = load(name)  # the row stays while the Job does
    assert job.deleting and live_job(fake_kube, name)["metadata"]["deletionTimestamp"]
    assert fake_kube.get("services", kube_name, "default") is None and not pods_of(fake_kube, name)
    assert api.get(f"{BASE}/jobs/{name}/").json()["deleting"] is True

    batch.patch_namespaced_job(kube_name, "default", {"metadata": {"finalizers": None}})
    assert reconcile.reconcile_job(load(name)) is None
    assert not Job.objects.filter(name=name).exists() and live_job(fake_kube, name) is None
    assert api.get(f"{BASE}/jobs/{name}/").status_code == 404


def test_a_job_deleted_behind_dockyards_back_fails_the_record(api, fake_kube, compute):
    fake_kube.plan_pods(run_seconds=None)
    name = submit(api)
    run_reconcile(name)
    fake_kube.advance(1)
    observe(compute)
    fake_kube.delete("jobs", kube_job_name("team-a", name), "default", group=GROUP)
    observe(compute)
    job = load(name)
    assert (job.status, job.status_reason) == ("Failed", "The Kubernetes Job was deleted outside Dockyard.")


# --- submission: idempotent, refused, transient faults --------------------------------------------

def test_reconciling_again_never_makes_a_second_job(api, fake_kube, compute):
    name = submit(api)
    run_reconcile(name)
    run_reconcile(name)
    assert [r.method for r in job_writes(fake_kube)] == ["PATCH"]  # server-side apply, once
    uid = live_job(fake_kube, name)["metadata"]["uid"]
    Job.objects.filter(name=name).update(runner={})  # as if the worker died between the apply and the save
    job = run_reconcile(name)
    assert [r.method for r in job_writes(fake_kube)] == ["PATCH", "PATCH"] and job.runner["submitted"]
    assert live_job(fake_kube, name)["metadata"]["uid"] == uid
    assert len(fake_kube.list("jobs", "default", group=GROUP)) == 1


def test_an_apply_whose_answer_is_lost_is_applied_again_to_the_same_job(api, fake_kube, compute):
    name = submit(api)
    fake_kube.faults.add(kinds="500", verb="patch", resource="jobs", after=True, times=1)
    with pytest.raises(kube.KubeTransient):
        run_reconcile(name)
    assert live_job(fake_kube, name) is not None and not load(name).runner.get("submitted")
    assert run_reconcile(name).status == "Queued"
    assert [(r.method, r.status) for r in job_writes(fake_kube)] == [("PATCH", 500), ("PATCH", 200)]
    assert len(fake_kube.list("jobs", "default", group=GROUP)) == 1


def test_a_job_the_cluster_refuses_fails_with_the_servers_message_and_leaves_nothing(api, fake_kube, compute):
    name = submit(api, resources={"instance_count": 2})
    # The API refuses more than 100000 instances itself; a record that got past it (an older rule) meets the cluster's.
    job = Job.objects.get(name=name)
    Job.objects.filter(pk=job.pk).update(spec={**job.spec, "resources": {**job.spec["resources"], "instance_count": 100_001}})
    kube_name = kube_job_name("team-a", name)
    job = run_reconcile(name)
    assert job.status == "Failed"
    assert job.status_reason == (
        f'The cluster refused the job: Job.batch "{kube_name}" is invalid: spec.parallelism: Invalid value: 100001: '
        "must be less than or equal to 100000 when completion mode is Indexed")
    assert job.manifests and not job.runner["submitted"]
    assert fake_kube.get("services", kube_name, "default") is None  # the Service applied before it was removed
    fake_kube.requests.clear()
    run_reconcile(name)
    assert not fake_kube.requests.all()  # refused: no retry until the spec changes


def test_a_quantity_the_cluster_cannot_convert_fails_the_job_instead_of_retrying_for_ever(api, fake_kube, compute):
    add_instance_type(api, compute, {"name": "odd", "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                                                  "limits": {"cpu": "1", "memory": "1Gi"}}})
    # The API refuses such a quantity itself; a record that got past it (kubectl-made, an older rule) meets the
    # cluster's answer: a 500 for a permanent problem (the apply's conversion to batch/v1), not a transient one.
    InstanceType.objects.filter(name="odd").update(limits={"cpu": "1 core", "memory": "1Gi"})
    name = submit(api, resources={"instance_type": "odd"})
    job = run_reconcile(name)
    assert job.status == "Failed"
    assert job.status_reason.startswith(
        f"The cluster refused the job: failed to convert new object (default/{kube_job_name('team-a', name)}; "
        "batch/v1, Kind=Job) to proper version: unable to convert unstructured object to batch/v1, Kind=Job: "
        "quantities must match the regular expression")
    assert [r.status for r in job_writes(fake_kube)] == [500]
    fake_kube.requests.clear()
    run_reconcile(name)
    assert not fake_kube.requests.all()  # refused: no retry until the spec changes


def test_a_forbidden_submit_fails_with_the_servers_message(api, fake_kube, compute):
    fake_kube.forbid(verb="patch", resource="jobs")
    job = run_reconcile(submit(api))
    assert job.status == "Failed" and job.status_reason.startswith("The cluster refused the job: jobs.batch ")
    assert "is forbidden" in job.status_reason


def test_a_429_during_submit_is_retried_after_retry_after(api, fake_kube, compute):
    name = submit(api)
    fake_kube.faults.once("429", verb="patch", resource="jobs", retry_after=1)
    with pytest.raises(kube.KubeTransient) as raised:
        run_reconcile(name)
    assert raised.value.retry_after == 1 and backoff(0, raised.value.retry_after) >= 1  # the task's countdown
    assert load(name).status == "NotStarted" and live_job(fake_kube, name) is None
    with pytest.raises(kube.KubeTransient):
        run_reconcile(name)  # too early: refused here, the cluster never sees it
    assert len(job_writes(fake_kube)) == 1
    time.sleep(1.05)
    assert run_reconcile(name).status == "Queued"
    first, second = job_writes(fake_kube)
    assert (first.status, second.status) == (429, 201) and second.time - first.time >= 1  # 201: the apply created it
    assert len(fake_kube.list("jobs", "default", group=GROUP)) == 1


def test_transient_faults_while_observing_are_retried_by_the_loop(api, fake_kube, compute, monkeypatch):
    fake_kube.plan_pods(run_seconds=None)
    name = submit(api)
    run_reconcile(name)
    fake_kube.advance(1)
    fake_kube.faults.once("500", verb="list", resource="pods")
    with pytest.raises(kube.KubeTransient):
        reconcile.observe_compute(compute, [load(name)])

    retries, next_looks = [], []

    def retry(args=None, kwargs=None, exc=None, countdown=None, **options):
        retries.append({"kwargs": kwargs or {}, "countdown": countdown})
        return Retry(exc=exc, when=countdown)

    monkeypatch.setattr(tasks.observe_jobs, "retry", retry)  # the worker, not apply(), runs the retry: after its countdown
    monkeypatch.setattr(tasks.observe_jobs, "apply_async", lambda *args, **kwargs: next_looks.append(kwargs))
    fake_kube.faults.once("429", verb="list", resource="jobs", retry_after=3)
    tasks.observe_jobs.apply((compute.pk,))
    (retried,) = retries
    assert retried["countdown"] >= 3 and load(name).status == "Queued"

    earlier = timezone.now() - timedelta(seconds=retried["countdown"])
    JobSync.objects.filter(compute=compute).update(heartbeat_at=earlier)  # the countdown passes
    fresh_client_state(fake_kube)  # and with it the Retry-After the client remembered
    tasks.observe_jobs.apply((compute.pk,), retried["kwargs"], retries=1)
    assert load(name).status == "Running"
    assert next_looks and next_looks[-1]["countdown"] == tasks.OBSERVE_EVERY  # the loop goes on


# --- end to end: the API, a real worker, the fake on the wall clock ------------------------------

@pytest.fixture
def wall_clock_kube(make_fake_kube):
    fake = make_fake_kube(auto=True, pod_start_seconds=0.3)
    fresh_client_state(fake)
    yield fake
    fresh_client_state(fake)


@pytest.fixture
def worker(transactional_db, wall_clock_kube):
    with in_process_worker():
        yield


def finished(api, name: str) -> dict | None:
    body = api.get(f"{BASE}/jobs/{name}/").json()
    return body if body["status"] in ("Completed", "Failed", "Canceled") else None


def test_a_job_submitted_through_the_api_completes_with_its_logs(worker, api, wall_clock_kube):
    attach_through_the_worker(api, wall_clock_kube)
    wall_clock_kube.plan_pods(run_seconds=2, logs="loading data\nepoch 1 loss 0.9\nepoch 2 loss 0.4\n")
    name = submit(api, name="e2e", resources={"instance_count": 2},
                  distribution={"type": "pytorch", "process_count_per_instance": 1})
    body = wait_for(lambda: finished(api, name), timeout=40, what="the job's end")
    assert (body["status"], body["exit_code"], body["status_reason"]) == ("Completed", 0, ""), body
    assert body["start_time"] and body["end_time"] and body["duration"] is not None
    page = api.get(f"{BASE}/jobs/{name}/logs").json()
    texts = sorted((line["source"], line["text"]) for line in page["results"])
    assert texts == sorted((f"rank-{rank}", text) for rank in range(2)
                           for text in ("loading data", "epoch 1 loss 0.9", "epoch 2 loss 0.4"))
    assert page["complete"] is True
    events = [event["reason"] for event in api.get(f"{BASE}/jobs/{name}/events").json()["results"]]
    assert events[0] == "NotStarted" and events[-1] == "Completed" and "Queued" in events
    assert len(wall_clock_kube.list("jobs", "default", group=GROUP)) == 1


def test_the_worker_rides_out_transient_faults(worker, api, wall_clock_kube):
    attach_through_the_worker(api, wall_clock_kube)
    wall_clock_kube.plan_pods(run_seconds=1, logs="done\n")
    wall_clock_kube.faults.once("429", verb="patch", resource="jobs", retry_after=1)  # during submit
    wall_clock_kube.faults.once("500", verb="list", resource="pods")  # during the observation loop
    name = submit(api)
    body = wait_for(lambda: finished(api, name), timeout=40, what="the job's end")
    assert body["status"] == "Completed" and body["log_lines"] == 1, body
    first, second = [r for r in wall_clock_kube.requests.all() if r.verb == "patch" and r.resource == "jobs"][:2]
    assert first.status == 429 and second.time - first.time >= 1  # not before the Retry-After was over
    assert [r.status for r in wall_clock_kube.requests.find(verb="list", resource="pods")][0] == 500
    assert len(wall_clock_kube.list("jobs", "default", group=GROUP)) == 1
