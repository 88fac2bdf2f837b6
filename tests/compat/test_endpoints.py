"""Azure ML compatibility: Kubernetes and managed online endpoints and deployments in the shapes Azure ML documents.

Each YAML document is written here from Azure ML's reference for the kubernetesOnlineEndpoint,
kubernetesOnlineDeployment, managedOnlineEndpoint and managedOnlineDeployment schemas (field names and values are
facts), posted as YAML through the REST API, and checked for what was stored — or for what was refused and the reason
given.
"""
import textwrap

import pytest
import yaml

from compute.models import InstanceType
from compute.tests.factories import as_checked, create_compute
from endpoints.models import OnlineDeployment, OnlineEndpoint
from tests.support import assert_error

EP = "/api/v1/workspaces/team-a/online-endpoints"
ENDPOINT_SCHEMA = "https://azuremlschemas.azureedge.net/latest/kubernetesOnlineEndpoint.schema.json"
DEPLOYMENT_SCHEMA = "https://azuremlschemas.azureedge.net/latest/kubernetesOnlineDeployment.schema.json"
IMAGE = "mcr.microsoft.com/azureml/minimal-ubuntu22.04-py39-cpu-inference:latest"


@pytest.fixture
def k8s(workspace, owner):
    """A Kubernetes compute whose cluster has a CPU type and a 1-GPU type (as Azure ML's GPU inference example uses)."""
    compute = as_checked(create_compute(workspace, owner, "kubernetes", name="k8s-compute"))
    InstanceType.objects.create(cluster=compute.cluster, name="cpusmall", requests={"cpu": "1", "memory": "2Gi"},
                                limits={"cpu": "4", "memory": "8Gi"})
    InstanceType.objects.create(cluster=compute.cluster, name="gpuone", node_selector={"accelerator": "nvidia-t4"},
                                requests={"cpu": "1", "memory": "4Gi"}, limits={"cpu": "6", "memory": "28Gi"}, gpu=1)
    return compute


def post_yaml(api, url: str, document: str):
    return api.post(url, textwrap.dedent(document), content_type="application/yaml")


def endpoint_yaml(auth_mode: str = "key", extra: str = "") -> str:
    return f"""\
        $schema: {ENDPOINT_SCHEMA}
        name: my-endpoint
        compute: azureml:k8s-compute
        auth_mode: {auth_mode}
        {extra}
        """


@pytest.fixture
def endpoint(owner_api, k8s):
    response = post_yaml(owner_api, f"{EP}/", endpoint_yaml())
    assert response.status_code == 201, response.json()
    return response.json()


def deployment_yaml(extra: str = "", instance_type: str = "cpusmall") -> str:
    return textwrap.dedent(f"""\
        $schema: {DEPLOYMENT_SCHEMA}
        name: blue
        type: kubernetes
        endpoint_name: my-endpoint
        model:
          path: /var/azureml-app/model/sklearn_regression_model.pkl
        code_configuration:
          code: /var/azureml-app/onlinescoring
          scoring_script: score.py
        environment:
          image: {IMAGE}
        instance_type: {instance_type}
        """) + textwrap.dedent(extra).lstrip("\n")


# ---------------------------------------------------------------- endpoints

@pytest.mark.parametrize("written, stored", [
    ("key", "key"), ("Key", "key"), ("KEY", "key"), ("aml_token", "aml_token"), ("AMLToken", "aml_token"),
])
def test_an_endpoint_with_auth_mode_in_any_case_azure_ml_reads(owner_api, k8s, written, stored):
    """Azure ML's SDK reads auth_mode through its camel-to-snake transform: Key and AMLToken are key and aml_token."""
    response = post_yaml(owner_api, f"{EP}/", endpoint_yaml(written))
    assert response.status_code == 201, response.json()
    assert response.json()["auth_mode"] == stored and response.json()["compute"] == "azureml:k8s-compute"
    assert OnlineEndpoint.objects.get(name="my-endpoint").auth_mode == stored


@pytest.mark.parametrize("auth_mode, extra, target, reason", [
    ("aad_token", "", "auth_mode", "Microsoft Entra ID"),
    ("AADToken", "", "auth_mode", "Microsoft Entra ID"),
    ("key", "identity: {type: system_assigned}", "identity", "Managed identities"),
    ("key", "public_network_access: Disabled", "public_network_access", "no private endpoints"),
    ("key", "location: westeurope", "location", "no Azure regions"),
])
def test_endpoint_fields_dockyard_cannot_honour_are_refused_with_the_reason(owner_api, k8s, auth_mode, extra, target, reason):
    error = assert_error(post_yaml(owner_api, f"{EP}/", endpoint_yaml(auth_mode, extra)), 400, "InvalidEndpoint", target)
    assert any(reason in detail["message"] for detail in error["details"]), error
    assert not OnlineEndpoint.objects.exists()


def test_public_network_access_enabled_is_what_dockyard_does(owner_api, k8s):
    response = post_yaml(owner_api, f"{EP}/", endpoint_yaml("Key", "public_network_access: Enabled"))
    assert response.status_code == 201 and response.json()["public_network_access"] == "enabled"


# ---------------------------------------------------------------- deployments

def test_a_documented_kubernetes_deployment_is_stored_as_written(owner_api, endpoint):
    response = post_yaml(owner_api, f"{EP}/my-endpoint/deployments/", deployment_yaml("""
        instance_count: 2
        app_insights_enabled: true
        environment_variables:
          WORKER_TIMEOUT: "300"
        resources:
          requests:
            cpu: "0.5"
            memory: 1Gi
          limits:
            cpu: "2"
            memory: 4Gi
        liveness_probe:
          initial_delay: 30
          period: 10
          timeout: 2
          success_threshold: 1
          failure_threshold: 30
        readiness_probe:
          initial_delay: 10
          period: 10
          timeout: 10
          success_threshold: 1
          failure_threshold: 3
        request_settings:
          request_timeout_ms: 3000
          max_concurrent_requests_per_instance: 1
        scale_settings:
          type: default
        """))
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["type"] == "kubernetes" and body["instance_type"] == "cpusmall" and body["instance_count"] == 2
    assert body["resources"] == {"requests": {"cpu": "0.5", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "4Gi"}}
    assert body["liveness_probe"]["initial_delay"] == 30 and body["readiness_probe"]["failure_threshold"] == 3
    assert body["request_settings"] == {"request_timeout_ms": 3000, "max_concurrent_requests_per_instance": 1}
    assert body["scale_settings"] == {"type": "default"} and body["environment_variables"] == {"WORKER_TIMEOUT": "300"}
    assert body["app_insights_enabled"] is True  # stored only: see endpoints.spec.STORED_ONLY


@pytest.mark.parametrize("written", ["target_utilization", "TargetUtilization"])
def test_target_utilization_scale_settings_become_an_autoscaler(owner_api, endpoint, written):
    response = post_yaml(owner_api, f"{EP}/my-endpoint/deployments/", deployment_yaml(f"""
        scale_settings:
          type: {written}
          min_instances: 1
          max_instances: 3
          target_utilization_percentage: 70
        """))
    assert response.status_code == 201, response.json()
    assert response.json()["scale_settings"] == {"type": "target_utilization", "min_instances": 1, "max_instances": 3,
                                                 "target_utilization_percentage": 70}


def test_a_gpu_deployment_may_use_all_of_its_one_gpu_instance_type(owner_api, endpoint):
    """Azure ML's GPU example gives `nvidia.com/gpu: 1` on a 1-GPU instance type: GPUs may equal the type's."""
    response = post_yaml(owner_api, f"{EP}/my-endpoint/deployments/", deployment_yaml("""
        resources:
          requests: {cpu: "1", memory: 3Gi}
          limits: {cpu: "3", memory: 12Gi, nvidia.com/gpu: 1}
        """, instance_type="gpuone"))
    assert response.status_code == 201, response.json()
    assert response.json()["resources"]["limits"] == {"cpu": "3", "memory": "12Gi", "nvidia.com/gpu": 1}


def test_a_gpu_limit_above_the_instance_types_is_refused_and_cpu_keeps_its_headroom(owner_api, endpoint):
    response = post_yaml(owner_api, f"{EP}/my-endpoint/deployments/", deployment_yaml("""
        resources:
          requests: {cpu: "1", memory: 4Gi}
          limits: {cpu: "6", memory: 8Gi, nvidia.com/gpu: 2}
        """, instance_type="gpuone"))
    error = assert_error(response, 400, "InvalidDeployment")
    reasons = {detail["target"]: detail["message"] for detail in error["details"]}
    assert set(reasons) == {"resources.limits.cpu", "resources.limits.nvidia.com/gpu"}
    assert "room for the server's own processes" in reasons["resources.limits.cpu"]
    assert "it may be equal" in reasons["resources.limits.nvidia.com/gpu"]
    assert not OnlineDeployment.objects.exists()


@pytest.mark.parametrize("extra, target, reason", [
    ("scale_settings: {type: target_utilization, polling_interval: 1}", "scale_settings.polling_interval",
     "horizontal-pod-autoscaler-sync-period"),
    ("request_settings: {max_queue_wait_ms: 500}", "request_settings.max_queue_wait_ms", "no request queue"),
    ("model_mount_path: /var/mountpath", "model_mount_path", "registered or uploaded model"),
    ("data_collector: {collections: {model_inputs: {enabled: 'True'}}}", "data_collector", "Data collection"),
    ("egress_public_network_access: disabled", "egress_public_network_access", "network policies"),
    ("scale_settings: {type: manual}", "scale_settings.type", "default or target_utilization"),
])
def test_deployment_fields_dockyard_cannot_honour_are_refused_with_the_reason(owner_api, endpoint, extra, target, reason):
    response = post_yaml(owner_api, f"{EP}/my-endpoint/deployments/", deployment_yaml(extra))
    error = assert_error(response, 400, "InvalidDeployment", target)
    assert any(reason in detail["message"] for detail in error["details"]), error
    assert not OnlineDeployment.objects.exists()


def test_a_managed_deployment_is_refused_on_a_kubernetes_endpoint(owner_api, endpoint):
    document = deployment_yaml().replace("type: kubernetes", "type: Managed")
    error = assert_error(post_yaml(owner_api, f"{EP}/my-endpoint/deployments/", document), 400, "InvalidDeployment", "type")
    assert "managed endpoint (one without compute)" in error["details"][0]["message"]


def test_an_mlflow_model_type_in_capitals_is_read_as_azure_ml_reads_it(owner_api, endpoint):
    document = deployment_yaml('resources: {requests: {cpu: "2", memory: 4Gi}}')
    body = yaml.safe_load(textwrap.dedent(document))
    body["model"] = {"path": "/var/azureml-app/model", "type": "MLFLOW_MODEL"}
    del body["code_configuration"]
    response = owner_api.post(f"{EP}/my-endpoint/deployments/", yaml.safe_dump(body), content_type="application/yaml")
    assert response.status_code == 201, response.json()
    assert response.json()["model"]["type"] == "mlflow_model"


# ---------------------------------------------------------------- managed endpoints and deployments
# Written from Azure ML's managed online examples (managedOnlineEndpoint / managedOnlineDeployment schemas): the
# endpoint names no compute; the deployment names a VM size, which Dockyard finds on a compute cluster of that size.

MANAGED_ENDPOINT_SCHEMA = "https://azuremlschemas.azureedge.net/latest/managedOnlineEndpoint.schema.json"
MANAGED_DEPLOYMENT_SCHEMA = "https://azuremlschemas.azureedge.net/latest/managedOnlineDeployment.schema.json"
MANAGED_ENDPOINT = f"""\
    $schema: {MANAGED_ENDPOINT_SCHEMA}
    name: my-endpoint
    auth_mode: key
    """


def managed_deployment_yaml(extra: str = "", name: str = "blue", instance_type: str = "Standard_DS3_v2") -> str:
    return textwrap.dedent(f"""\
        $schema: {MANAGED_DEPLOYMENT_SCHEMA}
        name: {name}
        endpoint_name: my-endpoint
        model:
          path: /var/azureml-app/model/sklearn_regression_model.pkl
        code_configuration:
          code: /var/azureml-app/onlinescoring
          scoring_script: score.py
        environment:
          conda_file:
            name: model-env
            channels: [conda-forge]
            dependencies: [python=3.9, numpy=1.23.5, pip, {{pip: [azureml-defaults, scikit-learn==1.0.2, joblib]}}]
          image: mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu20.04:latest
        instance_type: {instance_type}
        instance_count: 1
        """) + textwrap.dedent(extra).lstrip("\n")


@pytest.fixture
def cpu_cluster(workspace, owner, k8s):
    """A compute cluster of Standard_DS3_v2 on `k8s-compute`, as its reconcile leaves it (the pool declared)."""
    from compute import pools

    compute = create_compute(workspace, owner, "amlcompute", name="cpu-cluster", size="Standard_DS3_v2", max_instances=2)
    compute.properties = {**compute.properties, "kubernetes_compute": k8s.name}
    compute.status = {"engine": "karpenter", "pool": pools.pool_name(workspace.name, "cpu-cluster"), "current_node_count": 0,
                      "target_node_count": 0, "idle_node_count": 0, "max_node_count": 2, "scaling": "steady",
                      "autoscaler_errors": [], "nodes": []}
    compute.save(update_fields=["properties", "status"])
    return compute


@pytest.fixture
def managed(owner_api, cpu_cluster):
    response = post_yaml(owner_api, f"{EP}/", MANAGED_ENDPOINT)
    assert response.status_code == 201, response.json()
    assert response.json()["compute"] is None and response.json()["keys"]["primaryKey"]
    return response.json()


def test_the_documented_managed_deployment_is_placed_on_a_compute_cluster_of_its_size(owner_api, managed):
    response = post_yaml(owner_api, f"{EP}/my-endpoint/deployments/", managed_deployment_yaml())
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["instance_type"], body["instance_count"]) == ("Standard_DS3_v2", 1)
    assert body["placement"]["compute"] == "cpu-cluster" and body["placement"]["capacity"] == "can_scale"
    assert body["environment"]["conda_file"]["name"] == "model-env"
    endpoint = owner_api.get(f"{EP}/my-endpoint").json()
    assert endpoint["placement"]["kubernetes_compute"] == "k8s-compute" and endpoint["deployments"] == ["blue"]


def test_managed_only_settings_are_taken(owner_api, managed):
    response = post_yaml(owner_api, f"{EP}/my-endpoint/deployments/", managed_deployment_yaml("""
        type: managed
        app_insights_enabled: true
        request_settings:
          request_timeout_ms: 3000
          max_concurrent_requests_per_instance: 1
        liveness_probe:
          initial_delay: 10
          period: 10
          timeout: 2
          success_threshold: 1
          failure_threshold: 30
        readiness_probe:
          initial_delay: 10
          period: 10
          timeout: 10
          success_threshold: 1
          failure_threshold: 3
        scale_settings:
          type: default
        """))
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["type"] == "managed" and body["scale_settings"] == {"type": "default"}
    assert body["request_settings"]["request_timeout_ms"] == 3000 and body["readiness_probe"]["failure_threshold"] == 3


@pytest.mark.parametrize("extra, target, reason", [
    ("egress_public_network_access: disabled", "egress_public_network_access", "network policies"),
    ("data_collector: {collections: {model_inputs: {enabled: 'True'}}}", "data_collector", "Data collection"),
    ("private_network_connection: true", "private_network_connection", "no private endpoints"),
    ("request_settings: {max_queue_wait_ms: 500}", "request_settings.max_queue_wait_ms", "no request queue"),
    ("scale_settings: {type: target_utilization, min_instances: 1, max_instances: 3}", "scale_settings.type",
     "instance_count instances"),
    ("resources: {requests: {cpu: '1', memory: 1Gi}}", "resources", "one whole node"),
])
def test_managed_fields_dockyard_cannot_honour_are_refused_with_the_reason(owner_api, managed, extra, target, reason):
    error = assert_error(post_yaml(owner_api, f"{EP}/my-endpoint/deployments/", managed_deployment_yaml(extra)), 400,
                         "InvalidDeployment", target)
    assert any(reason in detail["message"] for detail in error["details"]), error
    assert not OnlineDeployment.objects.exists()


def test_a_size_no_compute_cluster_has_is_a_400_that_says_what_to_create(owner_api, managed):
    response = post_yaml(owner_api, f"{EP}/my-endpoint/deployments/", managed_deployment_yaml(instance_type="Standard_F4s_v2"))
    error = assert_error(response, 400, "NoPlacement", "instance_type")
    assert ("No compute cluster of size Standard_F4s_v2 in workspace 'team-a' can take this deployment; compute "
            "clusters: 'cpu-cluster' (Standard_DS3_v2, on 'k8s-compute')") in error["details"][0]["message"]
    assert "`type: amlcompute, size: Standard_F4s_v2`" in error["details"][0]["message"]
    assert not OnlineDeployment.objects.exists()
    assert OnlineEndpoint.objects.get(name="my-endpoint").compute_id is None
