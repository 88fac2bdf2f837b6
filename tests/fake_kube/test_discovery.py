"""Discovery: what the real client (and the dynamic client) reads before it does anything."""
import json

from kubernetes import client
from kubernetes.client import VersionApi

from tests.fake_kube.fixtures import api_client


def _raw(api, path):
    response = api.call_api(path, "GET", auth_settings=["BearerToken"], _preload_content=False,
                            _return_http_data_only=True)
    return json.loads(response.data)


def test_version_says_1_36(kube_api):
    info = VersionApi(kube_api).get_code()
    assert info.git_version.startswith("v1.36.") and (info.major, info.minor) == ("1", "36")


def test_core_resource_list_names_kinds_verbs_and_subresources(kube_api):
    resources = {r["name"]: r for r in _raw(kube_api, "/api/v1")["resources"]}
    assert resources["pods"]["kind"] == "Pod" and resources["pods"]["namespaced"] is True
    assert resources["pods"]["shortNames"] == ["po"] and "watch" in resources["pods"]["verbs"]
    assert resources["pods/log"]["verbs"] == ["get"]
    assert resources["nodes"]["namespaced"] is False
    assert set(resources) >= {"namespaces", "services", "serviceaccounts", "secrets", "configmaps", "events",
                              "persistentvolumeclaims", "namespaces/status"}


def test_group_list_and_group_resources(kube_api):
    groups = {g["name"]: g for g in _raw(kube_api, "/apis")["groups"]}
    assert groups["batch"]["preferredVersion"]["groupVersion"] == "batch/v1"
    assert groups["autoscaling"]["versions"][0]["version"] == "v2"
    assert "gateway.networking.k8s.io" not in groups  # only once its CRD is installed
    batch = {r["name"]: r for r in _raw(kube_api, "/apis/batch/v1")["resources"]}
    assert batch["jobs"]["singularName"] == "job" and batch["jobs/status"]["verbs"] == ["get", "patch", "update"]
    apps = {r["name"]: r for r in _raw(kube_api, "/apis/apps/v1")["resources"]}
    assert {"deployments", "statefulsets", "deployments/scale"} <= set(apps)
    ssar = {r["name"]: r for r in _raw(kube_api, "/apis/authorization.k8s.io/v1")["resources"]}
    assert ssar["selfsubjectaccessreviews"]["verbs"] == ["create"]


def test_unknown_group_version_is_404_status(kube_api):
    try:
        _raw(kube_api, "/apis/gateway.networking.k8s.io/v1")
    except client.ApiException as error:
        assert error.status == 404
        assert json.loads(error.body)["reason"] == "NotFound"
    else:
        raise AssertionError("expected 404")


def test_openapi_v2_is_served(kube_api):
    doc = _raw(kube_api, "/openapi/v2")
    assert doc["swagger"] == "2.0" and any(k.endswith(".Job") for k in doc["definitions"])


def test_dynamic_client_discovers_and_does_crud(kube_dynamic):
    assert kube_dynamic.version["kubernetes"]["gitVersion"].startswith("v1.36")
    jobs = kube_dynamic.resources.get(api_version="batch/v1", kind="Job")
    assert jobs.namespaced and jobs.subresources["status"]
    configmaps = kube_dynamic.resources.get(api_version="v1", kind="ConfigMap")
    created = configmaps.create(body={"metadata": {"name": "cm"}, "data": {"a": "1"}}, namespace="default")
    assert created.metadata.uid and created.data.a == "1"
    listed = configmaps.get(namespace="default")
    assert [item.metadata.name for item in listed.items] == ["cm"]
    configmaps.delete(name="cm", namespace="default")


def test_no_token_is_401_but_version_is_public(fake_kube):
    with api_client(fake_kube, token="wrong") as api:
        try:
            client.CoreV1Api(api).list_namespace()
        except client.ApiException as error:
            assert error.status == 401 and json.loads(error.body)["reason"] == "Unauthorized"
        else:
            raise AssertionError("expected 401")
    with api_client(fake_kube) as api:
        api.configuration.api_key = {}
        api.configuration.api_key_prefix = {}
        assert VersionApi(api).get_code().major == "1"
