"""StatefulSets as a compute instance uses them: ordinal pod, its claim and the retention policy, scheduling, updates."""
import json

import pytest
from kubernetes import client

NAMESPACE = "default"
LABELS = {"dockyard.io/compute-instance": "x"}


def manifest(policy=None, cpu="1", replicas=1) -> dict:
    """The shape of Dockyard's instance StatefulSet: one replica, a `home` claim template."""
    spec = {"replicas": replicas, "serviceName": "ci-x", "selector": {"matchLabels": LABELS},
            "template": {"metadata": {"labels": LABELS}, "spec": {"containers": [{
                "name": "jupyter", "image": "lab:1", "resources": {"requests": {"cpu": cpu}},
                "ports": [{"name": "jupyter", "containerPort": 8888}],
                "volumeMounts": [{"name": "home", "mountPath": "/home/jovyan"}]}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "home"}, "spec": {
                "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}}}]}
    if policy:
        spec["persistentVolumeClaimRetentionPolicy"] = policy
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "ci-x"}, "spec": spec}


KEEP_ON_SCALE = {"whenScaled": "Retain", "whenDeleted": "Delete"}


def scale(apps: client.AppsV1Api, replicas: int) -> None:
    apps.patch_namespaced_stateful_set_scale("ci-x", NAMESPACE, {"spec": {"replicas": replicas}})


def test_running_pod_has_an_ip_is_ready_and_mounts_its_claim(fake_kube, kube_api):
    client.AppsV1Api(kube_api).create_namespaced_stateful_set(NAMESPACE, manifest(KEEP_ON_SCALE))
    fake_kube.advance(2)
    pod = client.CoreV1Api(kube_api).read_namespaced_pod("ci-x-0", NAMESPACE)
    conditions = {c.type: c.status for c in pod.status.conditions}
    assert pod.status.phase == "Running" and pod.status.pod_ip.startswith("10.244.") and conditions["Ready"] == "True"
    assert [v.persistent_volume_claim.claim_name for v in pod.spec.volumes if v.persistent_volume_claim] == ["home-ci-x-0"]
    sts = client.AppsV1Api(kube_api).read_namespaced_stateful_set("ci-x", NAMESPACE)
    assert (sts.status.ready_replicas, sts.spec.persistent_volume_claim_retention_policy.when_scaled) == (1, "Retain")


def test_scale_to_zero_keeps_the_claim_and_scale_back_reuses_it(fake_kube, kube_api):
    apps, core = client.AppsV1Api(kube_api), client.CoreV1Api(kube_api)
    apps.create_namespaced_stateful_set(NAMESPACE, manifest(KEEP_ON_SCALE))
    fake_kube.advance(2)
    claim = core.read_namespaced_persistent_volume_claim("home-ci-x-0", NAMESPACE)
    scale(apps, 0)
    fake_kube.advance(2)
    assert core.list_namespaced_pod(NAMESPACE, label_selector="dockyard.io/compute-instance=x").items == []
    assert core.read_namespaced_persistent_volume_claim("home-ci-x-0", NAMESPACE).metadata.uid == claim.metadata.uid
    scale(apps, 1)
    fake_kube.advance(2)
    pod = core.read_namespaced_pod("ci-x-0", NAMESPACE)
    assert pod.status.phase == "Running"
    assert core.read_namespaced_persistent_volume_claim("home-ci-x-0", NAMESPACE).metadata.uid == claim.metadata.uid
    assert len(core.list_namespaced_persistent_volume_claim(NAMESPACE).items) == 1


@pytest.mark.parametrize("when_deleted, kept", [("Delete", False), ("Retain", True)])
def test_deleting_the_statefulset_collects_the_claim_only_when_deleted_is_delete(fake_kube, kube_api, when_deleted, kept):
    apps = client.AppsV1Api(kube_api)
    apps.create_namespaced_stateful_set(NAMESPACE, manifest({"whenScaled": "Retain", "whenDeleted": when_deleted}))
    fake_kube.advance(2)
    apps.delete_namespaced_stateful_set("ci-x", NAMESPACE)
    fake_kube.advance(2)
    assert fake_kube.get("pods", "ci-x-0", NAMESPACE) is None
    assert (fake_kube.get("persistentvolumeclaims", "home-ci-x-0", NAMESPACE) is not None) is kept


def test_changing_the_policy_updates_the_claims_owner(fake_kube, kube_api):
    apps = client.AppsV1Api(kube_api)
    apps.create_namespaced_stateful_set(NAMESPACE, manifest({"whenScaled": "Retain", "whenDeleted": "Retain"}))
    fake_kube.advance(2)
    assert not fake_kube.get("persistentvolumeclaims", "home-ci-x-0", NAMESPACE)["metadata"].get("ownerReferences")
    apps.patch_namespaced_stateful_set("ci-x", NAMESPACE, {"spec": {"persistentVolumeClaimRetentionPolicy":
                                                                    KEEP_ON_SCALE}})
    fake_kube.advance(1)
    refs = fake_kube.get("persistentvolumeclaims", "home-ci-x-0", NAMESPACE)["metadata"]["ownerReferences"]
    assert [(r["kind"], r["name"]) for r in refs] == [("StatefulSet", "ci-x")]
    apps.delete_namespaced_stateful_set("ci-x", NAMESPACE)
    fake_kube.advance(2)
    assert fake_kube.get("persistentvolumeclaims", "home-ci-x-0", NAMESPACE) is None


def test_when_scaled_delete_removes_the_claim_of_a_scaled_down_pod(fake_kube, kube_api):
    apps = client.AppsV1Api(kube_api)
    apps.create_namespaced_stateful_set(NAMESPACE, manifest({"whenScaled": "Delete", "whenDeleted": "Retain"}))
    fake_kube.advance(2)
    scale(apps, 0)
    fake_kube.advance(2)
    assert fake_kube.get("persistentvolumeclaims", "home-ci-x-0", NAMESPACE) is None


def test_a_pod_that_fits_nowhere_stays_pending_unschedulable(fake_kube, kube_api):
    client.AppsV1Api(kube_api).create_namespaced_stateful_set(NAMESPACE, manifest(KEEP_ON_SCALE, cpu="64"))
    fake_kube.advance(5)
    pod = client.CoreV1Api(kube_api).read_namespaced_pod("ci-x-0", NAMESPACE)
    scheduled = next(c for c in pod.status.conditions if c.type == "PodScheduled")
    assert (pod.status.phase, pod.status.pod_ip, scheduled.status, scheduled.reason) == (
        "Pending", None, "False", "Unschedulable")
    assert scheduled.message.startswith("0/3 nodes are available: 3 Insufficient cpu.")


@pytest.mark.parametrize("change", [
    lambda spec: spec["volumeClaimTemplates"][0]["spec"]["resources"]["requests"].update(storage="20Gi"),
    lambda spec: spec.update(serviceName="other"),
    lambda spec: spec["selector"]["matchLabels"].update(extra="1"),
    lambda spec: spec.update(podManagementPolicy="Parallel"),
])
def test_fields_a_statefulset_cannot_change(fake_kube, kube_api, change):
    apps = client.AppsV1Api(kube_api)
    apps.create_namespaced_stateful_set(NAMESPACE, manifest(KEEP_ON_SCALE))
    body = kube_api.sanitize_for_serialization(apps.read_namespaced_stateful_set("ci-x", NAMESPACE))
    change(body["spec"])
    body["spec"]["template"]["metadata"]["labels"].update(body["spec"]["selector"]["matchLabels"])
    with pytest.raises(client.ApiException) as caught:
        apps.replace_namespaced_stateful_set("ci-x", NAMESPACE, body)
    answer = json.loads(caught.value.body)
    assert caught.value.status == 422 and answer["reason"] == "Invalid"
    assert any(c["field"] == "spec" and c["message"] == (
        "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
        "'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are "
        "forbidden") for c in answer["details"]["causes"])


def test_allowed_changes_and_a_selector_that_misses_the_template(fake_kube, kube_api):
    apps = client.AppsV1Api(kube_api)
    apps.create_namespaced_stateful_set(NAMESPACE, manifest(KEEP_ON_SCALE))
    apps.patch_namespaced_stateful_set("ci-x", NAMESPACE, {"spec": {
        "replicas": 0, "persistentVolumeClaimRetentionPolicy": {"whenScaled": "Delete"}, "minReadySeconds": 5,
        "template": {"metadata": {"annotations": {"restartedAt": "now"}}}}})
    bad = manifest(KEEP_ON_SCALE)
    bad["metadata"]["name"] = "ci-y"
    bad["spec"]["selector"]["matchLabels"] = {"app": "other"}
    with pytest.raises(client.ApiException) as caught:
        apps.create_namespaced_stateful_set(NAMESPACE, bad)
    assert caught.value.status == 422
    assert "`selector` does not match template `labels`" in json.loads(caught.value.body)["message"]
