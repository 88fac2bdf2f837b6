"""CRDs: served only once Established, schemas enforced with real field paths, cleaned up on delete."""
import json

import pytest
from kubernetes import client

from tests.fake_kube.fixtures import api_client
from tests.fake_kube.helpers import reasonless_500, status_of

QUANTITY = {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True,
            "pattern": r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+"
                       r"(\.[0-9]*)?)|(\.[0-9]+))))?$"}
INSTANCE_TYPE_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "instancetypes.amlarc.azureml.com"},
    "spec": {"group": "amlarc.azureml.com", "scope": "Cluster",
             "names": {"plural": "instancetypes", "singular": "instancetype", "kind": "InstanceType",
                       "listKind": "InstanceTypeList", "shortNames": ["it"]},
             "versions": [{"name": "v1alpha1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "properties": {"spec": {"type": "object", "properties": {
                     "nodeSelector": {"type": "object", "additionalProperties": {"type": "string"}},
                     "resources": {"type": "object", "properties": {
                         "requests": {"type": "object", "properties": {"cpu": QUANTITY, "memory": QUANTITY}},
                         "limits": {"type": "object", "properties": {
                             "cpu": QUANTITY, "memory": QUANTITY, "nvidia.com/gpu": QUANTITY}}}}}}}}}}]}}
GROUP, VERSION, PLURAL = "amlarc.azureml.com", "v1alpha1", "instancetypes"


def instance_type(name="gpu-small", cpu="700m", **extra):
    spec = {"nodeSelector": {"gpu": "a100"},
            "resources": {"requests": {"cpu": cpu, "memory": "1500Mi"},
                          "limits": {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": 1}}}
    spec.update(extra)
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "InstanceType", "metadata": {"name": name}, "spec": spec}


@pytest.fixture
def kube(make_fake_kube):
    return make_fake_kube(crd_establish_delay=1.0)


@pytest.fixture
def custom(kube):
    with api_client(kube) as api:
        yield client.CustomObjectsApi(api), client.ApiextensionsV1Api(api)


def _establish(kube, extensions):
    extensions.create_custom_resource_definition(INSTANCE_TYPE_CRD)
    kube.advance(1)


def test_crd_is_served_only_once_established(kube, custom):
    objects, extensions = custom
    crd = extensions.create_custom_resource_definition(INSTANCE_TYPE_CRD)
    assert not (crd.status and crd.status.conditions)
    code, body = status_of(objects.list_cluster_custom_object, GROUP, VERSION, PLURAL)
    assert code == 404 and body["message"] == "the server could not find the requested resource"
    kube.advance(1)
    conditions = {c.type: c.status for c in extensions.read_custom_resource_definition(
        "instancetypes.amlarc.azureml.com").status.conditions}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    assert objects.list_cluster_custom_object(GROUP, VERSION, PLURAL)["items"] == []


def test_instance_type_crd_accepts_the_documented_shape(kube, custom):
    objects, extensions = custom
    _establish(kube, extensions)
    created = objects.create_cluster_custom_object(GROUP, VERSION, PLURAL, instance_type())
    assert created["metadata"]["generation"] == 1 and created["spec"]["resources"]["limits"]["nvidia.com/gpu"] == 1
    listed = objects.list_cluster_custom_object(GROUP, VERSION, PLURAL)
    assert listed["kind"] == "InstanceTypeList" and listed["items"][0]["kind"] == "InstanceType"


def test_schema_pattern_failure_names_the_field_path(kube, custom):
    objects, extensions = custom
    _establish(kube, extensions)
    code, body = status_of(objects.create_cluster_custom_object, GROUP, VERSION, PLURAL, instance_type(cpu="abc"))
    assert code == 422 and body["reason"] == "Invalid"
    assert body["details"]["causes"][0]["field"] == "spec.resources.requests.cpu"
    assert body["message"].startswith('InstanceType.amlarc.azureml.com "gpu-small" is invalid: '
                                      'spec.resources.requests.cpu: Invalid value: "abc": '
                                      "spec.resources.requests.cpu in body should match '^(\\+|-)?")
    assert body["details"]["group"] == GROUP and body["details"]["kind"] == "InstanceType"


def test_schema_types_required_and_enum(kube, custom):
    objects, extensions = custom
    crd = json.loads(json.dumps(INSTANCE_TYPE_CRD))
    spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec_schema["required"] = ["resources"]
    spec_schema["properties"]["tier"] = {"type": "string", "enum": ["low", "high"]}
    spec_schema["properties"]["count"] = {"type": "integer", "minimum": 1}
    extensions.create_custom_resource_definition(crd)
    kube.advance(1)
    bad = instance_type(tier="mid", count="two")
    del bad["spec"]["resources"]
    code, body = status_of(objects.create_cluster_custom_object, GROUP, VERSION, PLURAL, bad)
    causes = {c["field"]: c for c in body["details"]["causes"]}
    assert code == 422 and set(causes) == {"spec.resources", "spec.tier", "spec.count"}
    assert causes["spec.resources"]["reason"] == "FieldValueRequired"
    assert causes["spec.tier"]["message"] == 'Unsupported value: "mid": supported values: "low", "high"'
    assert causes["spec.count"]["message"] == 'Invalid value: "string": spec.count in body must be of type integer: "string"'


def test_unknown_fields_are_pruned_and_strategic_merge_is_unsupported(kube, custom):
    objects, extensions = custom
    _establish(kube, extensions)
    created = objects.create_cluster_custom_object(GROUP, VERSION, PLURAL, instance_type(colour="blue"))
    assert "colour" not in created["spec"]
    code, body = status_of(objects.patch_cluster_custom_object, GROUP, VERSION, PLURAL, "gpu-small",
                           {"spec": {"nodeSelector": {"gpu": "h100"}}},
                           _content_type="application/strategic-merge-patch+json")
    assert code == 415 and body["reason"] == "UnsupportedMediaType"
    patched = objects.patch_cluster_custom_object(GROUP, VERSION, PLURAL, "gpu-small",
                                                  {"spec": {"nodeSelector": {"gpu": "h100"}}})
    assert patched["spec"]["nodeSelector"] == {"gpu": "h100"} and patched["metadata"]["generation"] == 2


def test_replace_of_a_custom_object_needs_a_resource_version(kube, custom):
    objects, extensions = custom
    _establish(kube, extensions)
    objects.create_cluster_custom_object(GROUP, VERSION, PLURAL, instance_type())
    code, body = status_of(objects.replace_cluster_custom_object, GROUP, VERSION, PLURAL, "gpu-small", instance_type())
    assert code == 422 and body["details"]["causes"][0]["field"] == "metadata.resourceVersion"


def test_server_side_apply_of_a_custom_object(kube, custom, tmp_path):
    objects, extensions = custom
    _establish(kube, extensions)
    from tests.fake_kube.fixtures import dynamic_client
    resource = dynamic_client(kube, tmp_path).resources.get(api_version=f"{GROUP}/{VERSION}", kind="InstanceType")
    first = resource.server_side_apply(body=instance_type(), field_manager="dockyard").to_dict()
    again = resource.server_side_apply(body=instance_type(), field_manager="dockyard").to_dict()
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    with pytest.raises(Exception) as caught:  # unlike create/update, apply does not prune: a 500 (sic)
        resource.server_side_apply(body=instance_type(colour="blue"), field_manager="dockyard")
    assert caught.value.status == 500 and json.loads(caught.value.body)["message"] == (
        "failed to create typed patch object (/gpu-small; amlarc.azureml.com/v1alpha1, Kind=InstanceType): "
        ".spec.colour: field not declared in schema")


def test_apply_of_a_custom_object_with_a_wrong_json_type_is_a_reasonless_500_like_the_real_server(kube, custom, tmp_path):
    objects, extensions = custom
    crd = json.loads(json.dumps(INSTANCE_TYPE_CRD))
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["count"] = {
        "type": "integer"}
    extensions.create_custom_resource_definition(crd)
    kube.advance(1)
    from tests.fake_kube.fixtures import dynamic_client
    resource = dynamic_client(kube, tmp_path).resources.get(api_version=f"{GROUP}/{VERSION}", kind="InstanceType")
    # create answers 422 (schema validation); an apply fails before, when the patch is typed
    assert reasonless_500(resource.server_side_apply, body=instance_type(count="two"), field_manager="dockyard") == (
        "failed to create typed patch object (/gpu-small; amlarc.azureml.com/v1alpha1, Kind=InstanceType): "
        ".spec.count: expected numeric (int or float), got string")
    assert objects.list_cluster_custom_object(GROUP, VERSION, PLURAL)["items"] == []


def test_deleting_the_crd_deletes_its_objects_and_stops_serving(kube, custom):
    objects, extensions = custom
    _establish(kube, extensions)
    objects.create_cluster_custom_object(GROUP, VERSION, PLURAL, instance_type())
    extensions.delete_custom_resource_definition("instancetypes.amlarc.azureml.com")
    code, _ = status_of(objects.list_cluster_custom_object, GROUP, VERSION, PLURAL)
    assert code == 404 and kube.store.count((GROUP, PLURAL)) == 0


def test_invalid_crds_are_rejected(custom):
    _, extensions = custom
    crd = json.loads(json.dumps(INSTANCE_TYPE_CRD))
    crd["metadata"]["name"] = "instancetypes.example.com"
    del crd["spec"]["versions"][0]["schema"]
    code, body = status_of(extensions.create_custom_resource_definition, crd)
    fields = {c["field"] for c in body["details"]["causes"]}
    assert code == 422 and {"metadata.name", "spec.versions[0].schema.openAPIV3Schema"} <= fields


def test_httproute_is_served_once_the_gateway_api_crd_is_installed(kube):
    with api_client(kube) as api:
        objects = client.CustomObjectsApi(api)
        code, _ = status_of(objects.list_namespaced_custom_object, "gateway.networking.k8s.io", "v1", "default",
                            "httproutes")
        assert code == 404
        kube.install_gateway_api()
        route = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": "ep"},
                 "spec": {"parentRefs": [{"name": "gw"}], "rules": [{"backendRefs": [
                     {"name": "blue", "port": 80, "weight": 90}, {"name": "green", "port": 80}]}]}}
        created = objects.create_namespaced_custom_object("gateway.networking.k8s.io", "v1", "default", "httproutes",
                                                          route)
        assert [b["weight"] for b in created["spec"]["rules"][0]["backendRefs"]] == [90, 1]  # schema default
        route["metadata"]["name"] = "bad"
        route["spec"]["rules"][0]["backendRefs"][0]["weight"] = -1
        code, body = status_of(objects.create_namespaced_custom_object, "gateway.networking.k8s.io", "v1",
                               "default", "httproutes", route)
        assert code == 422 and body["details"]["causes"][0]["field"] == "spec.rules[0].backendRefs[0].weight"


def test_custom_status_subresource(kube):
    with api_client(kube) as api:
        objects = client.CustomObjectsApi(api)
        kube.install_gateway_api()
        args = ("gateway.networking.k8s.io", "v1", "default", "httproutes")
        route = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": "ep"},
                 "spec": {"hostnames": ["a.example.com"]}, "status": {"parents": ["ignored"]}}
        created = objects.create_namespaced_custom_object(*args, route)
        assert "status" not in created
        status = {"status": {"parents": [{"controllerName": "example.com/gw"}]}}
        patched = objects.patch_namespaced_custom_object_status(*args, "ep", {**status, "spec": {"hostnames": []}})
        assert patched["status"] == status["status"] and patched["spec"]["hostnames"] == ["a.example.com"]
        assert patched["metadata"]["generation"] == 1
        main = objects.patch_namespaced_custom_object(*args, "ep", {"status": {"parents": []}})
        assert main["status"] == status["status"]
