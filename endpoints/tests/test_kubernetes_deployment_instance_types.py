"""Kubernetes deployments take their resources from an instance type (named or defaultinstancetype); MLflow needs more."""
import pytest

from compute.models import InstanceType
from endpoints.models import OnlineDeployment
from endpoints.tests.bodies import GPU, kube_deployment
from endpoints.tests.support import BASE, assert_refused, create_deployment, create_endpoint, state
from tests.support import assert_error
from workspaces.models import AuditEvent

# local compute is off by default: enabled as staff would
pytestmark = pytest.mark.usefixtures("local_compute", "deployment_folders")

DEFAULT_RESOURCES = {"requests": {"cpu": "100m", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}}


# ---------------------------------------------------------------- Kubernetes deployments and instance types

def test_kubernetes_deployments_on_named_and_default_instance_types(api, k8s):
    create_endpoint(api, "kep", compute="azureml:k8s")
    body = create_deployment(api, "kep", kube_deployment("blue", instance_type="small", instance_count=3))
    assert body["instance_type"] == "small" and body["instance_count"] == 3
    assert body["resources"] == {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}}
    body = create_deployment(api, "kep", kube_deployment("green"))
    assert body["instance_type"] == "defaultinstancetype" and body["resources"] == DEFAULT_RESOURCES
    body = create_deployment(api, "kep", kube_deployment("red", instance_type="small", resources={
        "requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "3999m", "memory": "6Gi"}}))
    assert body["resources"] == {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "3999m", "memory": "6Gi"}}


def test_a_gpu_instance_type(api, k8s):
    create_endpoint(api, "kep", compute="azureml:k8s")
    body = create_deployment(api, "kep", kube_deployment("blue", instance_type="gpu-small"))
    assert body["resources"] == {"requests": {"cpu": "700m", "memory": "1500Mi"}, "limits": {"cpu": "4", "memory": "16Gi", GPU: 2}}
    body = create_deployment(api, "kep", kube_deployment("green", instance_type="gpu-small", resources={
        "requests": {"cpu": "1", "memory": "4Gi"}, "limits": {"cpu": "2", "memory": "8Gi", GPU: 1}}))
    assert body["resources"]["limits"] == {"cpu": "2", "memory": "8Gi", GPU: 1}
    # all the type's GPUs: whole devices no side process uses (cpu and memory stay below the type's)
    body = create_deployment(api, "kep", kube_deployment("red", instance_type="gpu-small", resources={
        "requests": {"cpu": "1", "memory": "4Gi"}, "limits": {"cpu": "2", "memory": "8Gi", GPU: 2}}))
    assert body["resources"]["limits"] == {"cpu": "2", "memory": "8Gi", GPU: 2}


def test_the_clusters_own_defaultinstancetype_replaces_the_builtin(api, k8s):
    InstanceType.objects.create(cluster=k8s.cluster, name="defaultinstancetype", requests={"cpu": "1", "memory": "4Gi"},
                                limits={"cpu": "8", "memory": "16Gi"})
    create_endpoint(api, "kep", compute="azureml:k8s")
    body = create_deployment(api, "kep", kube_deployment("blue", resources={"requests": {"cpu": "1", "memory": "1Gi"},
                                                                             "limits": {"cpu": "4", "memory": "8Gi"}}))
    assert body["instance_type"] == "defaultinstancetype" and body["resources"]["limits"] == {"cpu": "4", "memory": "8Gi"}


def test_mlflow_models_on_kubernetes(api, k8s, tmp_path):
    create_endpoint(api, "kep", compute="azureml:k8s")
    mlflow = {"path": "./model", "type": "mlflow_model"}
    body = create_deployment(api, "kep", kube_deployment("blue", model=mlflow, code_configuration=None, instance_type="big"))
    assert body["model"] == mlflow and body["code_configuration"] is None
    # a folder with an MLmodel file is an MLflow model too
    folder = tmp_path / "mlflow-model"
    folder.mkdir()
    (folder / "MLmodel").write_text("flavors: {}\n")
    before = state()
    response = api.post(f"{BASE}/kep/deployments/", kube_deployment("green", model=str(folder), instance_type="big", resources={
        "requests": {"cpu": "1", "memory": "4Gi"}}), format="json")
    assert_refused(response, "InvalidDeployment", ["resources.requests"], before)
    create_deployment(api, "kep", kube_deployment("green", model=str(folder), instance_type="big", resources={
        "requests": {"cpu": "2", "memory": "4Gi"}}))


def test_a_model_path_this_host_cannot_look_up_is_not_an_mlflow_model(api, k8s):
    create_endpoint(api, "kep", compute="azureml:k8s")
    body = create_deployment(api, "kep", kube_deployment("blue", model="/mnt/" + "m" * 300))
    assert body["model"]["type"] == "custom_model"


def test_patch_a_kubernetes_deployments_instance_count(api, k8s):
    create_endpoint(api, "kep", compute="azureml:k8s")
    create_deployment(api, "kep", kube_deployment("blue", instance_type="small"))
    etag = api.get(f"{BASE}/kep/deployments/blue/")["ETag"]
    response = api.patch(f"{BASE}/kep/deployments/blue/", {"instance_count": 4}, format="json", HTTP_IF_MATCH=etag)
    assert response.status_code == 200, response.json()
    assert response.json()["instance_count"] == 4 and response.json()["instance_type"] == "small"
    deployment = OnlineDeployment.objects.get(name="blue")
    assert (deployment.instance_count, deployment.generation, deployment.spec["instance_count"]) == (4, 2, 4)
    event = AuditEvent.objects.get(target_type="online-deployment", action="update")
    assert event.target_name == "kep/blue" and "instance_count" in event.changes
    before = state()
    assert_error(api.patch(f"{BASE}/kep/deployments/blue/", {"instance_count": 5}, format="json", HTTP_IF_MATCH=etag), 412,
                 "PreconditionFailed")
    assert state() == before
    # and to another instance type, resolved again
    response = api.patch(f"{BASE}/kep/deployments/blue/", {"instance_type": "big"}, format="json")
    assert response.status_code == 200 and response.json()["resources"]["limits"] == {"cpu": "8", "memory": "32Gi"}
