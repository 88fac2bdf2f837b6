"""The MachineDeployment controller and the cluster-autoscaler (clusterapi provider) of the fake."""
import pytest
from kubernetes import client

from tests.fake_kube.fixtures import api_client
from tests.fake_kube.karpenter_helpers import machine_deployment, pending_pod
from tests.fake_kube.simulation.clusterapi import go_duration

POOL = {"node.cluster.x-k8s.io/dockyard-pool": "gpu"}
AUTOSCALED = {"cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "0",
              "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "2",
              "capacity.cluster-autoscaler.kubernetes.io/cpu": "6",
              "capacity.cluster-autoscaler.kubernetes.io/memory": "112Gi",
              "capacity.cluster-autoscaler.kubernetes.io/gpu-count": "1",
              "capacity.cluster-autoscaler.kubernetes.io/gpu-type": "nvidia.com/gpu",
              "capacity.cluster-autoscaler.kubernetes.io/taints": "dockyard.dev/compute=gpu:NoSchedule",
              "cluster.x-k8s.io/autoscaling-options-scaledownunneededtime": "5m0s"}
TOLERATE = [{"key": "dockyard.dev/compute", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]


@pytest.fixture
def kube(make_fake_kube):
    kube = make_fake_kube(nodes=0, gpu_nodes=0)
    kube.install_cluster_api(launch_seconds=30)
    return kube


def _md(kube, name="gpu", annotations=None, replicas=None):
    body = machine_deployment(name, replicas=replicas, annotations=annotations or dict(AUTOSCALED),
                              labels={**POOL, "team": "ml"})
    return kube.create(body)


def _job(kube, name):
    return kube.create(pending_pod(name, cpu="4", memory="8Gi", gpu=1, selector=POOL, tolerations=TOLERATE))


def _md_now(kube, name="gpu"):
    return kube.get("machinedeployments", name, "default", group="cluster.x-k8s.io")


@pytest.mark.parametrize(("text", "seconds"), [("10m0s", 600), ("1h", 3600), ("90s", 90), ("1m30s", 90),
                                               ("500ms", 0.5), ("ten", None), ("", None)])
def test_go_durations(text, seconds):
    assert go_duration(text) == seconds


def test_replicas_become_nodes_labelled_from_the_synced_domain(kube):
    _md(kube, "plain", annotations={"capacity.cluster-autoscaler.kubernetes.io/cpu": "4",
                                    "capacity.cluster-autoscaler.kubernetes.io/memory": "16Gi"}, replicas=2)
    assert kube.list("nodes") == []
    kube.advance(30)
    nodes = kube.list("nodes")
    assert len(nodes) == 2
    labels = nodes[0]["metadata"]["labels"]
    assert labels["node.cluster.x-k8s.io/dockyard-pool"] == "gpu" and "team" not in labels
    assert nodes[0]["metadata"]["annotations"]["cluster.x-k8s.io/cluster-name"] == "dev"
    status = _md_now(kube, "plain")["status"]
    assert (status["replicas"], status["readyReplicas"], status["phase"]) == (2, 2, "Running")


def test_an_unschedulable_pod_scales_the_group_up_within_max(kube, fake_kube):
    _md(kube)
    assert _md_now(kube)["spec"]["replicas"] == 0  # the webhook defaults replicas to the min size
    _job(kube, "a")
    assert _md_now(kube)["spec"]["replicas"] == 1
    [event] = kube.events("default", "a", "TriggeredScaleUp")
    assert event["message"] == "pod triggered scale-up: [{MachineDeployment/default/gpu 0->1 (max: 2)}]"
    assert event["source"]["component"] == "cluster-autoscaler"
    _job(kube, "b")
    _job(kube, "c")
    assert _md_now(kube)["spec"]["replicas"] == 2
    assert [e["message"] for e in kube.events("default", "c", "NotTriggerScaleUp")] == [
        "pod didn't trigger scale-up: 1 max node group size reached"]
    kube.advance(30)
    [node] = [n for n in kube.list("nodes") if kube.get("pods", "a", "default")["spec"].get("nodeName") == n["metadata"]["name"]]
    assert node["spec"]["taints"] == [{"key": "dockyard.dev/compute", "value": "gpu", "effect": "NoSchedule"}]
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "1"
    assert kube.get("pods", "b", "default")["spec"].get("nodeName")
    assert not kube.get("pods", "c", "default")["spec"].get("nodeName")


def test_a_pod_that_cannot_fit_the_template_does_not_scale_up(kube):
    _md(kube)
    kube.create(pending_pod("big", cpu="64", gpu=1, selector=POOL, tolerations=TOLERATE))
    assert _md_now(kube)["spec"]["replicas"] == 0
    assert [e["message"] for e in kube.events("default", "big", "NotTriggerScaleUp")] == [
        "pod didn't trigger scale-up: 1 Insufficient cpu"]


def test_empty_nodes_are_removed_after_the_unneeded_time_never_below_min(kube):
    _md(kube, annotations={**AUTOSCALED, "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "1"})
    assert _md_now(kube)["spec"]["replicas"] == 1
    _job(kube, "a")  # waits for the machine the min size already launches
    kube.advance(30)
    _job(kube, "b")
    kube.advance(30)
    assert len(kube.list("nodes")) == 2 and _md_now(kube)["spec"]["replicas"] == 2
    kube.delete("pods", "a", "default")
    kube.delete("pods", "b", "default")
    kube.advance(299)
    assert len(kube.list("nodes")) == 2
    kube.advance(1)
    assert len(kube.list("nodes")) == 1 and _md_now(kube)["spec"]["replicas"] == 1
    kube.advance(3600)
    assert len(kube.list("nodes")) == 1  # the min size stays


def test_failed_launches_keep_the_machine_waiting(kube):
    _md(kube)
    kube.fail_launches("gpu")
    _job(kube, "a")
    kube.advance(120)
    assert kube.list("nodes") == [] and _md_now(kube)["spec"]["replicas"] == 1
    assert _md_now(kube)["status"]["readyReplicas"] == 0
    kube.mend_launches()
    kube.advance(1)
    assert kube.get("pods", "a", "default")["spec"].get("nodeName")


def test_status_reads_through_the_real_client(kube):
    _md(kube, replicas=1)
    kube.advance(30)
    with api_client(kube) as api:
        md = client.CustomObjectsApi(api).get_namespaced_custom_object(
            "cluster.x-k8s.io", "v1beta2", "default", "machinedeployments", "gpu")
    assert md["status"]["readyReplicas"] == 1 and md["status"]["selector"] == "cluster.x-k8s.io/cluster-name=dev,pool=gpu"
