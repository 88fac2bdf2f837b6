"""The simulated cluster: Job controller, scheduler, kubelet timelines, logs, workloads, ServiceAccounts."""
import time

import pytest
from kubernetes import client

from tests.fake_kube.fixtures import api_client
from tests.fake_kube.helpers import deployment_manifest, job_manifest, status_of


@pytest.fixture
def core(kube_api):
    return client.CoreV1Api(kube_api)


@pytest.fixture
def batch(kube_api):
    return client.BatchV1Api(kube_api)


def _pods(core, job):
    return core.list_namespaced_pod("default", label_selector=f"batch.kubernetes.io/job-name={job}").items


def _log(core, name, **options):
    """Pod logs as text: with _preload_content the 36.x client returns str(bytes), "b'...'" (a client bug)."""
    return core.read_namespaced_pod_log(name, "default", _preload_content=False, **options).data.decode()


def _condition(obj, kind):
    return next((c for c in obj.status.conditions or [] if c.type == kind), None)


def test_job_runs_pending_running_succeeded(fake_kube, core, batch):
    batch.create_namespaced_job("default", job_manifest("train"))
    pod = _pods(core, "train")[0]
    assert pod.metadata.name.startswith("train-") and pod.metadata.owner_references[0].kind == "Job"
    assert pod.status.phase == "Pending" and pod.spec.node_name and _condition(pod, "PodScheduled").status == "True"
    fake_kube.advance(1)
    assert _pods(core, "train")[0].status.phase == "Running"
    job = batch.read_namespaced_job("train", "default")
    assert job.status.active == 1 and job.status.ready == 1 and job.status.start_time
    fake_kube.advance(10)
    assert _pods(core, "train")[0].status.phase == "Succeeded"
    job = batch.read_namespaced_job("train", "default")
    assert job.status.succeeded == 1 and not job.status.active and job.status.completion_time
    assert [c.type for c in job.status.conditions] == ["SuccessCriteriaMet", "Complete"]
    reasons = {e.reason for e in core.list_namespaced_event("default").items}
    assert {"SuccessfulCreate", "Scheduled", "Started", "Completed"} <= reasons


def test_unschedulable_pod_reports_the_scheduler_reason(fake_kube, core, batch):
    job = job_manifest("picky")
    job["spec"]["template"]["spec"]["nodeSelector"] = {"gpu": "a100"}
    batch.create_namespaced_job("default", job)
    pod = _pods(core, "picky")[0]
    scheduled = _condition(pod, "PodScheduled")
    assert pod.status.phase == "Pending" and not pod.spec.node_name
    assert (scheduled.status, scheduled.reason) == ("False", "Unschedulable")
    assert scheduled.message == ("0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
                                 "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.")
    events = core.list_namespaced_event("default", field_selector=f"involvedObject.name={pod.metadata.name},"
                                                                  "reason=FailedScheduling").items
    assert events and events[0].type == "Warning" and events[0].message == scheduled.message
    fake_kube.label_node("gpu-node-0", {"gpu": "a100"})
    assert _pods(core, "picky")[0].spec.node_name == "gpu-node-0"


def test_insufficient_gpus(fake_kube, core, batch):
    batch.create_namespaced_job("default", job_manifest("big", resources={"limits": {"nvidia.com/gpu": 8}}))
    message = _condition(_pods(core, "big")[0], "PodScheduled").message
    assert message.startswith("0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: ")
    fake_kube.add_node("gpu-node-big", gpu=8)
    assert _pods(core, "big")[0].spec.node_name == "gpu-node-big"


def test_gpus_are_accounted_per_node(fake_kube, core, batch):
    for name in ("g1", "g2"):
        batch.create_namespaced_job("default", job_manifest(name, resources={"limits": {"nvidia.com/gpu": 3}}))
    assert _pods(core, "g1")[0].spec.node_name == "gpu-node-0"
    message = _condition(_pods(core, "g2")[0], "PodScheduled").message
    assert "3 Insufficient nvidia.com/gpu" in message
    fake_kube.finish_pod("default", _pods(core, "g1")[0].metadata.name)
    assert _pods(core, "g2")[0].spec.node_name == "gpu-node-0"


def test_taints_need_tolerations(fake_kube, core, batch):
    fake_kube.taint_node("gpu-node-0", "nvidia.com/gpu", "present")
    batch.create_namespaced_job("default", job_manifest("t", resources={"limits": {"nvidia.com/gpu": 1}}))
    message = _condition(_pods(core, "t")[0], "PodScheduled").message
    assert "1 node(s) had untolerated taint {nvidia.com/gpu: present}" in message


def test_failed_pod_fails_the_job(fake_kube, core, batch):
    batch.create_namespaced_job("default", job_manifest("crash"))
    fake_kube.finish_pod("default", _pods(core, "crash")[0].metadata.name, exit_code=137, reason="OOMKilled")
    pod = _pods(core, "crash")[0]
    assert pod.status.phase == "Failed"
    assert pod.status.container_statuses[0].state.terminated.reason == "OOMKilled"
    job = batch.read_namespaced_job("crash", "default")
    failed = _condition(job, "Failed")
    assert job.status.failed == 1 and (failed.reason, failed.message) == (
        "BackoffLimitExceeded", "Job has reached the specified backoff limit")


def test_active_deadline_fails_the_job_when_time_passes(fake_kube, core, batch):
    fake_kube.plan_pods(labels={"app": "slow"}, run_seconds=None)
    batch.create_namespaced_job("default", job_manifest("slow", activeDeadlineSeconds=30))
    fake_kube.advance(29)
    assert _condition(batch.read_namespaced_job("slow", "default"), "Failed") is None
    fake_kube.advance(2)
    job = batch.read_namespaced_job("slow", "default")
    assert _condition(job, "Failed").reason == "DeadlineExceeded" and not job.status.active
    assert job.status.failed == 1  # the pod the deadline stopped counts as failed, as on a real cluster
    assert [c.type for c in job.status.conditions] == ["FailureTarget", "Failed"]
    assert not [p for p in _pods(core, "slow") if p.status.phase == "Running"]


def test_indexed_job(fake_kube, core, batch):
    batch.create_namespaced_job("default", job_manifest("dist", completionMode="Indexed", completions=3,
                                                        parallelism=3))
    pods = sorted(_pods(core, "dist"), key=lambda p: p.metadata.annotations["batch.kubernetes.io/job-completion-index"])
    assert [p.metadata.annotations["batch.kubernetes.io/job-completion-index"] for p in pods] == ["0", "1", "2"]
    # v1.28+ (PodIndexLabel): the index is a label too; the variable still comes from the annotation
    assert [p.metadata.labels["batch.kubernetes.io/job-completion-index"] for p in pods] == ["0", "1", "2"]
    env = pods[0].spec.containers[0].env[-1]
    assert env.value_from.field_ref.field_path == "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    assert [p.spec.hostname for p in pods] == ["dist-0", "dist-1", "dist-2"]
    assert pods[0].spec.containers[0].env[-1].name == "JOB_COMPLETION_INDEX"
    fake_kube.advance(11)
    job = batch.read_namespaced_job("dist", "default")
    assert job.status.succeeded == 3 and job.status.completed_indexes == "0-2" and _condition(job, "Complete")


def test_a_failed_rank_of_an_indexed_job_fails_it_and_every_stopped_rank_counts_as_failed(fake_kube, core, batch):
    fake_kube.plan_pods(labels={"app": "ddp"}, run_seconds=None)
    batch.create_namespaced_job("default", job_manifest("ddp", completionMode="Indexed", completions=3, parallelism=3))
    fake_kube.advance(1)
    rank1 = next(p for p in _pods(core, "ddp") if p.metadata.labels["batch.kubernetes.io/job-completion-index"] == "1")
    fake_kube.finish_pod("default", rank1.metadata.name, exit_code=3)
    job = batch.read_namespaced_job("ddp", "default")
    failed = _condition(job, "Failed")
    assert (failed.reason, failed.message) == ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
    assert job.status.failed == 3 and not job.status.active and job.status.completed_indexes is None
    assert [p.status.phase for p in _pods(core, "ddp")] == ["Failed"]  # the other ranks were deleted


def test_pod_logs(fake_kube, core, batch):
    fake_kube.plan_pods(labels={"app": "talk"}, logs="epoch 1\nepoch 2\nepoch 3")
    batch.create_namespaced_job("default", job_manifest("talk"))
    name = _pods(core, "talk")[0].metadata.name
    code, body = status_of(core.read_namespaced_pod_log, name, "default")
    assert code == 400 and body["message"] == f'container "main" in pod "{name}" is waiting to start: ContainerCreating'
    fake_kube.advance(1)
    assert core.read_namespaced_pod_log(name, "default") == "b'epoch 1\\nepoch 2\\nepoch 3\\n'"  # sic
    assert _log(core, name) == "epoch 1\nepoch 2\nepoch 3\n"
    assert _log(core, name, tail_lines=1) == "epoch 3\n"
    fake_kube.append_pod_logs("default", name, "done")
    assert _log(core, name, container="main").endswith("done\n")
    code, body = status_of(core.read_namespaced_pod_log, name, "default", container="nope")
    assert code == 400 and body["message"] == f"container nope is not valid for pod {name}"


def test_logs_of_a_pod_without_a_node_are_empty_like_the_real_server(fake_kube, core, batch):
    job = job_manifest("nowhere")
    job["spec"]["template"]["spec"]["nodeSelector"] = {"gpu": "none-such"}
    batch.create_namespaced_job("default", job)
    (pod,) = _pods(core, "nowhere")
    assert not pod.spec.node_name
    response = core.read_namespaced_pod_log(pod.metadata.name, "default", _preload_content=False)
    assert (response.status, response.data) == (200, b"")  # an empty location: nothing to stream, not an error
    code, body = status_of(core.read_namespaced_pod_log, pod.metadata.name, "default", container="nope")
    assert code == 400 and body["message"] == f"container nope is not valid for pod {pod.metadata.name}"


def test_a_pods_logs_fail_like_an_unreachable_kubelet_until_mended(fake_kube, core, batch):
    fake_kube.plan_pods(labels={"app": "talk"}, logs="epoch 1")
    batch.create_namespaced_job("default", job_manifest("talk"))
    batch.create_namespaced_job("default", job_manifest("other"))
    fake_kube.advance(1)
    name = _pods(core, "talk")[0].metadata.name
    fake_kube.fail_pod_logs("default", name)
    code, body = status_of(core.read_namespaced_pod_log, name, "default")
    assert code == 500 and body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                    "message": "no preferred addresses found; known addresses: []", "code": 500}
    assert _log(core, _pods(core, "other")[0].metadata.name).startswith("fake-kube: ")  # that pod's only
    fake_kube.fail_pod_logs("default", name, None)
    assert _log(core, name) == "epoch 1\n"


def test_following_logs_streams_until_the_pod_ends(fake_kube, core, batch):
    fake_kube.plan_pods(labels={"app": "follow"}, logs="start")
    batch.create_namespaced_job("default", job_manifest("follow"))
    fake_kube.advance(1)
    name = _pods(core, "follow")[0].metadata.name
    response = core.read_namespaced_pod_log(name, "default", follow=True, _preload_content=False)
    fake_kube.append_pod_logs("default", name, "more")
    fake_kube.finish_pod("default", name)
    assert response.read().decode() == "start\nmore\n"


def test_new_namespace_refuses_pods_until_its_service_account_exists(fake_kube, core, batch):
    core.create_namespace({"metadata": {"name": "fresh"}})
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    code, body = status_of(core.create_namespaced_pod, "fresh", pod)
    assert code == 403 and body["message"] == ('pods "p" is forbidden: error looking up service account '
                                               'fresh/default: serviceaccount "default" not found')
    batch.create_namespaced_job("fresh", job_manifest("early"))
    assert not core.list_namespaced_pod("fresh").items
    assert core.list_namespaced_event("fresh", field_selector="reason=FailedCreate").items
    fake_kube.advance(0.5)
    assert core.read_namespaced_service_account("default", "fresh")
    assert core.list_namespaced_pod("fresh").items  # the Job controller retried
    core.create_namespaced_pod("fresh", pod)


def test_service_account_check_can_be_switched_off(make_fake_kube):
    kube = make_fake_kube(require_serviceaccount=False, serviceaccount_delay=60)
    with api_client(kube) as api:
        core = client.CoreV1Api(api)
        core.create_namespace({"metadata": {"name": "fresh"}})
        core.create_namespaced_pod("fresh", {"metadata": {"name": "p"},
                                             "spec": {"containers": [{"name": "c", "image": "busybox"}]}})


def test_deployment_creates_a_replicaset_and_reports_ready_replicas(fake_kube, kube_api, core):
    apps = client.AppsV1Api(kube_api)
    apps.create_namespaced_deployment("default", deployment_manifest("web", replicas=2))
    replicasets = apps.list_namespaced_replica_set("default").items
    assert len(replicasets) == 1 and replicasets[0].metadata.owner_references[0].name == "web"
    assert len(core.list_namespaced_pod("default", label_selector="app=web").items) == 2
    deploy = apps.read_namespaced_deployment("web", "default")
    assert not deploy.status.ready_replicas and _condition(deploy, "Available").status == "False"
    fake_kube.advance(1)
    deploy = apps.read_namespaced_deployment("web", "default")
    assert deploy.status.ready_replicas == 2 and deploy.status.available_replicas == 2
    assert deploy.status.observed_generation == deploy.metadata.generation
    assert _condition(deploy, "Available").status == "True"
    assert _condition(deploy, "Progressing").reason == "NewReplicaSetAvailable"
    apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 1}})
    assert len(core.list_namespaced_pod("default", label_selector="app=web").items) == 1


def test_unschedulable_deployment_times_out_progressing(fake_kube, kube_api):
    apps = client.AppsV1Api(kube_api)
    manifest = deployment_manifest("huge", replicas=1)
    manifest["spec"]["progressDeadlineSeconds"] = 60
    manifest["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "64"}}
    apps.create_namespaced_deployment("default", manifest)
    fake_kube.advance(120)
    progressing = _condition(apps.read_namespaced_deployment("huge", "default"), "Progressing")
    assert (progressing.status, progressing.reason) == ("False", "ProgressDeadlineExceeded")


def test_statefulset_creates_ordinal_pods_and_bound_claims(fake_kube, kube_api, core):
    apps = client.AppsV1Api(kube_api)
    labels = {"app": "nb"}
    apps.create_namespaced_stateful_set("default", {
        "metadata": {"name": "nb"}, "spec": {"replicas": 1, "serviceName": "nb", "selector": {"matchLabels": labels},
                                             "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                                                 {"name": "jupyter", "image": "jupyter/base-notebook"}]}},
                                             "volumeClaimTemplates": [{"metadata": {"name": "home"}, "spec": {
                                                 "accessModes": ["ReadWriteOnce"],
                                                 "resources": {"requests": {"storage": "10Gi"}}}}]}})
    pod = core.read_namespaced_pod("nb-0", "default")
    assert pod.spec.volumes[0].persistent_volume_claim.claim_name == "home-nb-0"
    assert core.read_namespaced_persistent_volume_claim("home-nb-0", "default").status.phase == "Bound"
    fake_kube.advance(1)
    assert apps.read_namespaced_stateful_set("nb", "default").status.ready_replicas == 1
    apps.patch_namespaced_stateful_set("nb", "default", {"spec": {"replicas": 0}})
    assert not core.list_namespaced_pod("default", label_selector="app=nb").items
    assert core.read_namespaced_persistent_volume_claim("home-nb-0", "default")  # stop keeps the volume


def test_removing_a_node_deletes_its_pods_and_the_job_replaces_them(fake_kube, core, batch):
    batch.create_namespaced_job("default", job_manifest("gpu", resources={"limits": {"nvidia.com/gpu": 1}},
                                                        backoffLimit=2))
    first = _pods(core, "gpu")[0]
    assert first.spec.node_name == "gpu-node-0"
    fake_kube.remove_node("gpu-node-0")
    pods = _pods(core, "gpu")
    assert [p.metadata.name for p in pods] != [first.metadata.name] and len(pods) == 1
    assert _condition(pods[0], "PodScheduled").message.startswith("0/2 nodes are available: 2 Insufficient nvidia.com/gpu.")
    assert batch.read_namespaced_job("gpu", "default").status.failed == 1


def test_auto_mode_follows_the_wall_clock(make_fake_kube):
    kube = make_fake_kube(auto=True, pod_start_seconds=0.05, job_pod_seconds=0.1)
    with api_client(kube) as api:
        batch = client.BatchV1Api(api)
        batch.create_namespaced_job("default", job_manifest("quick"))
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            job = batch.read_namespaced_job("quick", "default")
            if _condition(job, "Complete"):
                break
            time.sleep(0.05)
        assert _condition(job, "Complete")


def test_image_pull_errors_cycle_like_the_kubelet(fake_kube, core, batch):
    plan = fake_kube.plan_pods(labels={"app": "nosuch"}, image_pull_error="ErrImagePull")
    batch.create_namespaced_job("default", job_manifest("nosuch", image="nosuch:1.0"))
    fake_kube.advance(1)
    pod = _pods(core, "nosuch")[0]
    name, waiting = pod.metadata.name, pod.status.container_statuses[0].state.waiting
    error = ('rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nosuch:1.0": '
             'failed to resolve reference "docker.io/library/nosuch:1.0": docker.io/library/nosuch:1.0: not found')
    assert pod.status.phase == "Pending" and _condition(pod, "PodScheduled").status == "True"
    assert (waiting.reason, waiting.message) == ("ErrImagePull", error)
    assert (_condition(pod, "Ready").status, _condition(pod, "Ready").reason) == ("False", "ContainersNotReady")
    code, body = status_of(core.read_namespaced_pod_log, name, "default")
    assert code == 400 and body["message"] == f'container "main" in pod "{name}" is waiting to start: image can\'t be pulled'
    events = {(e["type"], e["reason"], e["message"]) for e in fake_kube.events("default", name)}
    assert {("Normal", "Pulling", 'Pulling image "nosuch:1.0"'),
            ("Warning", "Failed", f'Failed to pull image "nosuch:1.0": {error}'),
            ("Warning", "Failed", "Error: ErrImagePull")} <= events

    fake_kube.advance(1)  # the pod worker's next sync finds the pull backing off
    waiting = core.read_namespaced_pod(name, "default").status.container_statuses[0].state.waiting
    assert (waiting.reason, waiting.message) == ("ImagePullBackOff", f'Back-off pulling image "nosuch:1.0": ErrImagePull: {error}')
    code, body = status_of(core.read_namespaced_pod_log, name, "default")
    assert body["message"].endswith("is waiting to start: trying and failing to pull image")
    assert fake_kube.events("default", name, "BackOff")[0]["message"] == 'Back-off pulling image "nosuch:1.0"'

    fake_kube.advance(9)  # retried 10 s after the first attempt: ErrImagePull again, then a 20 s back-off
    pod = core.read_namespaced_pod(name, "default")
    assert pod.status.container_statuses[0].state.waiting.reason == "ErrImagePull"
    assert [e for e in fake_kube.events("default", name, "Failed") if e["message"] == "Error: ErrImagePull"][0]["count"] == 2
    fake_kube.advance(15)
    assert core.read_namespaced_pod(name, "default").status.container_statuses[0].state.waiting.reason == "ImagePullBackOff"

    plan.image_pull_error = None  # the image was pushed: the next attempt pulls it
    fake_kube.advance(10)
    pod = core.read_namespaced_pod(name, "default")
    assert pod.status.phase == "Running" and pod.status.container_statuses[0].state.running
    assert batch.read_namespaced_job("nosuch", "default").status.active == 1


def test_image_pull_backoff_plan_is_first_seen_backing_off(fake_kube, core, batch):
    fake_kube.plan_pods(labels={"app": "private"}, image_pull_error="ImagePullBackOff",
                        image_pull_message="failed to authorize: 401 Unauthorized")
    batch.create_namespaced_job("default", job_manifest("private", image="registry.example.com/team/app:2"))
    fake_kube.advance(1)
    pod = _pods(core, "private")[0]
    waiting = pod.status.container_statuses[0].state.waiting
    assert (pod.status.phase, waiting.reason) == ("Pending", "ImagePullBackOff")
    assert waiting.message == ('Back-off pulling image "registry.example.com/team/app:2": ErrImagePull: '
                               "failed to authorize: 401 Unauthorized")
    assert fake_kube.events("default", pod.metadata.name, "Pulling")
    with pytest.raises(ValueError):
        fake_kube.plan_pods(image_pull_error="ErrImgPull")


@pytest.mark.parametrize("image, reference", [
    ("busybox", "docker.io/library/busybox:latest"),
    ("pytorch/pytorch:2.3.0", "docker.io/pytorch/pytorch:2.3.0"),
    ("ghcr.io/org/train:v1", "ghcr.io/org/train:v1"),
    ("localhost:5000/train", "localhost:5000/train:latest"),
    ("python@sha256:abc", "docker.io/library/python@sha256:abc"),
])
def test_image_references_are_qualified_like_containerd(image, reference):
    from tests.fake_kube.simulation.kubelet import image_reference

    assert image_reference(image) == reference


def _raw_log(kube_api, name, query):
    """GET .../log with any query (the Python client has no sinceTime parameter)."""
    response = kube_api.call_api(f"/api/v1/namespaces/default/pods/{name}/log", "GET", query_params=query,
                                 auth_settings=["BearerToken"], _preload_content=False)
    return (response[0] if isinstance(response, tuple) else response).data.decode()


def test_log_options_are_decoded_and_validated_like_the_apiserver(fake_kube, kube_api, core, batch):
    fake_kube.plan_pods(labels={"app": "opts"}, logs="one")
    batch.create_namespaced_job("default", job_manifest("opts"))
    fake_kube.advance(1)
    name = _pods(core, "opts")[0].metadata.name
    both = [("sinceSeconds", "5"), ("sinceTime", "2024-01-01T00:00:00Z")]
    code, body = status_of(_raw_log, kube_api, name, both)
    assert code == 422 and body["message"] == (f'PodLogOptions "{name}" is invalid: : Forbidden: at most one of '
                                               "`sinceTime` or `sinceSeconds` may be specified")
    code, body = status_of(core.read_namespaced_pod_log, name, "default", tail_lines=-1)
    assert code == 422 and body["details"]["causes"][0]["field"] == "tailLines"
    code, body = status_of(_raw_log, kube_api, name, [("sinceTime", "yesterday")])
    assert code == 400 and body["message"].startswith('parsing time "yesterday"')
    stamp = _log(core, name, timestamps=True).split(" ")[0]
    assert _raw_log(kube_api, name, [("sinceTime", stamp[:19] + ".999Z")]) == "one\n"  # the fraction is dropped
    assert _raw_log(kube_api, name, [("timestamps", "yes")]).startswith(stamp)  # any value but 0/false is true
