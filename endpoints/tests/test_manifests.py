"""Kubernetes deployments → Service, Deployment, HPA and the endpoint's HTTPRoute: field by field and against the schemas.

The objects are rendered the way reconcile renders them (a deployment made through the service layer, on an
attached kubernetes compute with an extension node selector), then checked field by field, with kubernetes-validate's
strict 1.36 schemas (no undeclared field), and with what the schema cannot say (selectors match the template, DNS
names, label values). The HTTPRoute is checked against the Gateway API v1 HTTPRoute schema the fake API server
installs (the standard channel's, tests/fake_kube/catalog.py), its CEL rules, and pruning (nothing may be dropped).
"""
import copy
import re

import kubernetes_validate
import pytest

from compute.choices import ComputeType
from compute.models import Cluster, ComputeTarget, InstanceType
from controlplane.kube import names
from controlplane.reconciling import ProvisioningState
from endpoints import services
from endpoints.manifests import (
    CONTAINER,
    HTTPROUTE_API,
    SERVER_PORT,
    deployment_object_name,
    endpoint_object_name,
    httproute_manifest,
)
from endpoints.reconcile.kubernetes import render
from tests.fake_kube.catalog import httproute_crd, httproute_rule_errors, httproute_schema
from tests.fake_kube.crds import prune, schema_errors, validate_crd

KUBERNETES = "1.36"
DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
EXTENSION = {"pool": "serving"}
IMAGE = "mcr.microsoft.com/azureml/minimal-ubuntu22.04-py39-cpu-inference:latest"
BASE = {"name": "blue", "model": {"path": "/models/adder"}, "environment": {"image": IMAGE},
        "code_configuration": {"code": "/code/adder", "scoring_script": "score.py"}}
OWNED = {"app.kubernetes.io/managed-by": "dockyard", "dockyard.dev/kind": "online-deployment",
         "dockyard.dev/workspace": "team-a", "dockyard.dev/endpoint": "adder", "dockyard.dev/deployment": "blue"}


@pytest.fixture
def endpoint(owner, workspace):
    cluster = Cluster.objects.create(server="https://k8s.example.test:6443", version="v1.36.0", crd_installed=True)
    ComputeTarget.objects.create(workspace=workspace, name="k8s", type=ComputeType.KUBERNETES, cluster=cluster,
                                 provisioning_state=ProvisioningState.SUCCEEDED,
                                 properties={"namespace": "ml", "node_selector": EXTENSION, "context": "dev"})
    for name, gpu in (("gpu-a100", 1), ("gpu-a100x2", 2)):
        InstanceType.objects.create(cluster=cluster, name=name, node_selector={"gpu": "a100"}, gpu=gpu,
                                    requests={"cpu": "4", "memory": "16Gi"}, limits={"cpu": "8", "memory": "32Gi"},
                                    provisioning_state=ProvisioningState.SUCCEEDED)
    made, _ = services.endpoint_create(user=owner, workspace=workspace, data={"name": "adder", "compute": "azureml:k8s"})
    return made


def rendered(endpoint, owner, **fields) -> dict[str, dict]:
    """The deployment's objects by kind, each valid against the strict Kubernetes 1.36 schema."""
    deployment = services.deployment_create(user=owner, endpoint=endpoint, data={**BASE, **fields})
    objects = {manifest["kind"]: manifest for manifest in render(deployment)}
    for manifest in objects.values():
        assert kubernetes_validate.validate(manifest, KUBERNETES, strict=True) == KUBERNETES
    return objects


def container_of(objects: dict) -> dict:
    (container,) = objects["Deployment"]["spec"]["template"]["spec"]["containers"]
    return container


def env_of(objects: dict) -> dict:
    return {var["name"]: var["value"] for var in container_of(objects)["env"]}


# --- names and labels ----------------------------------------------------------------------------

def test_names_are_deterministic_dns_labels_of_at_most_63():
    name = deployment_object_name("team-a", "ep", "blue")
    assert name == deployment_object_name("team-a", "ep", "blue") and DNS_1035.match(name) and name.startswith("ep-blue-")
    assert deployment_object_name("team-b", "ep", "blue") != name  # another workspace's deployment never collides
    long = deployment_object_name("w" * 63, "E" + "p" * 31, "D" + "e" * 31)
    assert len(long) == 63 and DNS_1035.match(long)
    route = endpoint_object_name("team-a", "Ep-1")
    assert DNS_1035.match(route) and len(route) <= 63 and route.startswith("ep-1-")


def test_every_object_carries_our_labels_and_one_name(endpoint, owner):
    objects = rendered(endpoint, owner, scale_settings={"type": "target_utilization", "max_instances": 3})
    assert set(objects) == {"Service", "Deployment", "HorizontalPodAutoscaler"}
    name = deployment_object_name("team-a", "adder", "blue")
    for manifest in objects.values():
        assert manifest["metadata"] == {"name": name, "namespace": "ml", "labels": OWNED}
        assert all(names.label_value_problem(value) is None for value in manifest["metadata"]["labels"].values())


# --- the Deployment ------------------------------------------------------------------------------

def test_default_instance_type(endpoint, owner):
    objects = rendered(endpoint, owner, instance_count=3)
    deployment = objects["Deployment"]
    name = deployment["metadata"]["name"]
    assert deployment["apiVersion"] == "apps/v1"
    assert deployment["spec"]["replicas"] == 3
    assert deployment["spec"]["selector"] == {"matchLabels": {"dockyard.dev/online-deployment": name}}
    template = deployment["spec"]["template"]
    assert template["metadata"]["labels"] == {**OWNED, "dockyard.dev/online-deployment": name}  # the selector matches
    pod = template["spec"]
    assert pod["nodeSelector"] == EXTENSION  # the default instance type adds none of its own
    assert pod["enableServiceLinks"] is False
    container = container_of(objects)
    assert (container["name"], container["image"]) == (CONTAINER, IMAGE)
    assert container["ports"] == [{"name": "http", "containerPort": SERVER_PORT}]
    assert container["resources"] == {"requests": {"cpu": "100m", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}}
    assert set(deployment["spec"]) == {"replicas", "selector", "template"}


def test_gpu_instance_type_gpus_in_limits_only_and_both_selectors(endpoint, owner):
    objects = rendered(endpoint, owner, instance_type="gpu-a100")
    container = container_of(objects)
    assert container["resources"] == {"requests": {"cpu": "4", "memory": "16Gi"},
                                      "limits": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": 1}}
    assert objects["Deployment"]["spec"]["template"]["spec"]["nodeSelector"] == {**EXTENSION, "gpu": "a100"}


def test_explicit_resources_are_written_as_given(endpoint, owner):
    resources = {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1536Mi"}}
    assert container_of(rendered(endpoint, owner, resources=resources))["resources"] == resources


def test_explicit_gpu_goes_under_limits_only(endpoint, owner):
    resources = {"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": 1}}
    written = container_of(rendered(endpoint, owner, instance_type="gpu-a100x2", resources=resources))["resources"]
    assert written == resources and "nvidia.com/gpu" not in written["requests"]


def test_requests_without_limits_write_no_limits(endpoint, owner):
    written = container_of(rendered(endpoint, owner, resources={"requests": {"cpu": "250m", "memory": "512Mi"}}))["resources"]
    assert written == {"requests": {"cpu": "250m", "memory": "512Mi"}}


def test_probes_from_liveness_and_readiness_settings(endpoint, owner):
    liveness = {"period": 5, "initial_delay": 3, "timeout": 4, "success_threshold": 1, "failure_threshold": 6}
    readiness = {"period": 7, "initial_delay": 0, "timeout": 2, "success_threshold": 2, "failure_threshold": 3}
    container = container_of(rendered(endpoint, owner, liveness_probe=liveness, readiness_probe=readiness))
    assert container["livenessProbe"] == {"httpGet": {"path": "/", "port": SERVER_PORT}, "periodSeconds": 5,
                                          "initialDelaySeconds": 3, "timeoutSeconds": 4, "successThreshold": 1,
                                          "failureThreshold": 6}
    assert container["readinessProbe"] == {"httpGet": {"path": "/", "port": SERVER_PORT}, "periodSeconds": 7,
                                           "initialDelaySeconds": 0, "timeoutSeconds": 2, "successThreshold": 2,
                                           "failureThreshold": 3}


def test_probes_default_to_azure_mls_settings(endpoint, owner):
    container = container_of(rendered(endpoint, owner))
    for probe in (container["livenessProbe"], container["readinessProbe"]):
        assert probe == {"httpGet": {"path": "/", "port": SERVER_PORT}, "periodSeconds": 10, "initialDelaySeconds": 10,
                         "timeoutSeconds": 2, "successThreshold": 1, "failureThreshold": 30}


def test_environment_server_variables_then_the_users(endpoint, owner):
    objects = rendered(endpoint, owner, environment_variables={"DEPLOYMENT_NAME": "blue", "ANSWER": 42, "DEBUG": True},
                       request_settings={"max_concurrent_requests_per_instance": 4, "request_timeout_ms": 9000})
    assert env_of(objects) == {"AZUREML_ENTRY_SCRIPT": "/code/adder/score.py", "AZUREML_MODEL_DIR": "/models/adder",
                               "WORKER_COUNT": "4", "SCORING_TIMEOUT_MS": "9000",
                               "DEPLOYMENT_NAME": "blue", "ANSWER": "42", "DEBUG": "true"}
    names = [var["name"] for var in container_of(objects)["env"]]
    assert names[:4] == ["AZUREML_ENTRY_SCRIPT", "AZUREML_MODEL_DIR", "WORKER_COUNT", "SCORING_TIMEOUT_MS"]


def test_an_mlflow_model_without_code_sets_no_entry_script(endpoint, owner):
    body = {"model": {"path": "/models/iris", "type": "mlflow_model"}, "code_configuration": None,
            "resources": {"requests": {"cpu": "2", "memory": "4G"}}, "instance_type": "gpu-a100"}
    deployment = services.deployment_create(user=owner, endpoint=endpoint, data={**BASE, **body})
    objects = {manifest["kind"]: manifest for manifest in render(deployment)}
    assert "AZUREML_ENTRY_SCRIPT" not in env_of(objects) and env_of(objects)["AZUREML_MODEL_DIR"] == "/models/iris"


# --- scaling -------------------------------------------------------------------------------------

def test_default_scaling_has_no_hpa_and_replicas_are_the_instance_count(endpoint, owner):
    objects = rendered(endpoint, owner, instance_count=2, scale_settings={"type": "default"})
    assert "HorizontalPodAutoscaler" not in objects and objects["Deployment"]["spec"]["replicas"] == 2


def test_target_utilization_is_an_hpa_that_owns_the_replica_count(endpoint, owner):
    scale = {"type": "target_utilization", "min_instances": 2, "max_instances": 5, "target_utilization_percentage": 60}
    objects = rendered(endpoint, owner, instance_count=4, scale_settings=scale)
    hpa = objects["HorizontalPodAutoscaler"]
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"] == {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": objects["Deployment"]["metadata"]["name"]},
        "minReplicas": 2, "maxReplicas": 5,
        "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}],
    }
    # No replicas in the Deployment: applied (forced) on every reconcile, it would undo the HPA's scaling.
    assert "replicas" not in objects["Deployment"]["spec"]


# --- the Service ---------------------------------------------------------------------------------

def test_service_selects_the_deployments_pods_on_the_server_port(endpoint, owner):
    objects = rendered(endpoint, owner)
    service, deployment = objects["Service"], objects["Deployment"]
    assert service["apiVersion"] == "v1" and DNS_1035.match(service["metadata"]["name"])
    assert service["spec"] == {"selector": {"dockyard.dev/online-deployment": deployment["metadata"]["name"]},
                               "ports": [{"name": "http", "port": 80, "targetPort": SERVER_PORT}]}
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert all(labels.get(key) == value for key, value in service["spec"]["selector"].items())


# --- the HTTPRoute -------------------------------------------------------------------------------

def route(backends: dict, mirror=None, gateway="dockyard") -> dict:
    return httproute_manifest(name=endpoint_object_name("team-a", "ep"), namespace="ml", workspace="team-a",
                              endpoint="ep", gateway=gateway, backends=backends, mirror=mirror)


def gateway_api_problems(manifest: dict, bundle: str = "v1.3.0") -> list[str]:
    """What the fake's (standard channel) HTTPRoute CRD refuses in the object, and what it would prune."""
    schema = httproute_schema(bundle)
    errors = [str(error) for error in schema_errors(manifest, schema) + httproute_rule_errors(manifest)]
    return errors + [f"{path}: pruned" for path in prune(copy.deepcopy(manifest), schema)]


def test_the_fakes_httproute_crd_is_a_valid_crd():
    for bundle in ("v1.2.0", "v1.3.0"):
        crd = httproute_crd(bundle)
        assert validate_crd(crd) == []
        assert kubernetes_validate.validate(crd, KUBERNETES, strict=True) == KUBERNETES


def test_backend_weights_are_the_traffic():
    manifest = route({"ep-blue-1": 90, "ep-green-2": 10})
    assert manifest["apiVersion"] == HTTPROUTE_API == "gateway.networking.k8s.io/v1" and manifest["kind"] == "HTTPRoute"
    assert manifest["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "dockyard", "dockyard.dev/kind": "online-endpoint",
                                              "dockyard.dev/workspace": "team-a", "dockyard.dev/endpoint": "ep"}
    (rule,) = manifest["spec"]["rules"]
    assert rule["backendRefs"] == [{"name": "ep-blue-1", "port": 80, "weight": 90}, {"name": "ep-green-2", "port": 80, "weight": 10}]
    assert rule["matches"] == [{"path": {"type": "PathPrefix", "value": "/team-a/ep"}}]
    assert "filters" not in rule
    assert gateway_api_problems(manifest) == []


def test_parent_is_the_configured_gateway():
    assert route({"ep-blue-1": 100}, gateway="shared-gw")["spec"]["parentRefs"] == [{"name": "shared-gw"}]


def test_zero_traffic_keeps_a_valid_route_with_zero_weights():
    manifest = route({"ep-blue-1": 0, "ep-green-2": 0})
    assert [ref["weight"] for ref in manifest["spec"]["rules"][0]["backendRefs"]] == [0, 0]
    assert gateway_api_problems(route({})) == [] and gateway_api_problems(manifest) == []


def test_mirror_traffic_is_a_request_mirror_filter_with_a_percent():
    manifest = route({"ep-blue-1": 100}, mirror=("ep-green-2", 20))
    assert manifest["spec"]["rules"][0]["filters"] == [
        {"type": "RequestMirror", "requestMirror": {"backendRef": {"name": "ep-green-2", "port": 80}, "percent": 20}}]
    assert gateway_api_problems(manifest) == []


def test_percent_needs_gateway_api_1_3_the_standard_channel_before_prunes_it():
    manifest = route({"ep-blue-1": 100}, mirror=("ep-green-2", 20))
    assert gateway_api_problems(manifest, "v1.2.0") == ["spec.rules[0].filters[0].requestMirror.percent: pruned"]


@pytest.mark.parametrize("mutate, problem", [
    (lambda m: m["spec"]["rules"][0]["backendRefs"][0].update(weight=-1), "spec.rules[0].backendRefs[0].weight"),
    (lambda m: m["spec"]["rules"][0]["backendRefs"][0].pop("port"), "Must have port for Service reference"),
    (lambda m: m["spec"]["rules"][0]["filters"][0]["requestMirror"].update(percent=101), "requestMirror.percent"),
    (lambda m: m["spec"]["rules"][0]["filters"][0]["requestMirror"].update(fraction={"numerator": 1}),
     "Only one of percent or fraction may be specified in HTTPRequestMirrorFilter"),
    (lambda m: m["spec"]["rules"][0]["filters"][0].update(type="Mirror"), "spec.rules[0].filters[0].type"),
    (lambda m: m["spec"]["rules"][0]["matches"][0]["path"].update(value="team-a/ep"), "must be an absolute path"),
    (lambda m: m["spec"]["parentRefs"][0].update(name=""), "spec.parentRefs[0].name"),
    (lambda m: m["spec"]["rules"][0]["backendRefs"][0].update(wieght=3), "backendRefs[0].wieght: pruned"),
])
def test_the_schema_check_would_catch_a_broken_route(mutate, problem):
    manifest = route({"ep-blue-1": 90, "ep-green-2": 10}, mirror=("ep-mirror-3", 5))
    mutate(manifest)
    problems = gateway_api_problems(manifest)
    assert any(problem in text for text in problems), problems
