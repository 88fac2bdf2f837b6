"""Server-side apply (ownership, conflicts, removal, no-op) and the other patch types."""
import json

import pytest
from kubernetes import client

from tests.fake_kube.helpers import deployment_manifest, job_manifest, reasonless_500, status_of, valid_manifests


@pytest.fixture
def deployments(kube_dynamic):
    return kube_dynamic.resources.get(api_version="apps/v1", kind="Deployment")


def _apply(resource, body, manager="dockyard", force=None):
    return resource.server_side_apply(body=body, namespace="default", field_manager=manager, force_conflicts=force)


def _owned(obj, manager):
    entries = [e for e in obj["metadata"]["managedFields"] if e["manager"] == manager]
    return entries[0]["fieldsV1"] if entries else None


def test_apply_creates_then_updates_and_tracks_the_manager(deployments):
    created = _apply(deployments, deployment_manifest("web", replicas=2)).to_dict()
    assert created["metadata"]["generation"] == 1
    entry = created["metadata"]["managedFields"][0]
    assert (entry["manager"], entry["operation"], entry["apiVersion"]) == ("dockyard", "Apply", "apps/v1")
    owned = entry["fieldsV1"]
    assert "f:replicas" in owned["f:spec"]
    assert "." in owned["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"web"}']
    assert "f:revisionHistoryLimit" not in owned["f:spec"]  # defaults are not the applier's
    updated = _apply(deployments, deployment_manifest("web", replicas=3)).to_dict()
    assert updated["spec"]["replicas"] == 3 and updated["metadata"]["generation"] == 2


def test_reapplying_the_same_config_changes_nothing(deployments):
    _apply(deployments, deployment_manifest("web"))
    latest = deployments.get(name="web", namespace="default").to_dict()
    third = _apply(deployments, deployment_manifest("web")).to_dict()
    assert third["metadata"]["resourceVersion"] == latest["metadata"]["resourceVersion"]
    assert third["metadata"]["generation"] == 1


def test_conflicting_apply_is_409_until_forced(deployments):
    _apply(deployments, deployment_manifest("web", replicas=2))
    with pytest.raises(Exception) as caught:
        _apply(deployments, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                             "spec": {"replicas": 5}}, manager="autoscaler")
    error = caught.value
    assert error.status == 409
    body = json.loads(error.body)
    assert body["reason"] == "Conflict"
    assert body["message"] == 'Apply failed with 1 conflict: conflict with "dockyard" using apps/v1: .spec.replicas'
    assert body["details"]["causes"] == [{"reason": "FieldManagerConflict", "field": ".spec.replicas",
                                          "message": 'conflict with "dockyard" using apps/v1'}]
    forced = _apply(deployments, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                                  "spec": {"replicas": 5}}, manager="autoscaler", force=True).to_dict()
    assert forced["spec"]["replicas"] == 5
    assert "f:replicas" not in _owned(forced, "dockyard")["f:spec"]
    assert "f:replicas" in _owned(forced, "autoscaler")["f:spec"]


def test_applying_the_same_value_is_shared_ownership_not_a_conflict(deployments):
    _apply(deployments, deployment_manifest("web", replicas=2))
    shared = _apply(deployments, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                                  "spec": {"replicas": 2}}, manager="other").to_dict()
    assert "f:replicas" in _owned(shared, "dockyard")["f:spec"] and "f:replicas" in _owned(shared, "other")["f:spec"]


def test_fields_dropped_from_the_config_are_removed_unless_someone_else_owns_them(kube_dynamic):
    configmaps = kube_dynamic.resources.get(api_version="v1", kind="ConfigMap")
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "labels": {"a": "1", "b": "2"}},
            "data": {"x": "1", "y": "2"}}
    _apply(configmaps, body)
    _apply(configmaps, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "labels": {"c": "3"}}},
           manager="other")
    body["metadata"]["labels"] = {"a": "1"}
    body["data"] = {"x": "1"}
    result = _apply(configmaps, body).to_dict()
    assert result["metadata"]["labels"] == {"a": "1", "c": "3"}
    assert result["data"] == {"x": "1"}


def test_containers_merge_by_name_across_managers(deployments):
    _apply(deployments, deployment_manifest("web"))
    sidecar = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {
        "template": {"spec": {"containers": [{"name": "log", "image": "fluent-bit:3"}]}}}}
    merged = _apply(deployments, sidecar, manager="mesh").to_dict()
    names = [c["name"] for c in merged["spec"]["template"]["spec"]["containers"]]
    assert names == ["web", "log"]
    again = _apply(deployments, deployment_manifest("web", image="nginx:1.28")).to_dict()
    assert [(c["name"], c["image"]) for c in again["spec"]["template"]["spec"]["containers"]] == [
        ("web", "nginx:1.28"), ("log", "fluent-bit:3")]


def test_update_takes_ownership_so_a_later_apply_conflicts(kube_api, deployments):
    _apply(deployments, deployment_manifest("web", replicas=2))
    client.AppsV1Api(kube_api).patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 4}})
    with pytest.raises(Exception) as caught:
        _apply(deployments, deployment_manifest("web", replicas=2))
    assert caught.value.status == 409 and "OpenAPI-Generator" in json.loads(caught.value.body)["message"]


def test_apply_needs_a_field_manager(kube_api):
    code, body = status_of(client.CoreV1Api(kube_api).patch_namespaced_config_map, "cm", "default",
                           {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}},
                           _content_type="application/apply-patch+yaml")
    assert code == 422 and body["details"]["causes"][0]["field"] == "fieldManager"


def test_apply_of_fields_not_in_the_schema_is_a_reasonless_500_like_the_real_server(deployments):
    body = deployment_manifest("web")
    body["spec"]["replica"] = 2
    assert reasonless_500(_apply, deployments, body) == (
        "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): "
        ".spec.replica: field not declared in schema")


QUANTITY_FORMAT = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


def test_apply_of_a_built_in_with_a_bad_quantity_is_a_reasonless_500_like_the_real_server(kube_dynamic):
    jobs = kube_dynamic.resources.get(api_version="batch/v1", kind="Job")
    body = job_manifest("q", resources={"limits": {"cpu": "2 cores"}})
    assert reasonless_500(_apply, jobs, body) == (
        "failed to convert new object (default/q; batch/v1, Kind=Job) to proper version: unable to "
        f"convert unstructured object to batch/v1, Kind=Job: {QUANTITY_FORMAT}")
    assert jobs.get(namespace="default").items == []  # nothing was written


def test_merge_patch_and_null_deletes(kube_api):
    core = client.CoreV1Api(kube_api)
    core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}, "data": {"a": "1", "b": "2"}})
    patched = core.patch_namespaced_config_map("cm", "default", {"data": {"a": None, "c": "3"}},
                                               _content_type="application/merge-patch+json")
    assert patched.data == {"b": "2", "c": "3"}


def test_strategic_merge_patch_merges_containers_by_name_merge_patch_replaces(kube_api):
    apps = client.AppsV1Api(kube_api)
    manifest = deployment_manifest("web")
    manifest["spec"]["template"]["spec"]["containers"].append({"name": "log", "image": "fluent-bit:3"})
    apps.create_namespaced_deployment("default", manifest)
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "log", "image": "fluent-bit:4"}]}}}}
    strategic = apps.patch_namespaced_deployment("web", "default", patch)
    assert [(c.name, c.image) for c in strategic.spec.template.spec.containers] == [
        ("web", "nginx:1.27"), ("log", "fluent-bit:4")]
    merged = apps.patch_namespaced_deployment("web", "default", patch, _content_type="application/merge-patch+json")
    assert [c.name for c in merged.spec.template.spec.containers] == ["log"]


def test_json_patch(kube_api):
    core = client.CoreV1Api(kube_api)
    core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}, "data": {"a": "1"}})
    patched = core.patch_namespaced_config_map("cm", "default", [{"op": "add", "path": "/data/b", "value": "2"},
                                                                 {"op": "replace", "path": "/data/a", "value": "9"}])
    assert patched.data == {"a": "9", "b": "2"}
    code, _ = status_of(core.patch_namespaced_config_map, "cm", "default",
                        [{"op": "test", "path": "/data/a", "value": "1"}])
    assert code == 422


def test_patch_with_stale_resource_version_is_409(kube_api):
    core = client.CoreV1Api(kube_api)
    created = core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}, "data": {"a": "1"}})
    core.patch_namespaced_config_map("cm", "default", {"data": {"a": "2"}})
    code, body = status_of(core.patch_namespaced_config_map, "cm", "default",
                           {"metadata": {"resourceVersion": created.metadata.resource_version}, "data": {"a": "3"}})
    assert code == 409 and body["reason"] == "Conflict"


@pytest.mark.parametrize("manifest", valid_manifests(), ids=lambda m: m["kind"])
def test_reapplying_any_valid_manifest_is_a_no_op_even_after_controllers_ran(fake_kube, kube_dynamic, manifest):
    resource = kube_dynamic.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
    _apply(resource, manifest)
    fake_kube.advance(2)  # controllers write status, annotations, bindings
    before = resource.get(name=manifest["metadata"]["name"], namespace="default").to_dict()
    after = _apply(resource, manifest).to_dict()
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert after["metadata"].get("generation") == before["metadata"].get("generation")


def test_empty_lists_and_maps_are_dropped_on_read_back_like_omitempty(kube_dynamic, kube_api):
    jobs = kube_dynamic.resources.get(api_version="batch/v1", kind="Job")
    body = job_manifest("quiet")
    container = body["spec"]["template"]["spec"]["containers"][0]
    container.update(env=[], args=[])
    body["spec"]["template"]["spec"].update(nodeSelector={}, volumes=[{"name": "scratch", "emptyDir": {}}])
    container["volumeMounts"] = [{"name": "scratch", "mountPath": "/scratch"}]
    applied = _apply(jobs, body).to_dict()
    live = applied["spec"]["template"]["spec"]
    assert "env" not in live["containers"][0] and "args" not in live["containers"][0]
    assert "nodeSelector" not in live and live["volumes"][0]["emptyDir"] == {}  # an empty struct stays
    before = jobs.get(name="quiet", namespace="default").to_dict()
    again = _apply(jobs, body).to_dict()
    assert again["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]  # still a no-op
    created = client.CoreV1Api(kube_api).create_namespaced_config_map(
        "default", {"metadata": {"name": "cm", "labels": {}}, "data": {}}, _preload_content=False)
    assert "labels" not in json.loads(created.data)["metadata"] and "data" not in json.loads(created.data)
