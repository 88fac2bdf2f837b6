"""The scheduler's preemption: lower-priority pods make room for a pending higher-priority pod."""
import pytest
from kubernetes import client

from tests.fake_kube.fixtures import api_client
from tests.fake_kube.karpenter_helpers import pending_pod


@pytest.fixture
def kube(make_fake_kube):
    kube = make_fake_kube(nodes=1, gpu_nodes=0, node_cpu="4", node_memory="16Gi")
    for name, value, policy in (("placeholder", -10, "PreemptLowerPriority"), ("high", 1000, "PreemptLowerPriority"),
                                ("polite", 1000, "Never")):
        kube.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                     "value": value, "preemptionPolicy": policy})
    return kube


@pytest.fixture
def api(kube):
    with api_client(kube) as api:
        yield api


def _pod(kube, name, **kw):
    return kube.create(pending_pod(name, **kw))


def test_a_higher_priority_pod_preempts_the_fewest_lowest_victims(kube, api):
    core = client.CoreV1Api(api)
    _pod(kube, "low-a", cpu="1", priority_class="placeholder")
    kube.advance(1)
    _pod(kube, "low-b", cpu="1", priority_class="placeholder")
    _pod(kube, "normal", cpu="2")
    assert all(p.spec.node_name == "node-0" for p in core.list_namespaced_pod("default").items)
    preemptor = _pod(kube, "urgent", cpu="1", priority_class="high")
    kube.settle()
    remaining = {p.metadata.name: p for p in core.list_namespaced_pod("default").items}
    assert set(remaining) == {"low-a", "normal", "urgent"}  # one victim is enough: the newer (less important) one
    urgent = remaining["urgent"]
    assert urgent.spec.node_name == "node-0" and urgent.status.nominated_node_name == "node-0"
    [event] = kube.events("default", "low-b", "Preempted")
    assert event["message"] == f"Preempted by pod {preemptor['metadata']['uid']} on node node-0"
    assert event["source"]["component"] == "default-scheduler"


def test_victims_get_the_disruption_target_condition_before_deletion(kube):
    _pod(kube, "low", cpu="4", priority_class="placeholder")
    seen = []
    original = kube.sim.delete

    def spy(rt, obj, policy="Background"):
        seen.append(obj)
        original(rt, obj, policy)
    kube.sim.delete = spy
    _pod(kube, "urgent", cpu="4", priority_class="high")
    [victim] = [o for o in seen if o["metadata"]["name"] == "low"]
    condition = next(c for c in victim["status"]["conditions"] if c["type"] == "DisruptionTarget")
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "True", "PreemptionByScheduler", "default-scheduler: preempting to accommodate a higher priority pod")


def test_equal_or_higher_priority_pods_are_never_victims(kube):
    _pod(kube, "normal", cpu="4")
    _pod(kube, "peer", cpu="1")
    pod = kube.get("pods", "peer", "default")
    assert pod["spec"].get("nodeName") is None
    assert pod["status"]["conditions"][0]["message"] == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims "
        "found for incoming pod.")


def test_preemption_policy_never_waits(kube):
    _pod(kube, "low", cpu="4", priority_class="placeholder")
    _pod(kube, "polite", cpu="1", priority_class="polite")
    assert kube.get("pods", "low", "default") is not None
    message = kube.get("pods", "polite", "default")["status"]["conditions"][0]["message"]
    assert message == "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."


def test_preemption_does_not_help_where_a_selector_rules_the_node_out(kube):
    _pod(kube, "low", cpu="4", priority_class="placeholder")
    _pod(kube, "picky", cpu="1", priority_class="high", selector={"pool": "gpu"})
    assert kube.get("pods", "low", "default") is not None
    assert "1 Preemption is not helpful for scheduling" in kube.get("pods", "picky", "default")["status"]["conditions"][0]["message"]


def test_a_preempted_placeholder_of_a_deployment_comes_back_pending(kube, api):
    apps = client.AppsV1Api(api)
    template = pending_pod("x", cpu="3", priority_class="placeholder")
    apps.create_namespaced_deployment("default", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "balloon"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "balloon"}},
                 "template": {"metadata": {"labels": {"app": "balloon"}}, "spec": template["spec"]}}})
    kube.settle()
    _pod(kube, "real", cpu="2")
    kube.settle()
    pods = {p.metadata.name: p for p in client.CoreV1Api(api).list_namespaced_pod("default").items}
    assert pods["real"].spec.node_name == "node-0"
    [balloon] = [p for name, p in pods.items() if name.startswith("balloon-")]
    assert balloon.spec.node_name is None and balloon.status.conditions[0].reason == "Unschedulable"
