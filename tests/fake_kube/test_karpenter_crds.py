"""Karpenter's CRDs (karpenter.sh/v1) with their schemas and CEL rules, and Cluster API's MachineDeployment."""
import json

import pytest
from kubernetes import client

from tests.fake_kube.fixtures import api_client
from tests.fake_kube.helpers import status_of
from tests.fake_kube.karpenter_helpers import CAPI, KARPENTER, machine_deployment, nodepool


@pytest.fixture
def objects(fake_kube):
    fake_kube.install_karpenter()
    fake_kube.install_cluster_api()
    with api_client(fake_kube) as api:
        yield client.CustomObjectsApi(api)


def _causes(call, *args):
    code, status = status_of(call, *args)
    assert code == 422
    return {(c["field"], c["message"]) for c in status["details"]["causes"]}


def test_groups_are_discovered_only_once_installed(make_fake_kube):
    kube = make_fake_kube()
    with api_client(kube) as api:
        groups = lambda: {g.name: [v.version for v in g.versions] for g in client.ApisApi(api).get_api_versions().groups}  # noqa: E731
        assert "karpenter.sh" not in groups() and "cluster.x-k8s.io" not in groups()
        kube.install_karpenter()
        kube.install_cluster_api()
        assert groups()["karpenter.sh"] == ["v1"] and groups()["cluster.x-k8s.io"] == ["v1beta2"]
        resources = json.loads(api.call_api("/apis/karpenter.sh/v1", "GET", auth_settings=["BearerToken"],
                                            _preload_content=False, _return_http_data_only=True).data)
        assert {r["name"]: r["namespaced"] for r in resources["resources"]} == {
            "nodepools": False, "nodepools/status": False, "nodeclaims": False, "nodeclaims/status": False}


def test_a_nodepool_is_defaulted_as_upstream_declares(objects):
    created = objects.create_cluster_custom_object(*KARPENTER, "nodepools", nodepool(limits={"nodes": 3, "cpu": "64"}))
    assert created["spec"]["disruption"] == {"consolidateAfter": "0s", "consolidationPolicy": "WhenEmptyOrUnderutilized",
                                             "budgets": [{"nodes": "10%"}]}
    assert created["spec"]["template"]["spec"]["expireAfter"] == "720h"
    assert created["spec"]["limits"] == {"nodes": 3, "cpu": "64"}


@pytest.mark.parametrize(("change", "expected"), [
    (lambda p: p["spec"]["template"]["spec"]["requirements"].append({"key": "pool", "operator": "Near"}),
     ("spec.template.spec.requirements[1].operator", 'Unsupported value: "Near": supported values: "In", "NotIn", '
                                                     '"Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"')),
    (lambda p: p["spec"]["template"]["spec"]["requirements"].append({"key": "pool", "operator": "In"}),
     ("spec.template.spec.requirements", 'Invalid value: "array": requirements with operator \'In\' must have a '
                                         'value defined')),
    (lambda p: p["spec"]["template"]["spec"]["requirements"].append(
        {"key": "karpenter.azure.com/sku-cpu", "operator": "Gte", "values": ["four"]}),
     ("spec.template.spec.requirements", "Invalid value: \"array\": requirements operator 'Gt', 'Lt', 'Gte', or "
                                         "'Lte' must have a single positive integer value")),
    (lambda p: p["spec"].update(disruption={"consolidationPolicy": "WhenIdle", "consolidateAfter": "5m"}),
     ("spec.disruption.consolidationPolicy",
      'Unsupported value: "WhenIdle": supported values: "WhenEmpty", "WhenEmptyOrUnderutilized"')),
    (lambda p: p["spec"].update(disruption={"consolidateAfter": "5 minutes"}),
     ("spec.disruption.consolidateAfter",
      "Invalid value: \"5 minutes\": spec.disruption.consolidateAfter in body should match "
      "'^(([0-9]+(s|m|h))+|Never)$'")),
    (lambda p: p["spec"]["template"]["spec"].update(expireAfter="1d"),
     ("spec.template.spec.expireAfter", "Invalid value: \"1d\": spec.template.spec.expireAfter in body should match "
                                        "'^(([0-9]+(s|m|h))+|Never)$'")),
    (lambda p: p["spec"]["template"]["spec"]["nodeClassRef"].pop("group"),
     ("spec.template.spec.nodeClassRef.group", "Required value")),
    (lambda p: p["spec"]["template"]["metadata"]["labels"].update({"kubernetes.io/team": "ml"}),
     ("spec.template.metadata.labels", 'Invalid value: "object": label domain "kubernetes.io" is restricted')),
    (lambda p: p["spec"]["template"]["metadata"]["labels"].update({"karpenter.sh/nodepool": "x"}),
     ("spec.template.metadata.labels", 'Invalid value: "object": label "karpenter.sh/nodepool" is restricted')),
    (lambda p: p["spec"]["template"]["spec"]["requirements"].append(
        {"key": "kubernetes.io/hostname", "operator": "Exists"}),
     ("spec.template.spec.requirements[1].key", 'Invalid value: "kubernetes.io/hostname": label '
                                                '"kubernetes.io/hostname" is restricted')),
    (lambda p: p["spec"].update(weight=101),
     ("spec.weight", "Invalid value: 101: spec.weight in body should be less than or equal to 100")),
    (lambda p: p["spec"].update(limits={"nvidia.com/gpu": "lots"}),
     ("spec.limits.nvidia.com/gpu", "Invalid value: \"lots\": spec.limits.nvidia.com/gpu in body should match '"
      r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|"
      r"(\.[0-9]+))))?$'")),
    (lambda p: p["spec"]["template"]["spec"].update(taints=[{"key": "dockyard.dev/compute", "effect": "Sometimes"}]),
     ("spec.template.spec.taints[0].effect",
      'Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"')),
    (lambda p: p["spec"].update(disruption={"consolidateAfter": "1m", "budgets": [{"nodes": "1", "schedule": "@daily"}]}),
     ("spec.disruption.budgets", "Invalid value: \"array\": 'schedule' must be set with 'duration'")),
])
def test_nodepool_rules(objects, change, expected):
    body = nodepool()
    change(body)
    assert expected in _causes(objects.create_cluster_custom_object, *KARPENTER, "nodepools", body)


def test_allowed_label_domains_pass(objects):
    body = nodepool(labels={"node.kubernetes.io/team": "ml", "dockyard.dev/pool": "gpu", "kubernetes.io/os": "linux"},
                    requirements=[{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                   "values": ["Standard_NC6s_v3"]},
                                  {"key": "karpenter.sh/capacity-type", "operator": "Exists"}])
    objects.create_cluster_custom_object(*KARPENTER, "nodepools", body)


def test_node_class_ref_group_is_immutable(objects):
    objects.create_cluster_custom_object(*KARPENTER, "nodepools", nodepool())
    patch = {"spec": {"template": {"spec": {"nodeClassRef": {"group": "other.example.com", "kind": "AKSNodeClass",
                                                             "name": "default"}}}}}
    assert ("spec.template.spec.nodeClassRef", 'Invalid value: "object": nodeClassRef.group is immutable') in _causes(
        objects.patch_cluster_custom_object, *KARPENTER, "nodepools", "gpu", patch)


def test_machine_deployment_defaults_and_webhook_rules(objects):
    annotations = {"cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size": "1",
                   "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "4"}
    created = objects.create_namespaced_custom_object(*CAPI, "default", "machinedeployments",
                                                      machine_deployment(annotations=annotations, version="1.36.0"))
    assert created["spec"]["replicas"] == 1  # the autoscaler's min size
    assert created["spec"]["template"]["spec"]["version"] == "v1.36.0"
    assert created["spec"]["template"]["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"] == "dev"
    bad = machine_deployment("bad", version="latest")
    bad["spec"]["template"]["metadata"]["labels"]["pool"] = "other"
    assert _causes(objects.create_namespaced_custom_object, *CAPI, "default", "machinedeployments", bad) >= {
        ("spec.template.spec.version", 'Invalid value: "vlatest": must be a valid semantic version'),
        ("spec.template.metadata.labels", 'Invalid value: {"cluster.x-k8s.io/cluster-name":"dev","pool":"other"}: '
                                          'must match spec.selector "cluster.x-k8s.io/cluster-name=dev,pool=bad"')}


def test_machine_deployment_references_are_v1beta2_shaped(objects):
    body = machine_deployment()
    body["spec"]["template"]["spec"]["infrastructureRef"] = {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                                                             "kind": "AzureMachineTemplate", "name": "x"}
    assert ("spec.template.spec.infrastructureRef.apiGroup", "Required value") in _causes(
        objects.create_namespaced_custom_object, *CAPI, "default", "machinedeployments", body)
    code, _ = status_of(objects.list_namespaced_custom_object, "cluster.x-k8s.io", "v1beta1", "default",
                        "machinedeployments")
    assert code == 404
