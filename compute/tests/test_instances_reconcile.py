"""Compute instances on the fake API server, through the real kubernetes client: create → Running → stop (replicas 0,
claim kept) → start (same claim) → restart (new pod, same claim) → delete (everything gone); failures in words, drift,
an attachment that is not ready, a crash mid-way, idle shutdown, and an observe pass whose queries do not grow with
the number of instances."""
from dataclasses import dataclass
from datetime import timedelta
from unittest.mock import patch

import httpx
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from kubernetes import client

from compute import reconcile, tasks
from compute.choices import ComputeType, DesiredState, InstanceState, StopCause
from compute.models import ComputeInstance, ComputeTarget
from compute.reconcile import instances as reconciler
from compute.services import compute_delete
from controlplane.kube import client as kube
from controlplane.reconciling import ProvisioningState
from tests.e2e_support import wait_for
from tests.support import assert_error

from .servers import Jupyter, code_server_health

BASE = "/api/v1/workspaces/team-a/computes"
TOKEN = "x" * 43


@pytest.fixture(autouse=True)
def fresh_kube_clients():
    kube._clients.clear()
    yield
    kube._clients.clear()


@pytest.fixture
def host(owner_api, workspace, fake_kube) -> ComputeTarget:
    body = {"name": "k8s", "type": "kubernetes", "kubeconfig": fake_kube.kubeconfig_yaml(), "namespace": "default"}
    assert owner_api.post(f"{BASE}/", body, format="json").status_code == 201
    attachment = ComputeTarget.objects.get(name="k8s")
    reconcile.reconcile_compute(attachment)
    attachment.refresh_from_db()
    assert attachment.provisioning_state == ProvisioningState.SUCCEEDED, attachment.provisioning_errors
    return attachment


def make(workspace, owner, name="notebook", with_row=True, **properties) -> ComputeTarget:
    """A compute instance record as the create service leaves it (its spec is the api work's)."""
    compute = ComputeTarget(workspace=workspace, name=name, type=ComputeType.COMPUTEINSTANCE, created_by=owner,
                            properties={"kubernetes_compute": "k8s", "instance_type": "defaultinstancetype",
                                        "idle_time_before_shutdown_minutes": None, **properties})
    compute.secrets = {"token": TOKEN}
    compute.save()
    if with_row:
        ComputeInstance.objects.create(compute=compute, assigned_user=owner)
    return compute


def run(compute: ComputeTarget) -> ComputeTarget:
    """One reconcile, as the task runs it (a fresh row)."""
    reconcile.reconcile_compute(ComputeTarget.objects.get(pk=compute.pk))
    return fresh(compute)


def fresh(compute: ComputeTarget) -> ComputeTarget:
    return ComputeTarget.objects.select_related("instance").get(pk=compute.pk)


def observe(*computes: ComputeTarget) -> None:
    host = ComputeTarget.objects.get(workspace=computes[0].workspace, name="k8s")
    tasks.observe_instance_batch(host.pk, [compute.pk for compute in computes])


def until(fake_kube, compute: ComputeTarget, state: str, seconds: int = 30) -> ComputeTarget:
    """Advance the fake's clock a second at a time, observing, until the instance is in `state` (a deadline, no sleep)."""
    for _ in range(seconds):
        compute = fresh(compute)
        if compute.instance.state == state:
            return compute
        fake_kube.advance(1)
        observe(compute)
    compute = fresh(compute)
    assert compute.instance.state == state, (compute.instance.state, compute.instance.state_reason)
    return compute


def act(compute: ComputeTarget, **fields) -> ComputeTarget:
    """What the api's start/stop/restart action writes (desired state, generation), then the reconcile it enqueues."""
    ComputeInstance.objects.filter(compute=compute).update(**fields)
    ComputeTarget.objects.filter(pk=compute.pk).update(generation=compute.generation + 1)
    return run(compute)


def claim_uid(fake_kube) -> str | None:
    claim = fake_kube.get("persistentvolumeclaims", "home-ci-notebook-0", "default")
    return claim and claim["metadata"]["uid"]


def test_the_whole_lifecycle_on_the_cluster(owner_api, owner, workspace, host, fake_kube):
    compute = run(make(workspace, owner))
    assert compute.provisioning_state == ProvisioningState.SUCCEEDED, compute.provisioning_errors
    assert compute.instance.state == InstanceState.CREATING
    sts = fake_kube.get("statefulsets", "ci-notebook", "default", group="apps")
    assert sts["spec"]["replicas"] == 1 and fake_kube.get("services", "ci-notebook", "default")["spec"]["clusterIP"] == "None"
    assert fake_kube.get("secrets", "ci-notebook-token", "default") is not None

    compute = until(fake_kube, compute, InstanceState.RUNNING)
    assert compute.instance.first_ready_at is not None and compute.instance.state_reason == ""
    disk = claim_uid(fake_kube)
    assert disk is not None

    compute = act(compute, desired_state=DesiredState.STOPPED, stop_cause=StopCause.USER)
    assert fake_kube.get("statefulsets", "ci-notebook", "default", group="apps")["spec"]["replicas"] == 0
    compute = until(fake_kube, compute, InstanceState.STOPPED)
    assert compute.instance.state_reason == "Stopped on request."
    assert fake_kube.get("pods", "ci-notebook-0", "default") is None and claim_uid(fake_kube) == disk  # the disk stays

    compute = act(compute, desired_state=DesiredState.RUNNING, stop_cause=StopCause.NONE)
    assert compute.instance.state == InstanceState.STARTING  # not Creating: it ran before
    compute = until(fake_kube, compute, InstanceState.RUNNING)
    assert claim_uid(fake_kube) == disk
    pod_uid = fake_kube.get("pods", "ci-notebook-0", "default")["metadata"]["uid"]

    compute = act(compute, restart_requested_at=timezone.now())
    assert compute.instance.state == InstanceState.STARTING
    compute = until(fake_kube, compute, InstanceState.RUNNING)
    assert fake_kube.get("pods", "ci-notebook-0", "default")["metadata"]["uid"] != pod_uid and claim_uid(fake_kube) == disk
    run(compute)  # the restart was acted on once: a later reconcile keeps the pod
    assert fake_kube.get("pods", "ci-notebook-0", "default")["metadata"]["uid"] != pod_uid

    response = owner_api.delete(f"{BASE}/k8s/")  # the attachment carries the instance: it goes first
    assert "the compute instance(s) notebook" in assert_error(response, 400, "ComputeInUse", "name")["message"]

    compute_delete(user=owner, compute=ComputeTarget.objects.get(pk=compute.pk))
    for _ in range(10):
        try:
            reconcile.reconcile_compute(ComputeTarget.objects.get(pk=compute.pk))
            break
        except kube.KubeTransient:
            fake_kube.advance(1)  # foreground deletion: the pod and claim go first
    assert not ComputeTarget.objects.filter(pk=compute.pk).exists()
    for kind, name, group in (("statefulsets", "ci-notebook", "apps"), ("services", "ci-notebook", ""),
                              ("secrets", "ci-notebook-token", ""), ("persistentvolumeclaims", "home-ci-notebook-0", ""),
                              ("pods", "ci-notebook-0", "")):
        assert fake_kube.get(kind, name, "default", group=group) is None, kind


def test_the_run_state_row_is_made_when_missing(owner, workspace, host, fake_kube):
    compute = run(make(workspace, owner, with_row=False))
    assert compute.instance.state == InstanceState.CREATING and compute.instance.assigned_user == owner


def test_no_node_for_its_size_fails_in_words_and_recovers(owner, workspace, host, fake_kube):
    compute = run(make(workspace, owner, instance_type=None, size="Standard_DS3_v2"))
    fake_kube.advance(1)
    observe(compute)
    compute = fresh(compute)
    assert compute.instance.state == InstanceState.FAILED
    assert compute.instance.state_reason == (
        "No node can run it: no node matches the nodeSelector node.kubernetes.io/instance-type=Standard_DS3_v2.")
    fake_kube.add_node("ds3", labels={"node.kubernetes.io/instance-type": "Standard_DS3_v2"}, cpu="4", memory="14Gi")
    until(fake_kube, compute, InstanceState.RUNNING)


def test_an_image_that_cannot_be_pulled_fails_in_words(owner, workspace, host, fake_kube):
    fake_kube.plan_pods(labels={"dockyard.dev/compute-instance": "notebook"}, image_pull_error="ErrImagePull")
    compute = until(fake_kube, run(make(workspace, owner)), InstanceState.FAILED)
    assert compute.instance.state_reason.startswith("The image ") and "cannot be pulled (ErrImagePull)" in compute.instance.state_reason


def test_an_unknown_instance_type_fails_in_words(owner, workspace, host, fake_kube):
    compute = run(make(workspace, owner, instance_type="huge"))
    assert compute.provisioning_state == ProvisioningState.FAILED
    assert compute.instance.state == InstanceState.FAILED and "'huge' is neither an instance type" in compute.instance.state_reason


def test_an_attachment_that_is_not_ready_fails_the_instance_and_it_recovers(owner, workspace, host, fake_kube):
    ComputeTarget.objects.filter(pk=host.pk).update(provisioning_state=ProvisioningState.FAILED, provisioning_errors=[
        {"code": "Unauthorized", "message": "The cluster refused the credentials (401)."}])
    compute = run(make(workspace, owner))
    assert compute.provisioning_state == ProvisioningState.FAILED
    assert compute.instance.state == InstanceState.FAILED
    assert "'k8s' is Failed: The cluster refused the credentials (401)." in compute.instance.state_reason
    assert fake_kube.get("statefulsets", "ci-notebook", "default", group="apps") is None
    ComputeTarget.objects.filter(pk=host.pk).update(provisioning_state=ProvisioningState.SUCCEEDED, provisioning_errors=[])
    until(fake_kube, compute, InstanceState.RUNNING)  # the observe pass looks at Failed ones and applies what is missing


def test_drift_is_re_applied_by_the_observe_pass(owner, workspace, host, fake_kube, kube_api):
    compute = until(fake_kube, run(make(workspace, owner)), InstanceState.RUNNING)
    client.AppsV1Api(kube_api).patch_namespaced_stateful_set("ci-notebook", "default", {"spec": {"replicas": 0}})
    fake_kube.delete("services", "ci-notebook", "default")
    fake_kube.delete("secrets", "ci-notebook-token", "default")
    observe(compute)
    assert fake_kube.get("services", "ci-notebook", "default") is not None
    assert fake_kube.get("secrets", "ci-notebook-token", "default") is not None
    assert fake_kube.get("statefulsets", "ci-notebook", "default", group="apps")["spec"]["replicas"] == 1


def test_a_crash_mid_way_converges_on_the_next_reconcile(owner, workspace, host, fake_kube):
    compute = make(workspace, owner)
    real_apply = kube.apply

    def crash_after_the_secret(conn, manifest):
        if manifest["kind"] == "Service":
            raise kube.KubeTransient("The worker died.")
        return real_apply(conn, manifest)

    with patch.object(kube, "apply", crash_after_the_secret), pytest.raises(kube.KubeTransient):
        reconcile.reconcile_compute(ComputeTarget.objects.get(pk=compute.pk))
    assert fake_kube.get("secrets", "ci-notebook-token", "default") is not None
    assert fake_kube.get("statefulsets", "ci-notebook", "default", group="apps") is None
    with patch.object(tasks.reconcile_compute, "delay") as sent:
        tasks.resync()  # still behind its generation: the resync hands it to a reconcile again
    assert compute.pk in [call.args[0] for call in sent.call_args_list]
    compute = run(compute)
    assert compute.provisioning_state == ProvisioningState.SUCCEEDED
    until(fake_kube, compute, InstanceState.RUNNING)


def test_another_workspaces_instance_of_the_same_name_is_not_taken_over(owner, workspace, host, fake_kube):
    from workspaces.tests.factories import WorkspaceFactory

    compute = until(fake_kube, run(make(workspace, owner)), InstanceState.RUNNING)
    other_ws = WorkspaceFactory(name="team-b")
    ComputeTarget.objects.create(workspace=other_ws, name="k8s", type=ComputeType.KUBERNETES, properties=host.properties,
                                 secrets_encrypted=host.secrets_encrypted, cluster=host.cluster,
                                 provisioning_state=ProvisioningState.SUCCEEDED)
    other = run(make(other_ws, owner))
    assert other.instance.state == InstanceState.FAILED and "workspace 'team-a'" in other.instance.state_reason
    assert fresh(compute).instance.state == InstanceState.RUNNING


@dataclass(frozen=True)
class Probe:  # the idle work's Probe, as COMMON.md gives it
    name: str
    ok: bool
    signals: tuple = ()
    error: str = ""


@dataclass(frozen=True)
class Verdict:
    idle: bool
    last_activity: object
    source: str
    reason: str


@pytest.fixture
def idle_work():
    """The idle work's probe and verdict, played: `probes` and `verdict` are what they answer next; `asked` what the
    verdict was given."""
    stub = {"probes": [Probe("jupyter", True)], "verdict": Verdict(False, None, "", ""), "asked": []}

    def verdict(probes, threshold, now, running_since):
        stub["asked"].append((probes, threshold, running_since))
        return stub["verdict"]

    with patch.object(reconciler, "_probe", lambda conn, ns, compute: stub["probes"]), \
            patch.object(reconciler, "_verdict", verdict):
        yield stub


def test_an_idle_instance_is_stopped_saying_why(owner, workspace, host, fake_kube, settings, idle_work):
    settings.DOCKYARD_IDLE_SECONDS_PER_MINUTE = 0.01
    compute = until(fake_kube, run(make(workspace, owner, idle_time_before_shutdown_minutes=30)), InstanceState.RUNNING)
    seen = timezone.now().replace(hour=14, minute=2, second=0, microsecond=0) - timedelta(days=1)
    idle_work["verdict"] = Verdict(True, seen, "kernel idle", "")
    observe(compute)
    probes, threshold, running_since = idle_work["asked"][-1]
    assert threshold == timedelta(seconds=0.3)  # 30 "minutes" of 0.01 s
    assert running_since == compute.instance.state_changed_at  # when it was seen Running
    compute = fresh(compute)
    instance = compute.instance
    assert (instance.desired_state, instance.stop_cause, instance.state) == ("stopped", "idle", InstanceState.STOPPING)
    assert instance.state_reason == "Stopped: idle for 30 min; last activity 14:02 UTC, kernel idle."
    assert instance.last_activity == seen and instance.probed_at is not None
    assert fake_kube.get("statefulsets", "ci-notebook", "default", group="apps")["spec"]["replicas"] == 0
    compute = until(fake_kube, compute, InstanceState.STOPPED)
    assert compute.instance.state_reason == "Stopped: idle for 30 min; last activity 14:02 UTC, kernel idle."
    assert fake_kube.get("persistentvolumeclaims", "home-ci-notebook-0", "default") is not None


def test_without_an_idle_threshold_nothing_is_probed(owner, workspace, host, fake_kube, idle_work):
    compute = until(fake_kube, run(make(workspace, owner)), InstanceState.RUNNING)
    observe(compute)
    assert idle_work["asked"] == []


def test_a_failing_probe_is_recorded_and_does_not_stop(owner, workspace, host, fake_kube, idle_work):
    compute = until(fake_kube, run(make(workspace, owner, idle_time_before_shutdown_minutes=30)), InstanceState.RUNNING)
    idle_work["probes"] = [Probe("jupyter", False, error="Jupyter did not answer.")]
    observe(compute)
    instance = fresh(compute).instance
    assert instance.state == InstanceState.RUNNING and instance.probe_error == "Jupyter did not answer."
    assert instance.desired_state == DesiredState.RUNNING


def test_the_observe_pass_sends_one_task_per_attachment_and_skips_stopped_and_local(owner, workspace, host, fake_kube):
    running = [make(workspace, owner, name=f"nb{index}") for index in range(3)]
    stopped = make(workspace, owner, name="off")
    local = make(workspace, owner, name="here", kubernetes_compute="local")
    ComputeTarget.objects.filter(type=ComputeType.COMPUTEINSTANCE).update(observed_generation=1)
    ComputeInstance.objects.filter(compute=stopped).update(state=InstanceState.STOPPED)
    with patch.object(tasks.observe_instances, "delay") as sent:
        assert tasks.observe_compute_instances() == 1
    sent.assert_called_once_with(host.pk, [compute.pk for compute in running])
    assert local.pk not in sent.call_args.args[1]


def queries_of_one_pass(fake_kube, computes) -> int:
    with CaptureQueriesContext(connection) as captured:
        observe(*computes)
    return len(captured.captured_queries)


def test_a_steady_observe_pass_costs_the_same_queries_for_2_and_6_instances_and_writes_nothing(owner, workspace, host, fake_kube):
    computes = [run(make(workspace, owner, name=f"nb{index}")) for index in range(6)]
    for _ in range(5):
        fake_kube.advance(1)
        observe(*computes)
    assert {fresh(compute).instance.state for compute in computes} == {InstanceState.RUNNING}
    few, many = queries_of_one_pass(fake_kube, computes[:2]), queries_of_one_pass(fake_kube, computes)
    assert few == many
    with CaptureQueriesContext(connection) as captured:
        observe(*computes)
    assert not [query for query in captured.captured_queries if query["sql"].startswith("UPDATE")]
    lists = [request for request in fake_kube.requests.all() if request.verb == "list"]
    assert lists  # one LIST per kind per pass, whatever the number of instances
    fake_kube.requests.clear()
    observe(*computes)
    assert len([request for request in fake_kube.requests.all() if request.verb == "list"]) == 4


def test_idle_shutdown_reads_the_real_servers_through_the_api_server(owner, workspace, host, fake_kube, settings,
                                                                     tmp_path):
    """No stand-in for the idle work: the observe pass probes a real jupyter-server (and code-server's heartbeat
    answer) through the fake's service proxy; a kernel keeps it up while it works, then idleness stops it."""
    settings.DOCKYARD_IDLE_SECONDS_PER_MINUTE = 0.2  # the shortest threshold, 15 minutes, passes in 3 s
    jupyter = Jupyter(tmp_path, base=f"/instances/{workspace.name}/notebook/jupyter", token=TOKEN)
    heartbeat = code_server_health()
    try:
        compute = until(fake_kube, run(make(workspace, owner, idle_time_before_shutdown_minutes=15)),
                        InstanceState.RUNNING)
        fake_kube.serve_pod("default", "ci-notebook-0", jupyter.url, port=8888)
        fake_kube.serve_pod("default", "ci-notebook-0", f"http://127.0.0.1:{heartbeat.server_port}", port=8080)
        kernel = httpx.post(f"{jupyter.url}{jupyter.base}/api/kernels", params={"token": TOKEN},
                            json={"name": "python3"}, timeout=10)
        assert kernel.status_code == 201
        observe(compute)
        instance = fresh(compute).instance
        assert instance.desired_state == DesiredState.RUNNING and instance.probe_error == ""
        assert instance.last_activity is not None and instance.last_activity_source.startswith("python3 kernel")

        def stopped():
            observe(compute)
            return fresh(compute).instance.stop_cause == StopCause.IDLE

        wait_for(stopped, 30, 0.5, "idle shutdown")
        instance = fresh(compute).instance
        assert instance.desired_state == DesiredState.STOPPED
        assert instance.state_reason.startswith("Stopped: idle for 15 min; last activity ")
        assert fake_kube.get("statefulsets", "ci-notebook", "default", group="apps")["spec"]["replicas"] == 0
    finally:
        heartbeat.shutdown()
        jupyter.stop()
