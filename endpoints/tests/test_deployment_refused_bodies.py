"""Refused deployment bodies (local and Kubernetes) and deployment patches: a 400 naming the fields, nothing written."""
import pytest

from endpoints.tests.bodies import ADDER, GPU, kube_deployment, local_deployment
from endpoints.tests.support import BASE, assert_refused, create_deployment, create_endpoint, set_traffic, state

# local compute is off by default: enabled as staff would
pytestmark = pytest.mark.usefixtures("local_compute", "deployment_folders")


# ---------------------------------------------------------------- bad deployment bodies

BAD_LOCAL_DEPLOYMENTS = [
    pytest.param(local_deployment(name=None), ["name"], id="name-missing"),
    pytest.param(local_deployment(name="b"), ["name"], id="name-too-short"),
    pytest.param(local_deployment(name="blue_1"), ["name"], id="name-underscore"),
    pytest.param(local_deployment(endpoint_name="other"), ["endpoint_name"], id="endpoint-name-mismatch"),
    pytest.param(local_deployment(model="azureml:sklearn:1"), ["model"], id="registered-model"),
    pytest.param(local_deployment(model={"type": "custom_model"}), ["model"], id="model-without-path"),
    pytest.param(local_deployment(model={"path": str(ADDER), "type": "onnx"}), ["model.type"], id="model-type-unknown"),
    pytest.param(local_deployment(model="/nonexistent/model.pkl"), ["model.path"], id="model-path-missing"),
    pytest.param(local_deployment(code_configuration=None), ["code_configuration"], id="code-configuration-missing"),
    pytest.param(local_deployment(code_configuration={"code": str(ADDER)}), ["code_configuration.scoring_script"], id="scoring-script-missing"),
    pytest.param(local_deployment(code_configuration={"code": "/nonexistent/script", "scoring_script": "score.py"}),
                 ["code_configuration.code"], id="code-folder-missing"),
    pytest.param(local_deployment(code_configuration={"code": str(ADDER), "scoring_script": "nope.py"}),
                 ["code_configuration.scoring_script"], id="scoring-script-not-in-folder"),
    pytest.param(local_deployment(code_configuration={"code": str(ADDER / "score.py"), "scoring_script": "score.py"}),
                 ["code_configuration.code"], id="code-a-file"),
    pytest.param(local_deployment(code_configuration={"code": "/tmp/" + "c" * 300, "scoring_script": "score.py"}),
                 ["code_configuration.code"], id="code-folder-name-too-long-for-the-host"),
    pytest.param(local_deployment(model="/tmp/" + "m" * 300), ["model.path"], id="model-name-too-long-for-the-host"),
    pytest.param(local_deployment(code_configuration={"code": "./script", "scoring_script": "score.py"}), ["code_configuration.code"],
                 id="code-folder-relative"),
    pytest.param(local_deployment(model="./model.pkl"), ["model.path"], id="model-path-relative"),
    pytest.param(local_deployment(environment="azureml:env:1"), ["environment"], id="registered-environment"),
    pytest.param(local_deployment(environment={"image": "x", "colour": "blue"}), ["environment.colour"], id="environment-unknown-field"),
    pytest.param(local_deployment(environment_variables={"1X": "a"}), ["environment_variables.1X"], id="bad-variable-name"),
    pytest.param(local_deployment(instance_count=2), ["instance_count"], id="local-instance-count-2"),
    pytest.param(local_deployment(instance_count=0), ["instance_count"], id="instance-count-0"),
    pytest.param(local_deployment(instance_count="1"), ["instance_count"], id="instance-count-a-string"),
    pytest.param(local_deployment(instance_type="small"), ["instance_type"], id="local-named-instance-type"),
    pytest.param(local_deployment(instance_type=""), ["instance_type"], id="instance-type-empty"),
    pytest.param(local_deployment(scale_settings={"type": "target_utilization"}), ["scale_settings.type"], id="local-autoscale"),
    pytest.param(local_deployment(scale_settings={"type": "manual"}), ["scale_settings.type"], id="scale-type-unknown"),
    pytest.param(local_deployment(liveness_probe={"success_threshold": 2}), ["liveness_probe.success_threshold"], id="liveness-success-2"),
    pytest.param(local_deployment(readiness_probe={"period": 0}), ["readiness_probe.period"], id="readiness-period-0"),
    pytest.param(local_deployment(request_settings={"request_timeout_ms": 0}), ["request_settings.request_timeout_ms"], id="timeout-0"),
    pytest.param(local_deployment(colour="blue"), ["colour"], id="unknown-field"),
    # what a local deployment cannot act on is refused with the reason
    pytest.param(local_deployment(resources={"requests": {"cpu": "0.1", "memory": "0.2Gi"}}), ["resources"], id="local-resources"),
    pytest.param(local_deployment(instance_type="defaultinstancetype"), ["instance_type"], id="local-default-instance-type"),
    pytest.param(local_deployment(environment={"image": "python:3.11"}), ["environment.image"], id="local-image"),
    pytest.param(local_deployment(readiness_probe={"period": 5}), ["readiness_probe"], id="local-readiness-probe"),
    pytest.param(local_deployment(model={"path": str(ADDER), "type": "mlflow_model"}, code_configuration=None), ["model.type"],
                 id="local-mlflow-without-code"),
    pytest.param({"name": "x", "instance_count": 0, "endpoint_name": "other", "environment": ["python"]},
                 ["name", "endpoint_name", "code_configuration", "environment", "instance_count"], id="every-problem-at-once"),
    pytest.param(["blue"], [""], id="body-a-list"),
]


@pytest.mark.parametrize("body, targets", BAD_LOCAL_DEPLOYMENTS)
def test_bad_local_deployments(api, body, targets):
    create_endpoint(api, "my-ep")
    create_deployment(api, "my-ep", local_deployment("existing"))
    set_traffic("my-ep", {"existing": 100})
    before = state()
    assert_refused(api.post(f"{BASE}/my-ep/deployments/", body, format="json"), "InvalidDeployment", targets, before)


BAD_KUBERNETES_DEPLOYMENTS = [
    pytest.param(kube_deployment(instance_type="huge"), ["instance_type"], id="unknown-instance-type"),
    pytest.param(kube_deployment(environment={"conda_file": {"dependencies": ["numpy"]}}), ["environment.image"], id="no-image"),
    pytest.param(kube_deployment(environment=None), ["environment.image"], id="no-environment"),
    pytest.param(kube_deployment(instance_count=0), ["instance_count"], id="instance-count-0"),
    pytest.param(kube_deployment(instance_count=2**31), ["instance_count"], id="instance-count-too-large"),
    pytest.param(kube_deployment(instance_type="small", resources={"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "4"}}),
                 ["resources.limits.cpu"], id="cpu-limit-equals-the-types"),
    pytest.param(kube_deployment(instance_type="small", resources={"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "9Gi"}}),
                 ["resources.limits.memory"], id="memory-limit-above-the-types"),
    pytest.param(kube_deployment(resources={"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2"}}),
                 ["resources.limits.cpu"], id="no-type-named-cpu-limit-equals-the-defaults"),
    pytest.param(kube_deployment(instance_type="gpu-small", resources={"requests": {"cpu": "1", "memory": "1Gi"},
                                                                       "limits": {"cpu": "2", "memory": "2Gi", GPU: 3}}),
                 [f"resources.limits.{GPU}"], id="gpu-limit-above-the-types"),
    pytest.param(kube_deployment(type="managed"), ["type"], id="managed-type"),
    pytest.param(kube_deployment(environment={"image": "python:3.11", "venv": "/opt/venv"}), ["environment.venv"], id="venv-on-kubernetes"),
    # resources, no instance type named: against defaultinstancetype (requests 100m/2Gi, limits 2/2Gi)
    pytest.param(kube_deployment(resources={"requests": {"memory": "1Gi"}}), ["resources.requests.cpu"], id="cpu-request-missing"),
    pytest.param(kube_deployment(resources={"requests": {"cpu": "0", "memory": "1Gi"}}), ["resources.requests.cpu"], id="cpu-request-zero"),
    pytest.param(kube_deployment(resources={"requests": {"cpu": "", "memory": "1Gi"}}), ["resources.requests.cpu"], id="cpu-request-empty"),
    pytest.param(kube_deployment(resources={"requests": {"cpu": "1"}}), ["resources.requests.memory"], id="memory-request-missing"),
    pytest.param(kube_deployment(resources={"requests": {"cpu": "1", "memory": "512Ki"}}), ["resources.requests.memory"], id="memory-under-1MB"),
    pytest.param(kube_deployment(resources={"limits": {"cpu": "1", "memory": "1Gi"}}), ["resources.requests"], id="requests-missing"),
    pytest.param(kube_deployment(resources={"requests": {"cpu": "1", "memory": "1Gi", GPU: 1}}), [f"resources.requests.{GPU}"],
                 id="gpu-in-requests"),
    pytest.param(kube_deployment(resources={"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2"}}), ["resources.limits.cpu"],
                 id="cpu-limit-equals-default"),
    pytest.param(kube_deployment(resources={"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}), ["resources.limits.memory"],
                 id="memory-limit-equals-default"),
    pytest.param(kube_deployment(resources={"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": ""}}), ["resources.limits.cpu"],
                 id="cpu-limit-empty"),
    pytest.param(kube_deployment(resources={"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi", GPU: 1}}),
                 [f"resources.limits.{GPU}"], id="gpu-on-the-default-type"),
    pytest.param(kube_deployment(resources={"requests": {"cpu": "1", "memory": "3Gi"}}), ["resources.requests.memory"],
                 id="memory-request-above-default-limit"),

    pytest.param(kube_deployment(instance_type="gpu-small", resources={"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {GPU: 1}}),
                 ["resources.limits.cpu", "resources.limits.memory"], id="gpu-without-cpu-and-memory-limits"),
    pytest.param(kube_deployment(instance_type="gpu-small", resources={"requests": {"cpu": "1", "memory": "1Gi"},
                                                                       "limits": {"cpu": "2", "memory": "2Gi", GPU: 0.5}}),
                 [f"resources.limits.{GPU}"], id="gpu-fraction"),
    pytest.param(kube_deployment(instance_type="small", resources={"requests": {"cpu": "1", "memory": "1Gi"},
                                                                   "limits": {"cpu": "2", "memory": "2Gi", GPU: 1}}),
                 [f"resources.limits.{GPU}"], id="gpu-on-a-cpu-type"),
    pytest.param(kube_deployment(model={"path": "./model", "type": "mlflow_model"}, code_configuration=None), ["instance_type"],
                 id="mlflow-on-the-default-type"),
    pytest.param(kube_deployment(model={"path": "./model", "type": "mlflow_model"}, code_configuration=None, instance_type="big",
                                 resources={"requests": {"cpu": "1", "memory": "4Gi"}}), ["resources.requests"], id="mlflow-1-cpu"),
    pytest.param(kube_deployment(model={"path": "./model", "type": "mlflow_model"}, code_configuration=None, instance_type="big",
                                 resources={"requests": {"cpu": "2", "memory": "3Gi"}}), ["resources.requests"], id="mlflow-3Gi"),
    pytest.param(kube_deployment(scale_settings={"type": "target_utilization", "min_instances": 3, "max_instances": 2}),
                 ["scale_settings.min_instances"], id="autoscale-min-above-max"),
    pytest.param(kube_deployment(scale_settings={"type": "target_utilization", "target_utilization_percentage": 101}),
                 ["scale_settings.target_utilization_percentage"], id="autoscale-target-over-100"),
]


@pytest.mark.parametrize("body, targets", BAD_KUBERNETES_DEPLOYMENTS)
def test_bad_kubernetes_deployments(api, k8s, body, targets):
    create_endpoint(api, "kep", compute="azureml:k8s")
    create_deployment(api, "kep", kube_deployment("existing", instance_type="small"))
    before = state()
    assert_refused(api.post(f"{BASE}/kep/deployments/", body, format="json"), "InvalidDeployment", targets, before)


BAD_DEPLOYMENT_PATCHES = [
    pytest.param({"instance_count": 0}, "InvalidDeployment", ["instance_count"], id="instance-count-0"),
    pytest.param({"instance_count": -3}, "InvalidDeployment", ["instance_count"], id="instance-count-negative"),
    pytest.param({"name": "green"}, "ImmutableField", ["name"], id="rename"),
    pytest.param({"endpoint_name": "other"}, "ImmutableField", ["endpoint_name"], id="move-endpoint"),
    pytest.param({"instance_type": "huge"}, "InvalidDeployment", ["instance_type"], id="unknown-instance-type"),
    pytest.param({"resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "4"}}}, "InvalidDeployment",
                 ["resources.limits.cpu"], id="limit-equals-the-types"),
    pytest.param({"resources": {"requests": {"cpu": "0", "memory": "0"}}}, "InvalidDeployment",
                 ["resources.requests.cpu", "resources.requests.memory"], id="zero-requests"),
    pytest.param({"environment": {"conda_file": {"dependencies": ["numpy"]}}}, "InvalidDeployment", ["environment.image"],
                 id="no-image"),
    pytest.param({"liveness_probe": {"success_threshold": 3}}, "InvalidDeployment", ["liveness_probe.success_threshold"], id="liveness-3"),
    pytest.param({"colour": "blue"}, "InvalidDeployment", ["colour"], id="unknown-field"),
    pytest.param(["instance_count"], "InvalidDeployment", [""], id="body-a-list"),
]


@pytest.mark.parametrize("patch, code, targets", BAD_DEPLOYMENT_PATCHES)
def test_bad_deployment_patches(api, k8s, patch, code, targets):
    create_endpoint(api, "kep", compute="azureml:k8s")
    create_deployment(api, "kep", kube_deployment("blue", instance_type="small"))
    before = state()
    assert_refused(api.patch(f"{BASE}/kep/deployments/blue/", patch, format="json"), code, targets, before)
