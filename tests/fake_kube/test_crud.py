"""CRUD semantics and the Status bodies of failures, through the real typed client."""
import json

import pytest
from kubernetes import client

from tests.fake_kube.helpers import job_manifest, namespace, status_of


@pytest.fixture
def core(kube_api):
    return client.CoreV1Api(kube_api)


@pytest.fixture
def batch(kube_api):
    return client.BatchV1Api(kube_api)


def test_create_sets_system_metadata_and_get_returns_it(core):
    created = core.create_namespaced_config_map("default", {"metadata": {"name": "settings"}, "data": {"k": "v"}})
    meta = created.metadata
    assert meta.uid and meta.creation_timestamp and int(meta.resource_version) > 0
    assert created.metadata.generation is None  # ConfigMaps have no generation
    fetched = core.read_namespaced_config_map("settings", "default")
    assert fetched.metadata.resource_version == meta.resource_version and fetched.data == {"k": "v"}


def test_resource_versions_are_one_global_increasing_counter(core):
    first = core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    second = core.create_namespaced_secret("default", {"metadata": {"name": "b"}, "stringData": {"x": "y"}})
    assert int(second.metadata.resource_version) > int(first.metadata.resource_version)
    assert second.data == {"x": "eQ=="} and second.type == "Opaque"  # stringData folded into data


def test_duplicate_create_is_409_already_exists(batch):
    batch.create_namespaced_job("default", job_manifest("train"))
    code, body = status_of(batch.create_namespaced_job, "default", job_manifest("train"))
    assert code == 409
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": 'jobs.batch "train" already exists', "reason": "AlreadyExists",
                    "details": {"name": "train", "group": "batch", "kind": "jobs"}, "code": 409}


def test_unknown_object_is_404_not_found(core, batch):
    code, body = status_of(batch.read_namespaced_job, "ghost", "default")
    assert code == 404 and body["reason"] == "NotFound" and body["message"] == 'jobs.batch "ghost" not found'
    assert body["details"] == {"name": "ghost", "group": "batch", "kind": "jobs"}
    code, body = status_of(core.read_namespaced_pod, "ghost", "default")
    assert body["details"] == {"name": "ghost", "kind": "pods"} and code == 404


def test_create_in_missing_namespace_is_404_for_the_namespace(batch):
    code, body = status_of(batch.create_namespaced_job, "nowhere", job_manifest("train"))
    assert code == 404 and body["message"] == 'namespaces "nowhere" not found'
    assert body["details"] == {"name": "nowhere", "kind": "namespaces"}


def test_replace_with_stale_resource_version_is_409_conflict(core):
    created = core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}, "data": {"a": "1"}})
    created.data = {"a": "2"}
    updated = core.replace_namespaced_config_map("cm", "default", created)
    assert updated.data == {"a": "2"}
    assert int(updated.metadata.resource_version) > int(created.metadata.resource_version)
    created.data = {"a": "3"}  # still carries the old resourceVersion
    code, body = status_of(core.replace_namespaced_config_map, "cm", "default", created)
    assert code == 409 and body["reason"] == "Conflict"
    assert body["message"] == ('Operation cannot be fulfilled on configmaps "cm": the object has been modified; '
                               'please apply your changes to the latest version and try again')


def test_replace_without_changes_does_not_bump_resource_version(core):
    created = core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}, "data": {"a": "1"}})
    again = core.replace_namespaced_config_map("cm", "default", created)
    assert again.metadata.resource_version == created.metadata.resource_version


def test_generation_bumps_on_spec_changes_only(kube_api, batch):
    apps = client.AppsV1Api(kube_api)
    from tests.fake_kube.helpers import deployment_manifest
    created = apps.create_namespaced_deployment("default", deployment_manifest("web"))
    assert created.metadata.generation == 1
    labelled = apps.patch_namespaced_deployment("web", "default", {"metadata": {"labels": {"x": "y"}}})
    assert labelled.metadata.generation == 1
    scaled = apps.patch_namespaced_deployment("web", "default", {"spec": {"replicas": 3}})
    assert scaled.metadata.generation == 2


def test_label_selectors(core):
    for name, labels in {"a": {"tier": "web", "env": "prod"}, "b": {"tier": "db", "env": "prod"},
                         "c": {"tier": "web"}}.items():
        core.create_namespaced_config_map("default", {"metadata": {"name": name, "labels": labels}})

    def names(selector):
        return sorted(i.metadata.name for i in core.list_namespaced_config_map(
            "default", label_selector=selector).items if i.metadata.name in "abc")

    assert names("tier=web") == ["a", "c"]
    assert names("tier!=web") == ["b"]
    assert names("tier in (db, cache)") == ["b"]
    assert names("tier notin (db)") == ["a", "c"]
    assert names("env") == ["a", "b"]
    assert names("!env") == ["c"]
    assert names("tier=web,env=prod") == ["a"]
    code, body = status_of(core.list_namespaced_config_map, "default", label_selector="tier in (")
    assert code == 400 and body["reason"] == "BadRequest"


def test_field_selectors_and_pagination(core):
    for i in range(5):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"cm-{i}"}})
    only = core.list_namespaced_config_map("default", field_selector="metadata.name=cm-3")
    assert [i.metadata.name for i in only.items] == ["cm-3"]
    everywhere = core.list_config_map_for_all_namespaces(field_selector="metadata.namespace=default")
    assert len([i for i in everywhere.items if i.metadata.name.startswith("cm-")]) == 5
    page = core.list_namespaced_config_map("default", limit=2)
    assert len(page.items) == 2 and page.metadata._continue
    rest = core.list_namespaced_config_map("default", limit=10, _continue=page.metadata._continue)
    assert {i.metadata.name for i in page.items} | {i.metadata.name for i in rest.items} >= {f"cm-{i}" for i in range(5)}
    code, body = status_of(core.list_namespaced_config_map, "default", field_selector="data.x=1")
    assert code == 400 and body["message"] == "field label not supported: data.x"


def test_list_items_of_builtin_kinds_have_no_kind(kube_api):
    raw = kube_api.call_api("/api/v1/namespaces", "GET", auth_settings=["BearerToken"], _preload_content=False,
                            _return_http_data_only=True)
    import json
    body = json.loads(raw.data)
    assert body["kind"] == "NamespaceList" and "kind" not in body["items"][0]


def test_generate_name(core):
    created = core.create_namespaced_config_map("default", {"metadata": {"generateName": "run-"}})
    assert created.metadata.name.startswith("run-") and len(created.metadata.name) == 9


def test_finalizers_keep_a_deleted_object_until_removed(core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "held", "finalizers": ["dockyard.dev/cleanup"]}})
    core.delete_namespaced_config_map("held", "default")
    held = core.read_namespaced_config_map("held", "default")
    assert held.metadata.deletion_timestamp is not None
    code, body = status_of(core.patch_namespaced_config_map, "held", "default",
                           {"metadata": {"finalizers": ["dockyard.dev/cleanup", "other.dev/x"]}})
    assert code == 422 and "no new finalizers" in body["message"]
    core.patch_namespaced_config_map("held", "default", {"metadata": {"finalizers": None}})
    status_of(core.read_namespaced_config_map, "held", "default")


def test_deleting_a_job_orphans_pods_by_default_and_background_removes_them(fake_kube, batch, core):
    batch.create_namespaced_job("default", job_manifest("keep"))
    batch.create_namespaced_job("default", job_manifest("drop"))
    assert core.list_namespaced_pod("default", label_selector="job-name=keep").items
    batch.delete_namespaced_job("keep", "default")
    kept = core.list_namespaced_pod("default", label_selector="job-name=keep").items
    assert kept and not kept[0].metadata.owner_references
    batch.delete_namespaced_job("drop", "default", propagation_policy="Background")
    assert not core.list_namespaced_pod("default", label_selector="job-name=drop").items


def test_foreground_deletion_keeps_the_object_readable_for_a_moment_then_removes_dependents_first(fake_kube, batch,
                                                                                                   core):
    batch.create_namespaced_job("default", job_manifest("fg"))
    answer = batch.delete_namespaced_job("fg", "default", propagation_policy="Foreground", _preload_content=False)
    body = json.loads(answer.data)  # 200 with the object (the client would read it as a Status)
    assert answer.status == 200 and body["kind"] == "Job" and body["metadata"]["finalizers"] == ["foregroundDeletion"]
    live = batch.read_namespaced_job("fg", "default")  # as on a real cluster: still there while the GC works
    assert live.metadata.deletion_timestamp and live.metadata.finalizers == ["foregroundDeletion"]
    assert core.list_namespaced_pod("default", label_selector="job-name=fg").items
    fake_kube.advance(1)
    status_of(batch.read_namespaced_job, "fg", "default")
    assert not core.list_namespaced_pod("default", label_selector="job-name=fg").items


def test_foreground_deletion_of_an_object_without_dependents_goes_a_moment_later(fake_kube, core):
    core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}})
    core.delete_namespaced_config_map("cm", "default", propagation_policy="Foreground")
    assert core.read_namespaced_config_map("cm", "default").metadata.finalizers == ["foregroundDeletion"]
    fake_kube.advance(1)
    code, _ = status_of(core.read_namespaced_config_map, "cm", "default")
    assert code == 404


def test_status_subresource_changes_only_status(core):
    svc = {"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}}
    created = core.create_namespaced_service("default", svc)
    ingress = {"loadBalancer": {"ingress": [{"ip": "192.0.2.7"}]}}
    patched = core.patch_namespaced_service_status("lb", "default", {"status": ingress,
                                                                     "spec": {"ports": [{"port": 81}]}})
    assert patched.status.load_balancer.ingress[0].ip == "192.0.2.7" and patched.spec.ports[0].port == 80
    main = core.patch_namespaced_service("lb", "default", {"status": {"loadBalancer": {}}})
    assert main.status.load_balancer.ingress[0].ip == "192.0.2.7"  # main-resource writes ignore .status
    assert created.spec.cluster_ip == main.spec.cluster_ip


def test_deleted_namespace_refuses_new_content(fake_kube, core):
    namespace(core, "team-a")
    fake_kube.advance(1)
    core.create_namespaced_config_map("team-a", {"metadata": {"name": "x"}})
    core.delete_namespace("team-a")
    fake_kube.advance(1)
    assert fake_kube.get("namespaces", "team-a") is None and not fake_kube.list("configmaps", "team-a")
    code, _ = status_of(core.create_namespaced_config_map, "team-a", {"metadata": {"name": "y"}})
    assert code == 404


def test_terminating_namespace_answers_403_forbidden(fake_kube, core):
    namespace(core, "team-b")
    fake_kube.create({"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": "held", "namespace": "team-b", "finalizers": ["dockyard.dev/x"]}})
    core.delete_namespace("team-b")
    assert core.read_namespace("team-b").status.phase == "Terminating"
    code, body = status_of(core.create_namespaced_config_map, "team-b", {"metadata": {"name": "y"}})
    assert code == 403 and "because it is being terminated" in body["message"]


def test_create_with_a_resource_version_is_refused(core):
    code, body = status_of(core.create_namespaced_config_map, "default",
                           {"metadata": {"name": "cm", "resourceVersion": "12"}})
    assert code == 500 and body["message"].endswith("resourceVersion should not be set on objects to be created")


def test_delete_collection_by_label(core):
    for name, team in (("a", "x"), ("b", "x"), ("c", "y")):
        core.create_namespaced_config_map("default", {"metadata": {"name": name, "labels": {"team": team}}})
    core.delete_collection_namespaced_config_map("default", label_selector="team=x")
    left = {i.metadata.name for i in core.list_namespaced_config_map("default").items}
    assert "c" in left and not {"a", "b"} & left


def test_cluster_scoped_paths_do_not_take_a_namespace(kube_api):
    code, _ = status_of(kube_api.call_api, "/api/v1/namespaces/default/nodes", "GET", auth_settings=["BearerToken"])
    assert code == 404
