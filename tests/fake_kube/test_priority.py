"""scheduling.k8s.io/v1 PriorityClass and the Priority admission plugin, as kube-apiserver 1.36 has them."""
import pytest
from kubernetes import client

from tests.fake_kube.helpers import status_of


def pod(name, **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "main", "image": "busybox"}], **spec}}


def priority_class(name, value=None, **extra):
    body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, **extra}
    if value is not None:
        body["value"] = value
    return body


@pytest.fixture
def scheduling(kube_api):
    return client.SchedulingV1Api(kube_api)


def test_the_system_classes_exist_and_user_classes_default_their_preemption_policy(scheduling):
    names = {pc.metadata.name: pc.value for pc in scheduling.list_priority_class().items}
    assert names == {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}
    created = scheduling.create_priority_class(priority_class("batch", 100, description="batch jobs"))
    assert (created.value, created.preemption_policy, created.global_default) == (100, "PreemptLowerPriority", None)


@pytest.mark.parametrize(("body", "field", "message"), [
    (priority_class("big", 1000000001), "value",
     "Forbidden: maximum allowed value of a user defined priority is 1000000000"),
    (priority_class("system-mine", 5), "metadata.name",
     "Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: "
     "system-mine is not a known system priority class"),
    (priority_class("odd", 5, preemptionPolicy="Sometimes"), "preemptionPolicy",
     'Unsupported value: "Sometimes": supported values: "Never", "PreemptLowerPriority"'),
])
def test_invalid_priority_classes_are_422(scheduling, body, field, message):
    code, status = status_of(scheduling.create_priority_class, body)
    assert code == 422 and {"field": field, "message": message} in [
        {"field": c["field"], "message": c["message"]} for c in status["details"]["causes"]]


def test_value_and_preemption_policy_are_immutable(scheduling):
    scheduling.create_priority_class(priority_class("batch", 100))
    code, status = status_of(scheduling.patch_priority_class, "batch", {"value": 101})
    assert code == 422 and status["details"]["causes"][0]["message"] == "Forbidden: may not be changed in an update."
    code, status = status_of(scheduling.patch_priority_class, "batch", {"preemptionPolicy": "Never"})
    assert code == 422 and status["details"]["causes"][0]["field"] == "preemptionPolicy"


def test_only_one_global_default(scheduling):
    scheduling.create_priority_class(priority_class("first", 10, globalDefault=True))
    code, status = status_of(scheduling.create_priority_class, priority_class("second", 20, globalDefault=True))
    assert code == 403 and status["message"] == ('priorityclasses.scheduling.k8s.io "second" is forbidden: '
                                                 'PriorityClass first is already marked as default. Only one default '
                                                 'can exist')


def test_pods_get_priority_from_their_class_or_zero(kube_api, scheduling):
    core = client.CoreV1Api(kube_api)
    scheduling.create_priority_class(priority_class("placeholder", -10, preemptionPolicy="Never"))
    plain = core.create_namespaced_pod("default", pod("plain"))
    assert (plain.spec.priority, plain.spec.preemption_policy, plain.spec.priority_class_name) == (
        0, "PreemptLowerPriority", None)
    low = core.create_namespaced_pod("default", pod("low", priorityClassName="placeholder"))
    assert (low.spec.priority, low.spec.preemption_policy) == (-10, "Never")
    critical = core.create_namespaced_pod("default", pod("crit", priorityClassName="system-node-critical"))
    assert critical.spec.priority == 2000001000


def test_a_global_default_class_applies_to_pods_without_one(kube_api, scheduling):
    scheduling.create_priority_class(priority_class("normal", 50, globalDefault=True))
    created = client.CoreV1Api(kube_api).create_namespaced_pod("default", pod("p"))
    assert (created.spec.priority, created.spec.priority_class_name) == (50, "normal")


def test_an_unknown_class_or_a_conflicting_priority_is_403(kube_api, scheduling):
    core = client.CoreV1Api(kube_api)
    code, status = status_of(core.create_namespaced_pod, "default", pod("p", priorityClassName="nope"))
    assert code == 403 and status["message"] == 'pods "p" is forbidden: no PriorityClass with name nope was found'
    scheduling.create_priority_class(priority_class("batch", 100))
    code, status = status_of(core.create_namespaced_pod, "default", pod("q", priorityClassName="batch", priority=5))
    assert code == 403 and status["message"] == (
        'pods "q" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority '
        'admission controller computed 100 from the given PriorityClass name')


def test_a_controller_whose_pods_name_an_unknown_class_reports_failed_create(fake_kube, kube_api):
    apps = client.AppsV1Api(kube_api)
    apps.create_namespaced_deployment("default", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"priorityClassName": "missing", "containers": [{"name": "main", "image": "nginx"}]}}}})
    fake_kube.settle()
    rs = apps.list_namespaced_replica_set("default").items[0].metadata.name
    events = fake_kube.events("default", rs, "FailedCreate")
    assert [e["message"] for e in events] == [
        f'Error creating: pods "{rs}-" is forbidden: no PriorityClass with name missing was found']
    assert client.CoreV1Api(kube_api).list_namespaced_pod("default").items == []
