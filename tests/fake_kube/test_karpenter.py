"""The Karpenter-like controller: NodeClaims and Nodes for pending pods, limits, failures, disruption."""
from fractions import Fraction

import pytest
from kubernetes import client

from tests.fake_kube.fixtures import api_client
from tests.fake_kube.karpenter_helpers import nodepool, pending_pod
from tests.fake_kube.simulation.instancetypes import DEFAULT_INSTANCE_TYPES

GPU_POOL = dict(requirements=[{"key": "node.kubernetes.io/instance-type", "operator": "In",
                               "values": ["Standard_NC6s_v3"]},
                              {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}],
                labels={"dockyard.dev/compute": "gpu"},
                taints=[{"key": "dockyard.dev/compute", "value": "gpu", "effect": "NoSchedule"}])
TOLERATE = [{"key": "dockyard.dev/compute", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
IN_POOL = {"karpenter.sh/nodepool": "gpu"}


@pytest.fixture
def kube(make_fake_kube):
    kube = make_fake_kube(nodes=0, gpu_nodes=0)
    kube.install_karpenter(launch_seconds=30)
    return kube


def _pool(kube, **kw):
    return kube.create(nodepool("gpu", **{**GPU_POOL, **kw}))


def _claims(kube):
    return kube.list("nodeclaims", group="karpenter.sh")


def _karpenter_events(kube, pod):
    return [e["message"] for e in kube.events("default", pod, "FailedScheduling")
            if e["source"]["component"] == "karpenter"]


def _job_pod(kube, name, **kw):
    return kube.create(pending_pod(name, cpu="4", memory="8Gi", gpu=1, selector=IN_POOL, tolerations=TOLERATE, **kw))


def test_a_pending_pod_gets_a_nodeclaim_then_a_node_it_binds_to(kube):
    _pool(kube)
    pod = _job_pod(kube, "train-0")
    [claim] = _claims(kube)
    assert claim["metadata"]["labels"]["karpenter.sh/nodepool"] == "gpu"
    assert claim["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "Standard_NC6s_v3"
    assert {c["type"]: c["status"] for c in claim["status"]["conditions"]} == {
        "Launched": "True", "Registered": "Unknown", "Initialized": "Unknown", "Ready": "Unknown"}
    assert [e["message"] for e in kube.events("default", "train-0", "Nominated")] == [
        f"Pod should schedule on: nodeclaim/{claim['metadata']['name']}"]
    kube.advance(29)
    assert kube.list("nodes") == []
    kube.advance(1)
    [node] = kube.list("nodes")
    labels = node["metadata"]["labels"]
    assert {k: labels[k] for k in ("karpenter.sh/nodepool", "karpenter.sh/capacity-type", "karpenter.sh/registered",
                                   "karpenter.sh/initialized", "node.kubernetes.io/instance-type",
                                   "dockyard.dev/compute", "kubernetes.io/arch", "kubernetes.io/os")} == {
        "karpenter.sh/nodepool": "gpu", "karpenter.sh/capacity-type": "on-demand", "karpenter.sh/registered": "true",
        "karpenter.sh/initialized": "true", "node.kubernetes.io/instance-type": "Standard_NC6s_v3",
        "dockyard.dev/compute": "gpu", "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"}
    assert labels["topology.kubernetes.io/zone"].startswith("eastus-")
    assert node["spec"]["taints"] == [{"key": "dockyard.dev/compute", "value": "gpu", "effect": "NoSchedule"}]
    assert node["status"]["allocatable"] == {"cpu": "5860m", "memory": "112338Mi", "pods": "110", "nvidia.com/gpu": "1"}
    assert kube.get("pods", "train-0", "default")["spec"]["nodeName"] == node["metadata"]["name"]
    ready = {c["type"]: c["status"] for c in kube.get("nodeclaims", claim["metadata"]["name"], group="karpenter.sh")["status"]["conditions"]}
    assert ready == {"Launched": "True", "Registered": "True", "Initialized": "True", "Ready": "True"}
    status = kube.get("nodepools", "gpu", group="karpenter.sh")["status"]
    assert status["nodes"] == 1 and status["resources"]["nodes"] == "1" and status["resources"]["nvidia.com/gpu"] == "1"
    assert pod["metadata"]["uid"]


def test_allocatable_is_capacity_less_the_documented_reserve():
    it = DEFAULT_INSTANCE_TYPES["Standard_DS3_v2"]
    alloc = it.allocatable()
    assert alloc["cpu"] == Fraction(386, 100) and alloc["memory"] == (14 * 1024 - 2250 - 100) * 1024 * 1024
    small = DEFAULT_INSTANCE_TYPES["Standard_F4s_v2"].allocatable()
    assert small["memory"] == (8 * 1024 - 2048 - 100) * 1024 * 1024  # 25% of memory is the smaller reserve


def test_pods_waiting_for_a_launching_claim_do_not_launch_another(kube):
    _pool(kube, requirements=[{"key": "node.kubernetes.io/instance-type", "operator": "In",
                               "values": ["Standard_DS3_v2"]}], taints=[], labels={})
    for i in range(3):
        kube.create(pending_pod(f"small-{i}", cpu="1", memory="1Gi", selector=IN_POOL))
    [claim] = _claims(kube)
    assert len(kube.events("default", "small-2", "Nominated")) == 1
    kube.advance(30)
    assert {kube.get("pods", f"small-{i}", "default")["spec"].get("nodeName") for i in range(3)} == {
        claim["metadata"]["name"]}


def test_a_pod_that_does_not_tolerate_the_pool_taint_gets_no_node(kube):
    _pool(kube)
    kube.create(pending_pod("stray", cpu="1", selector=IN_POOL))
    assert _claims(kube) == []
    assert _karpenter_events(kube, "stray") == [('Failed to schedule pod, incompatible with nodepool "gpu", node(s) had untolerated '
                                'taint {dockyard.dev/compute: gpu}')]


def test_the_claims_and_pool_status_read_through_the_real_client(kube):
    _pool(kube)
    _job_pod(kube, "a")
    kube.advance(30)
    with api_client(kube) as api:
        objects = client.CustomObjectsApi(api)
        [claim] = objects.list_cluster_custom_object("karpenter.sh", "v1", "nodeclaims",
                                                     label_selector="karpenter.sh/nodepool=gpu")["items"]
        pool = objects.get_cluster_custom_object("karpenter.sh", "v1", "nodepools", "gpu")
    assert claim["status"]["nodeName"] == claim["metadata"]["name"]
    assert {c["type"]: c["status"] for c in pool["status"]["conditions"]} == {
        "ValidationSucceeded": "True", "NodeClassReady": "True", "Ready": "True"}


def test_node_and_resource_limits(kube):
    _pool(kube, limits={"nodes": 1})
    _job_pod(kube, "a")
    _job_pod(kube, "b")
    assert len(_claims(kube)) == 1
    assert _karpenter_events(kube, "b") == ['Failed to schedule pod, node limits have been exhausted for nodepool "gpu"']
    kube.create(nodepool("cpu", requirements=[], limits={"cpu": "2"}))
    kube.create(pending_pod("c", cpu="1", selector={"karpenter.sh/nodepool": "cpu"}))
    assert _karpenter_events(kube, "c") == [
        'Failed to schedule pod, all available instance types exceed limits for nodepool "cpu"; incompatible with '
        'nodepool "gpu", node(s) had untolerated taint {dockyard.dev/compute: gpu}']


def test_failed_launches_are_retried_and_mended(kube):
    _pool(kube)
    kube.fail_launches("gpu", message="SkuNotAvailable: Standard_NC6s_v3 is not available in eastus")
    _job_pod(kube, "a")
    [claim] = _claims(kube)
    launched = next(c for c in claim["status"]["conditions"] if c["type"] == "Launched")
    assert (launched["status"], launched["reason"], launched["message"]) == (
        "False", "InsufficientCapacity", "SkuNotAvailable: Standard_NC6s_v3 is not available in eastus")
    kube.advance(10)
    [retry] = _claims(kube)
    assert retry["metadata"]["name"] != claim["metadata"]["name"]
    kube.mend_launches()
    kube.advance(10)
    kube.advance(30)
    assert kube.get("pods", "a", "default")["spec"].get("nodeName")


def test_when_empty_removes_a_node_after_consolidate_after(kube):
    _pool(kube, disruption={"consolidationPolicy": "WhenEmpty", "consolidateAfter": "60s"})
    _job_pod(kube, "a")
    kube.advance(30)
    [node] = kube.list("nodes")
    kube.delete("pods", "a", "default")
    kube.advance(59)
    assert [n["metadata"]["name"] for n in kube.list("nodes")] == [node["metadata"]["name"]]
    kube.advance(1)
    assert kube.list("nodes") == [] and _claims(kube) == []


def test_do_not_disrupt_blocks_underutilized_consolidation_but_not_expiry(kube):
    _pool(kube, requirements=[{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["Standard_DS3_v2"]}],
          taints=[], labels={}, disruption={"consolidateAfter": "0s"}, expire_after="2h")
    kube.add_node("static", cpu="8", memory="32Gi")
    kube.create(pending_pod("keep", cpu="3", selector=IN_POOL, annotations={"karpenter.sh/do-not-disrupt": "true"}))
    kube.advance(30)
    assert len(kube.list("nodes")) == 2
    kube.advance(3600)
    assert len(kube.list("nodes")) == 2  # its pod would fit on `static`, but may not be disrupted
    kube.advance(3600)
    assert [n["metadata"]["name"] for n in kube.list("nodes")] == ["static"]  # expired, regardless


def test_when_empty_or_underutilized_evicts_pods_that_fit_elsewhere(kube):
    _pool(kube, requirements=[{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["Standard_DS3_v2"]}],
          taints=[], labels={})
    kube.create(pending_pod("job", cpu="3", selector=None))
    kube.advance(30)
    kube.add_node("static", cpu="8", memory="32Gi")
    kube.settle()
    assert [n["metadata"]["name"] for n in kube.list("nodes")] == ["static"]
    assert kube.get("pods", "job", "default") is None  # evicted: the trap for a running training job


def test_a_balloon_keeps_a_warm_node_and_is_replaced_after_preemption(kube):
    kube.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "balloon"},
                 "value": -10, "preemptionPolicy": "Never"})
    _pool(kube, limits={"nodes": 2})
    template = pending_pod("x", cpu="4", memory="8Gi", gpu=1, selector=IN_POOL, tolerations=TOLERATE,
                           priority_class="balloon")
    kube.create({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "warm", "namespace": "default"},
                 "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "warm"}},
                          "template": {"metadata": {"labels": {"app": "warm"}}, "spec": template["spec"]}}})
    kube.advance(30)
    [warm_node] = kube.list("nodes")
    _job_pod(kube, "train")
    assert kube.get("pods", "train", "default")["spec"]["nodeName"] == warm_node["metadata"]["name"]
    [balloon] = [p for p in kube.list("pods", "default") if p["metadata"]["name"].startswith("warm-")]
    assert balloon["spec"].get("nodeName") is None
    assert len(_claims(kube)) == 2  # the pending balloon brought a second node (the limit allows two)
    kube.advance(30)
    [balloon] = [p for p in kube.list("pods", "default") if p["metadata"]["name"].startswith("warm-")]
    assert balloon["spec"]["nodeName"] != warm_node["metadata"]["name"]
    _job_pod(kube, "train-2")
    kube.advance(60)
    assert len(_claims(kube)) == 2 and kube.get("pods", "train-2", "default")["spec"].get("nodeName")
    [balloon] = [p for p in kube.list("pods", "default") if p["metadata"]["name"].startswith("warm-")]
    assert _karpenter_events(kube, balloon["metadata"]["name"]) == [
        'Failed to schedule pod, node limits have been exhausted for nodepool "gpu"']
