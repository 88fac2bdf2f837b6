"""Table tests of endpoints/spec.py: every endpoint, traffic, deployment and resource rule, valid and invalid (pure).

The resource rules are the instance-types seed's (lines 125–213): requests cpu/memory required, non-zero,
non-empty; memory at least 1 MB; limits optional unless a GPU is asked for; GPUs whole numbers under limits
only; every limit strictly less than the instance type's (defaultinstancetype when none is named); without
`resources` the instance type's shape; MLflow models need requests of at least 2 CPU and 4 GB.
"""
import datetime

import pytest

from compute.shapes import DEFAULT_SHAPE, Shape
from controlplane.specs import SpecErrors
from endpoints.spec import check_traffic, parse_deployment, parse_endpoint, resolve_resources

GPU = "nvidia.com/gpu"
SMALL = Shape("small", {}, {"cpu": "1", "memory": "2Gi"}, {"cpu": "4", "memory": "8Gi"}, 0)
GPU_SHAPE = Shape("gpu-small", {"accelerator": "nvidia"}, {"cpu": "700m", "memory": "1500Mi"}, {"cpu": "4", "memory": "16Gi"}, 2)
BIG = Shape("big", {}, {"cpu": "2", "memory": "4Gi"}, {"cpu": "8", "memory": "32Gi"}, 0)
# Azure ML's GPU inference example pairs `nvidia.com/gpu: 1` with a 1-GPU instance type like this one
ONE_GPU = Shape("gpu-one", {}, {"cpu": "1", "memory": "4Gi"}, {"cpu": "6", "memory": "56Gi"}, 1)
SHAPES = {"default": DEFAULT_SHAPE, "small": SMALL, "gpu": GPU_SHAPE, "big": BIG, "one-gpu": ONE_GPU}
# The seed's own resources example (its `#nvidia.com/gpu: 0` left commented out).
SEED_EXAMPLE = {"requests": {"cpu": "0.1", "memory": "0.2Gi"}, "limits": {"cpu": "0.2", "memory": "0.5Gi"}}


def targets(exc: pytest.ExceptionInfo) -> list[str]:
    return [path for path, _ in exc.value.errors]


def endpoint(**fields) -> dict:
    """A valid endpoint body with fields replaced (None removes one)."""
    data = {"name": "my-endpoint", "compute": "local", **fields}
    return {key: value for key, value in data.items() if value is not None}


def deployment(**fields) -> dict:
    """A valid deployment body with fields replaced (None removes one)."""
    data = {"name": "blue", "code_configuration": {"code": "./script", "scoring_script": "score.py"},
            "environment": {"image": "mcr.microsoft.com/azureml/minimal-ubuntu22.04-py39-cpu-inference:latest"}, **fields}
    return {key: value for key, value in data.items() if value is not None}


# ---------------------------------------------------------------- endpoints

@pytest.mark.parametrize("name", ["abc", "my-endpoint", "A1b", "Blue-Green-2", "e" * 32, "a-b-c"])
def test_endpoint_names_accepted(name):
    assert parse_endpoint(endpoint(name=name))["name"] == name


@pytest.mark.parametrize("name", [
    pytest.param("ab", id="two-characters"),
    pytest.param("e" * 33, id="thirty-three-characters"),
    pytest.param("1abc", id="starts-with-a-digit"),
    pytest.param("-abc", id="starts-with-a-hyphen"),
    pytest.param("abc-", id="ends-with-a-hyphen"),
    pytest.param("my_endpoint", id="underscore"),
    pytest.param("my.endpoint", id="dot"),
    pytest.param("my endpoint", id="space"),
    pytest.param("", id="empty"),
    pytest.param(5, id="a-number"),
    pytest.param(["abc"], id="a-list"),
])
def test_endpoint_names_refused(name):
    with pytest.raises(SpecErrors) as exc:
        parse_endpoint(endpoint(name=name))
    assert targets(exc) == ["name"]


def test_endpoint_name_is_required():
    with pytest.raises(SpecErrors) as exc:
        parse_endpoint({"compute": "local"})
    assert targets(exc) == ["name"]


def test_endpoint_defaults():
    spec = parse_endpoint(endpoint())
    assert spec == {"name": "my-endpoint", "description": "", "tags": {}, "auth_mode": "key", "compute": "local",
                    "traffic": {}, "mirror_traffic": {}}


@pytest.mark.parametrize("auth_mode, stored", [
    ("key", "key"), ("aml_token", "aml_token"),
    # Azure ML's SDK reads the enum through its camel-to-snake transform, so these are the same two values
    ("Key", "key"), ("KEY", "key"), ("AMLToken", "aml_token"), ("AmlToken", "aml_token"), ("AML_TOKEN", "aml_token"),
])
def test_auth_modes_accepted(auth_mode, stored):
    assert parse_endpoint(endpoint(auth_mode=auth_mode))["auth_mode"] == stored


@pytest.mark.parametrize("auth_mode", ["aad_token", "AADToken", "token", "", 1, ["key"]])
def test_auth_modes_refused(auth_mode):
    """aad_token needs Microsoft Entra ID, which a self-hosted control plane does not have."""
    with pytest.raises(SpecErrors) as exc:
        parse_endpoint(endpoint(auth_mode=auth_mode))
    assert targets(exc) == ["auth_mode"]


@pytest.mark.parametrize("compute, stored", [
    ("local", "local"),
    ("azureml:k8s", "k8s"),
    ("k8s", "k8s"),
    ("azureml:my-k8s-compute", "my-k8s-compute"),
])
def test_compute_forms_accepted(compute, stored):
    assert parse_endpoint(endpoint(compute=compute))["compute"] == stored


@pytest.mark.parametrize("compute", [
    pytest.param("", id="empty"),
    pytest.param("azureml:", id="prefix-only"),
    pytest.param("azureml:  ", id="prefix-and-blanks"),
    pytest.param("azureml:rg/k8s", id="a-path"),
    pytest.param("/subscriptions/0/resourceGroups/rg/providers/x/k8s", id="an-arm-id"),
    pytest.param(5, id="a-number"),
    pytest.param({"name": "k8s"}, id="a-mapping"),
])
def test_compute_forms_refused(compute):
    with pytest.raises(SpecErrors) as exc:
        parse_endpoint(endpoint(compute=compute))
    assert targets(exc) == ["compute"]


def test_compute_is_required():
    with pytest.raises(SpecErrors) as exc:
        parse_endpoint(endpoint(compute=None))
    assert targets(exc) == ["compute"]


@pytest.mark.parametrize("fields, target", [
    ({"colour": "blue"}, "colour"),
    ({"tags": ["a", "b"]}, "tags"),
    ({"tags": {"team": ["a"]}}, "tags.team"),
    ({"description": {"a": 1}}, "description"),
])
def test_endpoint_other_fields_refused(fields, target):
    with pytest.raises(SpecErrors) as exc:
        parse_endpoint(endpoint(**fields))
    assert targets(exc) == [target]


@pytest.mark.parametrize("field, value, words", [
    ("identity", {"type": "system_assigned"}, "Microsoft Entra ID"),
    ("location", "westeurope", "no Azure regions"),
    ("public_network_access", "disabled", "no private endpoints"),
    ("public_network_access", "Disabled", "no private endpoints"),
])
def test_azure_only_endpoint_fields_are_refused_with_the_reason(field, value, words):
    with pytest.raises(SpecErrors) as exc:
        parse_endpoint(endpoint(**{field: value}))
    assert targets(exc) == [field] and words in exc.value.errors[0][1]


@pytest.mark.parametrize("value", ["enabled", "Enabled", "ENABLED"])
def test_public_network_access_enabled_is_what_dockyard_does(value):
    assert parse_endpoint(endpoint(public_network_access=value))["public_network_access"] == "enabled"


def test_endpoint_read_only_fields_are_ignored_so_a_shown_endpoint_can_be_sent_back():
    spec = parse_endpoint(endpoint(scoring_uri="http://x/score", provisioning_state="Succeeded", keys={}, deployments=[], kind="K8s"))
    assert "scoring_uri" not in spec and "provisioning_state" not in spec


@pytest.mark.parametrize("body", [None, [], "name: x", 5])
def test_an_endpoint_body_must_be_a_mapping(body):
    with pytest.raises(SpecErrors) as exc:
        parse_endpoint(body)
    assert targets(exc) == [""]


@pytest.mark.parametrize("field", ["traffic", "mirror_traffic"])
@pytest.mark.parametrize("share", [0, 1, 50, 100])
def test_traffic_shares_are_whole_percentages(field, share):
    assert parse_endpoint(endpoint(**{field: {"blue": share}}))[field] == {"blue": share}


@pytest.mark.parametrize("field", ["traffic", "mirror_traffic"])
@pytest.mark.parametrize("share", [-1, 101, 50.5, 10.0, "50", "50%", True, None, [50]])
def test_traffic_shares_refused(field, share):
    with pytest.raises(SpecErrors) as exc:
        parse_endpoint(endpoint(**{field: {"blue": share}}))
    assert targets(exc) == [f"{field}.blue"]


@pytest.mark.parametrize("field", ["traffic", "mirror_traffic"])
@pytest.mark.parametrize("value", ["blue=100", ["blue", 100], 100])
def test_traffic_must_be_a_mapping(field, value):
    with pytest.raises(SpecErrors) as exc:
        parse_endpoint(endpoint(**{field: value}))
    assert targets(exc) == [field]


# ---------------------------------------------------------------- traffic against the deployments

BLUE_GREEN = {"blue", "green"}


@pytest.mark.parametrize("traffic, mirror, deployments", [
    pytest.param({}, {}, set(), id="nothing-at-creation"),
    pytest.param({}, {}, BLUE_GREEN, id="no-traffic-yet"),
    pytest.param({"blue": 100}, {}, BLUE_GREEN, id="all-to-blue"),
    pytest.param({"blue": 90, "green": 10}, {}, BLUE_GREEN, id="ninety-ten"),
    pytest.param({"blue": 0, "green": 100}, {}, BLUE_GREEN, id="zero-and-hundred"),
    pytest.param({"blue": 0, "green": 0}, {}, BLUE_GREEN, id="totals-zero"),
    pytest.param({"blue": 0}, {}, {"blue"}, id="one-at-zero"),
    pytest.param({"blue": 33, "green": 33, "red": 34}, {}, BLUE_GREEN | {"red"}, id="three-ways"),
    pytest.param({"blue": 100}, {"green": 50}, BLUE_GREEN, id="mirror-fifty"),
    pytest.param({"blue": 100}, {"green": 1}, BLUE_GREEN, id="mirror-one"),
    pytest.param({"blue": 100, "green": 0}, {"green": 10}, BLUE_GREEN, id="mirror-to-one-at-zero-traffic"),
    pytest.param({"blue": 100}, {"blue": 0, "green": 10}, BLUE_GREEN, id="a-zero-mirror-share-is-no-mirror"),
    pytest.param({}, {"green": 20}, BLUE_GREEN, id="mirror-without-live-traffic"),
])
def test_traffic_accepted(traffic, mirror, deployments):
    assert check_traffic(traffic, mirror, deployments) == []


@pytest.mark.parametrize("traffic, mirror, deployments, expected", [
    pytest.param({"blue": 90}, {}, BLUE_GREEN, ["traffic"], id="totals-90"),
    pytest.param({"blue": 60, "green": 60}, {}, BLUE_GREEN, ["traffic"], id="totals-120"),
    pytest.param({"blue": 1}, {}, BLUE_GREEN, ["traffic"], id="totals-1"),
    pytest.param({"blue": 99, "green": 0}, {}, BLUE_GREEN, ["traffic"], id="totals-99"),
    pytest.param({"red": 100}, {}, BLUE_GREEN, ["traffic.red"], id="unknown-deployment"),
    pytest.param({"blue": 100}, {}, set(), ["traffic.blue"], id="at-creation-no-deployment-exists"),
    pytest.param({"red": 0}, {}, BLUE_GREEN, ["traffic.red"], id="unknown-even-at-zero"),
    pytest.param({"red": 50, "blue": 40}, {}, BLUE_GREEN, ["traffic.red", "traffic"], id="unknown-and-bad-total"),
    pytest.param({"blue": 100}, {"red": 10}, BLUE_GREEN, ["mirror_traffic.red"], id="mirror-to-unknown"),
    pytest.param({"blue": 100}, {"green": 51}, BLUE_GREEN, ["mirror_traffic.green"], id="mirror-over-fifty"),
    pytest.param({"blue": 100}, {"green": 100}, BLUE_GREEN, ["mirror_traffic.green"], id="mirror-everything"),
    pytest.param({"blue": 100}, {"blue": 10}, BLUE_GREEN, ["mirror_traffic.blue"], id="mirror-to-live"),
    pytest.param({"blue": 90, "green": 10}, {"green": 10}, BLUE_GREEN, ["mirror_traffic.green"], id="mirror-to-live-minor"),
    pytest.param({"blue": 100}, {"green": 10, "red": 10}, BLUE_GREEN | {"red"}, ["mirror_traffic"], id="mirror-to-two"),
])
def test_traffic_refused(traffic, mirror, deployments, expected):
    assert [path for path, _ in check_traffic(traffic, mirror, deployments)] == expected


# ---------------------------------------------------------------- deployments

PROBE_DEFAULTS = {"period": 10, "initial_delay": 10, "timeout": 2, "success_threshold": 1, "failure_threshold": 30}


def test_deployment_defaults():
    spec = parse_deployment(deployment(), "my-endpoint")
    assert spec["endpoint_name"] == "my-endpoint"
    assert spec["instance_type"] is None  # → defaultinstancetype, chosen by the service
    assert spec["instance_count"] == 1
    assert spec["resources"] is None
    assert spec["model"] is None
    assert spec["liveness_probe"] == spec["readiness_probe"] == PROBE_DEFAULTS
    assert spec["request_settings"] == {"request_timeout_ms": 5000, "max_concurrent_requests_per_instance": 1}
    assert spec["scale_settings"] == {"type": "default"}
    assert spec["environment_variables"] == {} and spec["tags"] == {}


def test_the_seeds_deployment_example_is_accepted():
    body = {
        "name": "blue", "app_insights_enabled": True, "endpoint_name": "my-endpoint",
        "model": {"path": "./model/sklearn_mnist_model.pkl"},
        "code_configuration": {"code": "./script/", "scoring_script": "score.py"},
        "environment": {"conda_file": "file:./model/conda.yml", "image": "mcr.microsoft.com/azureml/openmpi3.1.2-ubuntu18.04:latest"},
        "resources": SEED_EXAMPLE, "instance_type": "small",
    }
    spec = parse_deployment(body, "my-endpoint")
    assert spec["model"] == {"path": "./model/sklearn_mnist_model.pkl", "type": "custom_model"}
    assert spec["instance_type"] == "small" and spec["resources"] == SEED_EXAMPLE and spec["app_insights_enabled"] is True


@pytest.mark.parametrize("name", ["blue", "green", "b1u", "Blue-2", "d" * 32])
def test_deployment_names_accepted(name):
    assert parse_deployment(deployment(name=name), "ep")["name"] == name


@pytest.mark.parametrize("name", ["bl", "d" * 33, "1blue", "blue-", "blue_green", "blue.1", "", None, 7])
def test_deployment_names_refused(name):
    with pytest.raises(SpecErrors) as exc:
        parse_deployment(deployment(name=name) if name is not None else {**deployment(), "name": None}, "ep")
    assert targets(exc) == ["name"]


def test_endpoint_name_may_be_repeated_but_must_match():
    assert parse_deployment(deployment(endpoint_name="ep"), "ep")["endpoint_name"] == "ep"
    with pytest.raises(SpecErrors) as exc:
        parse_deployment(deployment(endpoint_name="other"), "ep")
    assert targets(exc) == ["endpoint_name"]


@pytest.mark.parametrize("model, parsed", [
    ("./model.pkl", {"path": "./model.pkl", "type": "custom_model"}),
    ({"path": "./model"}, {"path": "./model", "type": "custom_model"}),
    ({"path": "./model", "type": "custom_model"}, {"path": "./model", "type": "custom_model"}),
    ({"path": "./mlflow-model", "type": "mlflow_model"}, {"path": "./mlflow-model", "type": "mlflow_model"}),
])
def test_model_forms_accepted(model, parsed):
    assert parse_deployment(deployment(model=model), "ep")["model"] == parsed


@pytest.mark.parametrize("model, target", [
    pytest.param("azureml:sklearn-mnist:1", "model", id="registered-model"),
    pytest.param("azureml:sklearn-mnist@latest", "model", id="registered-model-label"),
    pytest.param("", "model", id="empty-string"),
    pytest.param({"type": "mlflow_model"}, "model", id="mapping-without-path"),
    pytest.param({"path": ""}, "model", id="empty-path"),
    pytest.param({"path": 5}, "model", id="path-not-a-string"),
    pytest.param(5, "model", id="a-number"),
    pytest.param(["./model"], "model", id="a-list"),
    pytest.param({"path": "./model", "type": "onnx"}, "model.type", id="unknown-type"),
])
def test_model_forms_refused(model, target):
    with pytest.raises(SpecErrors) as exc:
        parse_deployment(deployment(model=model), "ep")
    assert targets(exc) == [target]


def test_code_configuration_is_required_unless_the_model_is_mlflow():
    with pytest.raises(SpecErrors) as exc:
        parse_deployment(deployment(code_configuration=None), "ep")
    assert targets(exc) == ["code_configuration"]
    with pytest.raises(SpecErrors) as exc:
        parse_deployment(deployment(code_configuration=None, model="./model.pkl"), "ep")
    assert targets(exc) == ["code_configuration"]
    spec = parse_deployment(deployment(code_configuration=None, model={"path": "./m", "type": "mlflow_model"}), "ep")
    assert spec["code_configuration"] is None


@pytest.mark.parametrize("code, expected", [
    pytest.param({}, ["code_configuration.code", "code_configuration.scoring_script"], id="empty"),
    pytest.param({"code": "./script"}, ["code_configuration.scoring_script"], id="no-scoring-script"),
    pytest.param({"scoring_script": "score.py"}, ["code_configuration.code"], id="no-code"),
    pytest.param({"code": "", "scoring_script": "score.py"}, ["code_configuration.code"], id="empty-code"),
    pytest.param({"code": "./script", "scoring_script": 5}, ["code_configuration.scoring_script"], id="script-not-a-string"),
    pytest.param("./script/score.py", ["code_configuration"], id="a-string"),
])
def test_code_configuration_refused(code, expected):
    with pytest.raises(SpecErrors) as exc:
        parse_deployment(deployment(code_configuration=code), "ep")
    assert targets(exc) == expected


@pytest.mark.parametrize("environment", [
    {"image": "python:3.11"},
    {"image": "mcr.microsoft.com/azureml/openmpi3.1.2-ubuntu18.04:latest", "conda_file": "file:./model/conda.yml"},
    {"venv": "/opt/venv"},
    {},
])
def test_environments_accepted(environment):
    assert parse_deployment(deployment(environment=environment), "ep")["environment"] == environment


@pytest.mark.parametrize("environment, target", [
    pytest.param("azureml:sklearn-env:1", "environment", id="registered"),
    pytest.param(["python:3.11"], "environment", id="a-list"),
    pytest.param({"image": "python", "colour": "blue"}, "environment.colour", id="unknown-field"),
])
def test_environments_refused(environment, target):
    with pytest.raises(SpecErrors) as exc:
        parse_deployment(deployment(environment=environment), "ep")
    assert targets(exc) == [target]


def test_environment_may_be_left_out():
    """Optional here (a local server can run as Dockyard installs it); a Kubernetes deployment needs an image (services)."""
    assert parse_deployment(deployment(environment=None), "ep")["environment"] == {}


def test_environment_variables_become_strings():
    spec = parse_deployment(deployment(environment_variables={"WORKERS": 2, "DEBUG": True, "NAME": "x", "_X1": 1.5}), "ep")
    assert spec["environment_variables"] == {"WORKERS": "2", "DEBUG": "true", "NAME": "x", "_X1": "1.5"}


@pytest.mark.parametrize("variables, target", [
    ({"1X": "a"}, "environment_variables.1X"),
    ({"A-B": "a"}, "environment_variables.A-B"),
    ({"A": ["a"]}, "environment_variables.A"),
    ({"A": {"b": 1}}, "environment_variables.A"),
    (["A=1"], "environment_variables"),
])
def test_environment_variables_refused(variables, target):
    with pytest.raises(SpecErrors) as exc:
        parse_deployment(deployment(environment_variables=variables), "ep")
    assert targets(exc) == [target]


@pytest.mark.parametrize("instance_type", ["", 5, ["small"], {"name": "small"}])
def test_instance_type_must_be_a_name(instance_type):
    with pytest.raises(SpecErrors) as exc:
        parse_deployment(deployment(instance_type=instance_type), "ep")
    assert targets(exc) == ["instance_type"]


@pytest.mark.parametrize("count", [1, 2, 10, 2**31 - 1])
def test_instance_counts_accepted(count):
    assert parse_deployment(deployment(instance_count=count), "ep")["instance_count"] == count


@pytest.mark.parametrize("count", [0, -1, "2", 1.5, True, 2**31, 10**20])
def test_instance_counts_refused(count):
    with pytest.raises(SpecErrors) as exc:
        parse_deployment(deployment(instance_count=count), "ep")
    assert targets(exc) == ["instance_count"]


@pytest.mark.parametrize("probe", ["liveness_probe", "readiness_probe"])
def test_probes_fill_defaults_for_what_is_left_out(probe):
    spec = parse_deployment(deployment(**{probe: {"period": 5, "initial_delay": 0}}), "ep")
    assert spec[probe] == {**PROBE_DEFAULTS, "period": 5, "initial_delay": 0}


def test_only_a_readiness_probe_may_need_more_than_one_success():
    spec = parse_deployment(deployment(readiness_probe={"success_threshold": 3}), "ep")
    assert spec["readiness_probe"]["success_threshold"] == 3
    with pytest.raises(SpecErrors) as exc:
        parse_deployment(deployment(liveness_probe={"success_threshold": 3}), "ep")
    assert targets(exc) == ["liveness_probe.success_threshold"]


@pytest.mark.parametrize("probe", ["liveness_probe", "readiness_probe"])
@pytest.mark.parametrize("value, target", [
    ({"period": 0}, "period"),
    ({"timeout": 0}, "timeout"),
    ({"failure_threshold": 0}, "failure_threshold"),
    ({"success_threshold": 0}, "success_threshold"),
    ({"initial_delay": -1}, "initial_delay"),
    ({"period": "10"}, "period"),
    ({"period": 1.5}, "period"),
    ({"failure_threshold": 2**31}, "failure_threshold"),
    ({"path": "/health"}, "path"),
    ("10s", ""),
])
def test_probes_refused(probe, value, target):
    with pytest.raises(SpecErrors) as exc:
        parse_deployment(deployment(**{probe: value}), "ep")
    assert targets(exc)[0] == (f"{probe}.{target}" if target else probe)


def test_request_settings_defaults_and_overrides():
    spec = parse_deployment(deployment(request_settings={"request_timeout_ms": 90000}), "ep")
    assert spec["request_settings"] == {"request_timeout_ms": 90000, "max_concurrent_requests_per_instance": 1}


@pytest.mark.parametrize("value, target", [
    ({"request_timeout_ms": 0}, "request_settings.request_timeout_ms"),
    ({"max_concurrent_requests_per_instance": 0}, "request_settings.max_concurrent_requests_per_instance"),
    ({"max_queue_wait_ms": 500}, "request_settings.max_queue_wait_ms"),
    ({"request_timeout_ms": "5s"}, "request_settings.request_timeout_ms"),
    ({"retries": 3}, "request_settings.retries"),
    ([5000], "request_settings"),
])
def test_request_settings_refused(value, target):
    with pytest.raises(SpecErrors) as exc:
        parse_deployment(deployment(request_settings=value), "ep")
    assert targets(exc) == [target]


@pytest.mark.parametrize("value, parsed", [
    (None, {"type": "default"}),
    ({"type": "default"}, {"type": "default"}),
    ({}, {"type": "default"}),
    ({"type": "target_utilization"},
     {"type": "target_utilization", "min_instances": 1, "max_instances": 1, "target_utilization_percentage": 70}),
    ({"type": "target_utilization", "min_instances": 2, "max_instances": 5, "target_utilization_percentage": 50},
     {"type": "target_utilization", "min_instances": 2, "max_instances": 5, "target_utilization_percentage": 50}),
    # Azure ML's camel-to-snake transform: the enum's other spellings are the same values
    ({"type": "TargetUtilization", "max_instances": 2},
     {"type": "target_utilization", "min_instances": 1, "max_instances": 2, "target_utilization_percentage": 70}),
    ({"type": "Default"}, {"type": "default"}),
    ({"type": "DEFAULT"}, {"type": "default"}),
    ({"type": "target_utilization", "max_instances": 4},
     {"type": "target_utilization", "min_instances": 1, "max_instances": 4, "target_utilization_percentage": 70}),
    ({"type": "target_utilization", "min_instances": 3, "max_instances": 3, "target_utilization_percentage": 100},
     {"type": "target_utilization", "min_instances": 3, "max_instances": 3, "target_utilization_percentage": 100}),
])
def test_scale_settings_accepted(value, parsed):
    body = deployment() if value is None else deployment(scale_settings=value)
    assert parse_deployment(body, "ep")["scale_settings"] == parsed


@pytest.mark.parametrize("value, target", [
    pytest.param({"type": "manual"}, "scale_settings.type", id="unknown-type"),
    pytest.param("default", "scale_settings", id="a-string"),
    pytest.param({"type": "default", "min_instances": 2}, "scale_settings.min_instances", id="default-with-min"),
    pytest.param({"type": "target_utilization", "min_instances": 3, "max_instances": 2}, "scale_settings.min_instances", id="min-above-max"),
    pytest.param({"type": "target_utilization", "min_instances": 2}, "scale_settings.min_instances", id="min-above-default-max"),
    pytest.param({"type": "target_utilization", "min_instances": 0}, "scale_settings.min_instances", id="min-zero"),
    pytest.param({"type": "target_utilization", "max_instances": 0}, "scale_settings.max_instances", id="max-zero"),
    pytest.param({"type": "target_utilization", "target_utilization_percentage": 0}, "scale_settings.target_utilization_percentage", id="target-zero"),
    pytest.param({"type": "target_utilization", "target_utilization_percentage": 101}, "scale_settings.target_utilization_percentage", id="target-over-100"),
    pytest.param({"type": "target_utilization", "polling_interval": 1}, "scale_settings.polling_interval", id="polling-interval"),
    pytest.param({"type": "target_utilization_percentage"}, "scale_settings.type", id="not-a-type"),
    pytest.param({"type": "target_utilization", "cooldown": 5}, "scale_settings.cooldown", id="unknown-field"),
])
def test_scale_settings_refused(value, target):
    with pytest.raises(SpecErrors) as exc:
        parse_deployment(deployment(scale_settings=value), "ep")
    assert target in targets(exc)


@pytest.mark.parametrize("fields, target", [
    ({"colour": "blue"}, "colour"),
    ({"tags": "a=b"}, "tags"),
])
def test_deployment_other_fields_refused(fields, target):
    with pytest.raises(SpecErrors) as exc:
        parse_deployment(deployment(**fields), "ep")
    assert targets(exc) == [target]


@pytest.mark.parametrize("fields, target, words", [
    ({"model_mount_path": "/var/model"}, "model_mount_path", "does not mount models"),
    ({"data_collector": {"collections": {}}}, "data_collector", "log inputs and outputs"),
    ({"egress_public_network_access": "disabled"}, "egress_public_network_access", "managed online deployment"),
    ({"private_network_connection": True}, "private_network_connection", "managed online deployment"),
    ({"request_settings": {"max_queue_wait_ms": 500}}, "request_settings.max_queue_wait_ms", "no request queue"),
    ({"scale_settings": {"type": "target_utilization", "polling_interval": 1}}, "scale_settings.polling_interval",
     "horizontal-pod-autoscaler-sync-period"),
    ({"scale_settings": {"type": "default", "polling_interval": 1}}, "scale_settings.polling_interval",
     "horizontal-pod-autoscaler-sync-period"),
    ({"environment": {"image": "x", "inference_config": {"scoring_route": {"port": 1}}}}, "environment.inference_config",
     "Custom container routes"),
    ({"app_insights_enabled": "yes"}, "app_insights_enabled", "true or false"),
])
def test_fields_dockyard_does_not_act_on_are_refused_with_the_reason(fields, target, words):
    with pytest.raises(SpecErrors) as exc:
        parse_deployment(deployment(**fields), "ep")
    assert targets(exc) == [target] and words in exc.value.errors[0][1]


@pytest.mark.parametrize("value, stored", [("kubernetes", "kubernetes"), ("Kubernetes", "kubernetes"), ("managed", "managed"),
                                           ("Managed", "managed")])
def test_the_deployment_type_is_read_as_azure_ml_reads_it(value, stored):
    assert parse_deployment(deployment(type=value), "ep")["type"] == stored


@pytest.mark.parametrize("value", ["k8s", "", 1])
def test_deployment_types_refused(value):
    with pytest.raises(SpecErrors) as exc:
        parse_deployment(deployment(type=value), "ep")
    assert targets(exc) == ["type"]


@pytest.mark.parametrize("value, stored", [("mlflow_model", "mlflow_model"), ("MLFLOW_MODEL", "mlflow_model"),
                                           ("Custom_Model", "custom_model")])
def test_model_types_are_case_insensitive(value, stored):
    body = deployment(model={"path": "./model", "type": value})
    assert parse_deployment(body, "ep")["model"]["type"] == stored


def test_every_accepted_field_is_acted_on_or_says_why_not():
    """The audit: a refused field is never also accepted, and every stored-only field is one the parser accepts."""
    from endpoints import spec
    assert not set(spec.DEPLOYMENT_REFUSED) & spec.DEPLOYMENT_FIELDS and not set(spec.ENDPOINT_REFUSED) & spec.ENDPOINT_FIELDS
    accepted = spec.DEPLOYMENT_FIELDS | spec.ENDPOINT_FIELDS | {f"environment.{key}" for key in spec.ENVIRONMENT_FIELDS}
    assert set(spec.STORED_ONLY) <= accepted and all(reason.endswith(".") for reason in spec.STORED_ONLY.values())


def test_deployment_read_only_fields_are_ignored_so_a_shown_deployment_can_be_sent_back():
    spec = parse_deployment(deployment(provisioning_state="Succeeded", status={}, manifests=[], created_by="olivia"), "ep")
    assert "status" not in spec and "manifests" not in spec


def test_every_deployment_problem_is_reported_at_once():
    with pytest.raises(SpecErrors) as exc:
        parse_deployment({"name": "x", "environment": "azureml:env:1", "instance_count": 0, "endpoint_name": "other"}, "ep")
    assert set(targets(exc)) == {"name", "endpoint_name", "code_configuration", "environment", "instance_count"}


@pytest.mark.parametrize("body", [None, [], "name: blue"])
def test_a_deployment_body_must_be_a_mapping(body):
    with pytest.raises(SpecErrors) as exc:
        parse_deployment(body, "ep")
    assert targets(exc) == [""]


# ---------------------------------------------------------------- resources: the seed's rules

def resources(requests: dict | None = None, limits: dict | None = None) -> dict:
    body = {"requests": requests if requests is not None else {"cpu": "100m", "memory": "1Gi"}}
    if limits is not None:
        body["limits"] = limits
    return body


@pytest.mark.parametrize("shape", ["default", "small", "big"])
def test_the_seeds_resources_example_is_accepted(shape):
    resolved, errors = resolve_resources(SEED_EXAMPLE, SHAPES[shape], mlflow=False)
    assert errors == []
    assert resolved == {"requests": {"cpu": "0.1", "memory": "0.2Gi"}, "limits": {"cpu": "0.2", "memory": "0.5Gi"}}


def test_the_seeds_example_with_its_gpu_line_uncommented_as_zero_is_accepted():
    body = {**SEED_EXAMPLE, "limits": {**SEED_EXAMPLE["limits"], GPU: 0}}
    resolved, errors = resolve_resources(body, DEFAULT_SHAPE, mlflow=False)
    assert errors == [] and resolved["limits"] == {"cpu": "0.2", "memory": "0.5Gi"}


@pytest.mark.parametrize("shape, body, expected", [
    pytest.param("small", resources({"cpu": "100m", "memory": "1Gi"}),
                 {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {}}, id="cpu-only-limits-omitted"),
    pytest.param("small", resources({"cpu": "1", "memory": "1024Mi"}),
                 {"requests": {"cpu": "1", "memory": "1024Mi"}, "limits": {}}, id="whole-cores-and-Mi"),
    pytest.param("small", resources({"cpu": 1, "memory": "1G"}),
                 {"requests": {"cpu": "1", "memory": "1G"}, "limits": {}}, id="a-yaml-number-cpu"),
    pytest.param("small", resources({"cpu": "1m", "memory": "1M"}),
                 {"requests": {"cpu": "1m", "memory": "1M"}, "limits": {}}, id="memory-exactly-1MB"),
    pytest.param("small", resources({"cpu": "1m", "memory": "1000000"}),
                 {"requests": {"cpu": "1m", "memory": "1000000"}, "limits": {}}, id="memory-1MB-in-bytes"),
    pytest.param("small", resources({"cpu": "1m", "memory": "1Mi"}),
                 {"requests": {"cpu": "1m", "memory": "1Mi"}, "limits": {}}, id="memory-1Mi"),
    pytest.param("small", resources(limits={}),
                 {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {}}, id="empty-limits"),
    pytest.param("small", resources(limits={"cpu": "3999m"}),
                 {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"cpu": "3999m"}}, id="cpu-limit-just-below"),
    pytest.param("small", resources(limits={"memory": "8191Mi"}),
                 {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"memory": "8191Mi"}}, id="memory-limit-just-below"),
    pytest.param("small", resources({"cpu": "500m", "memory": "1Gi"}, {"cpu": "500m", "memory": "1Gi"}),
                 {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "500m", "memory": "1Gi"}}, id="requests-equal-own-limits"),
    pytest.param("default", resources({"cpu": "2", "memory": "2Gi"}),
                 {"requests": {"cpu": "2", "memory": "2Gi"}, "limits": {}}, id="requests-equal-default-limits"),
    pytest.param("default", resources(limits={"cpu": "1999m", "memory": "2047Mi"}),
                 {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"cpu": "1999m", "memory": "2047Mi"}}, id="just-below-default"),
    pytest.param("gpu", resources({"cpu": "1", "memory": "4Gi"}, {"cpu": "2", "memory": "8Gi", GPU: 1}),
                 {"requests": {"cpu": "1", "memory": "4Gi"}, "limits": {"cpu": "2", "memory": "8Gi", GPU: 1}}, id="one-gpu"),
    pytest.param("gpu", resources({"cpu": "1", "memory": "4Gi"}, {"cpu": "2", "memory": "8Gi", GPU: "1"}),
                 {"requests": {"cpu": "1", "memory": "4Gi"}, "limits": {"cpu": "2", "memory": "8Gi", GPU: 1}}, id="one-gpu-as-a-string"),
    pytest.param("gpu", resources({"cpu": "1", "memory": "4Gi"}, {"cpu": "2", GPU: 0}),
                 {"requests": {"cpu": "1", "memory": "4Gi"}, "limits": {"cpu": "2"}}, id="zero-gpus-is-no-gpu"),
    # GPUs may equal the instance type's: whole devices no side process uses (cpu and memory keep their headroom)
    pytest.param("gpu", resources({"cpu": "1", "memory": "4Gi"}, {"cpu": "2", "memory": "8Gi", GPU: 2}),
                 {"requests": {"cpu": "1", "memory": "4Gi"}, "limits": {"cpu": "2", "memory": "8Gi", GPU: 2}}, id="all-the-types-gpus"),
    pytest.param("one-gpu", resources({"cpu": "1", "memory": "4Gi"}, {"cpu": "2", "memory": "8Gi", GPU: 1}),
                 {"requests": {"cpu": "1", "memory": "4Gi"}, "limits": {"cpu": "2", "memory": "8Gi", GPU: 1}}, id="one-gpu-on-a-one-gpu-type"),
])
def test_resources_accepted(shape, body, expected):
    resolved, errors = resolve_resources(body, SHAPES[shape], mlflow=False)
    assert errors == []
    assert resolved == expected


@pytest.mark.parametrize("shape, expected", [
    pytest.param("default", {"requests": {"cpu": "100m", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}}, id="default"),
    pytest.param("small", {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}}, id="small"),
    pytest.param("gpu", {"requests": {"cpu": "700m", "memory": "1500Mi"}, "limits": {"cpu": "4", "memory": "16Gi", GPU: 2}}, id="gpu"),
])
def test_without_resources_the_instance_types_shape_is_used(shape, expected):
    assert resolve_resources(None, SHAPES[shape], mlflow=False) == (expected, [])


REFUSED = [
    # the section itself
    pytest.param("small", ["requests"], ["resources"], id="resources-a-list"),
    pytest.param("small", "cpu=1", ["resources"], id="resources-a-string"),
    pytest.param("small", {"requests": {"cpu": "1", "memory": "1Gi"}, "colour": {}}, ["resources.colour"], id="unknown-section"),
    pytest.param("small", {}, ["resources.requests"], id="resources-empty"),
    pytest.param("small", {"limits": {"cpu": "1", "memory": "1Gi"}}, ["resources.requests"], id="limits-without-requests"),
    pytest.param("small", {"requests": "1 cpu"}, ["resources.requests"], id="requests-a-string"),
    pytest.param("small", {"requests": None}, ["resources.requests"], id="requests-null"),
    # requests.cpu: required, not 0, not empty
    pytest.param("small", resources({"memory": "1Gi"}), ["resources.requests.cpu"], id="cpu-request-missing"),
    pytest.param("small", resources({"cpu": "", "memory": "1Gi"}), ["resources.requests.cpu"], id="cpu-request-empty"),
    pytest.param("small", resources({"cpu": None, "memory": "1Gi"}), ["resources.requests.cpu"], id="cpu-request-null"),
    pytest.param("small", resources({"cpu": "0", "memory": "1Gi"}), ["resources.requests.cpu"], id="cpu-request-zero"),
    pytest.param("small", resources({"cpu": 0, "memory": "1Gi"}), ["resources.requests.cpu"], id="cpu-request-zero-number"),
    pytest.param("small", resources({"cpu": "0m", "memory": "1Gi"}), ["resources.requests.cpu"], id="cpu-request-zero-millicores"),
    pytest.param("small", resources({"cpu": "-1", "memory": "1Gi"}), ["resources.requests.cpu"], id="cpu-request-negative"),
    pytest.param("small", resources({"cpu": "one", "memory": "1Gi"}), ["resources.requests.cpu"], id="cpu-request-not-a-quantity"),
    pytest.param("small", resources({"cpu": "1 ", "memory": "1Gi"}), ["resources.requests.cpu"], id="cpu-request-trailing-blank"),
    pytest.param("small", resources({"cpu": True, "memory": "1Gi"}), ["resources.requests.cpu"], id="cpu-request-boolean"),
    # requests.memory: required, not 0, not empty, at least 1 MB
    pytest.param("small", resources({"cpu": "1"}), ["resources.requests.memory"], id="memory-request-missing"),
    pytest.param("small", resources({"cpu": "1", "memory": ""}), ["resources.requests.memory"], id="memory-request-empty"),
    pytest.param("small", resources({"cpu": "1", "memory": "0"}), ["resources.requests.memory"], id="memory-request-zero"),
    pytest.param("small", resources({"cpu": "1", "memory": "0Gi"}), ["resources.requests.memory"], id="memory-request-zero-Gi"),
    pytest.param("small", resources({"cpu": "1", "memory": "-1Gi"}), ["resources.requests.memory"], id="memory-request-negative"),
    pytest.param("small", resources({"cpu": "1", "memory": "1GB"}), ["resources.requests.memory"], id="memory-request-GB-suffix"),
    pytest.param("small", resources({"cpu": "1", "memory": "999999"}), ["resources.requests.memory"], id="memory-under-1MB-bytes"),
    pytest.param("small", resources({"cpu": "1", "memory": "999k"}), ["resources.requests.memory"], id="memory-under-1MB-k"),
    pytest.param("small", resources({"cpu": "1", "memory": "512Ki"}), ["resources.requests.memory"], id="memory-under-1MB-Ki"),
    pytest.param("small", resources({}), ["resources.requests.cpu", "resources.requests.memory"], id="requests-empty"),
    # GPUs are given under limits only
    pytest.param("gpu", resources({"cpu": "1", "memory": "1Gi", GPU: 1}), [f"resources.requests.{GPU}"], id="gpu-in-requests"),
    pytest.param("gpu", resources({"cpu": "1", "memory": "1Gi", GPU: 1}, {"cpu": "2", "memory": "2Gi", GPU: 1}),
                 [f"resources.requests.{GPU}"], id="gpu-in-requests-and-limits"),
    pytest.param("small", resources({"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"}),
                 ["resources.requests.ephemeral-storage"], id="unknown-request"),
    # limits: optional, but what is given cannot be 0 or empty
    pytest.param("small", resources(limits=["cpu"]), ["resources.limits"], id="limits-a-list"),
    pytest.param("small", resources(limits={"cpu": "0"}), ["resources.limits.cpu"], id="cpu-limit-zero"),
    pytest.param("small", resources(limits={"cpu": ""}), ["resources.limits.cpu"], id="cpu-limit-empty"),
    pytest.param("small", resources(limits={"cpu": None}), ["resources.limits.cpu"], id="cpu-limit-null"),
    pytest.param("small", resources(limits={"cpu": "-500m"}), ["resources.limits.cpu"], id="cpu-limit-negative"),
    pytest.param("small", resources(limits={"memory": "0"}), ["resources.limits.memory"], id="memory-limit-zero"),
    pytest.param("small", resources(limits={"memory": ""}), ["resources.limits.memory"], id="memory-limit-empty"),
    pytest.param("small", resources(limits={"memory": None}), ["resources.limits.memory"], id="memory-limit-null"),
    pytest.param("small", resources(limits={"memory": "lots"}), ["resources.limits.memory"], id="memory-limit-not-a-quantity"),
    pytest.param("small", resources(limits={"cpu": "1", "ephemeral-storage": "1Gi"}), ["resources.limits.ephemeral-storage"], id="unknown-limit"),
    # a GPU needs cpu and memory limits
    pytest.param("gpu", resources(limits={GPU: 1}), ["resources.limits.cpu", "resources.limits.memory"], id="gpu-without-limits"),
    pytest.param("gpu", resources(limits={"memory": "2Gi", GPU: 1}), ["resources.limits.cpu"], id="gpu-without-cpu-limit"),
    pytest.param("gpu", resources(limits={"cpu": "2", GPU: 1}), ["resources.limits.memory"], id="gpu-without-memory-limit"),
    # GPU: a whole number, not empty
    pytest.param("gpu", resources(limits={"cpu": "2", "memory": "2Gi", GPU: 1.5}), [f"resources.limits.{GPU}"], id="gpu-fraction"),
    pytest.param("gpu", resources(limits={"cpu": "2", "memory": "2Gi", GPU: "1.5"}), [f"resources.limits.{GPU}"], id="gpu-fraction-string"),
    pytest.param("gpu", resources(limits={"cpu": "2", "memory": "2Gi", GPU: "one"}), [f"resources.limits.{GPU}"], id="gpu-word"),
    pytest.param("gpu", resources(limits={"cpu": "2", "memory": "2Gi", GPU: -1}), [f"resources.limits.{GPU}"], id="gpu-negative"),
    pytest.param("gpu", resources(limits={"cpu": "2", "memory": "2Gi", GPU: True}), [f"resources.limits.{GPU}"], id="gpu-boolean"),
    pytest.param("gpu", resources(limits={"cpu": "2", "memory": "2Gi", GPU: ""}), [f"resources.limits.{GPU}"], id="gpu-empty"),
    pytest.param("gpu", resources(limits={"cpu": "2", "memory": "2Gi", GPU: None}), [f"resources.limits.{GPU}"], id="gpu-null"),
    pytest.param("gpu", resources(limits={"cpu": "2", "memory": "2Gi", GPU: "1Gi"}), [f"resources.limits.{GPU}"], id="gpu-quantity"),
    # every limit strictly less than the instance type's: equal is refused
    pytest.param("small", resources(limits={"cpu": "4"}), ["resources.limits.cpu"], id="cpu-limit-equal"),
    pytest.param("small", resources(limits={"cpu": "4000m"}), ["resources.limits.cpu"], id="cpu-limit-equal-in-millicores"),
    pytest.param("small", resources(limits={"cpu": "5"}), ["resources.limits.cpu"], id="cpu-limit-above"),
    pytest.param("small", resources(limits={"memory": "8Gi"}), ["resources.limits.memory"], id="memory-limit-equal"),
    pytest.param("small", resources(limits={"memory": "8192Mi"}), ["resources.limits.memory"], id="memory-limit-equal-in-Mi"),
    pytest.param("small", resources(limits={"memory": "9Gi"}), ["resources.limits.memory"], id="memory-limit-above"),
    pytest.param("small", resources(limits={"cpu": "4", "memory": "8Gi"}), ["resources.limits.cpu", "resources.limits.memory"], id="both-equal"),
    pytest.param("gpu", resources(limits={"cpu": "2", "memory": "2Gi", GPU: 3}), [f"resources.limits.{GPU}"], id="gpu-limit-above"),
    pytest.param("small", resources(limits={"cpu": "2", "memory": "2Gi", GPU: 1}), [f"resources.limits.{GPU}"], id="gpu-on-a-cpu-type"),
    # no instance type named: validated against defaultinstancetype (limits 2 CPU, 2Gi)
    pytest.param("one-gpu", resources(limits={"cpu": "2", "memory": "2Gi", GPU: 2}), [f"resources.limits.{GPU}"], id="two-gpus-on-a-one-gpu-type"),
    pytest.param("default", resources(limits={"cpu": "2"}), ["resources.limits.cpu"], id="default-cpu-limit-equal"),
    pytest.param("default", resources(limits={"cpu": "3"}), ["resources.limits.cpu"], id="default-cpu-limit-above"),
    pytest.param("default", resources(limits={"memory": "2Gi"}), ["resources.limits.memory"], id="default-memory-limit-equal"),
    pytest.param("default", resources(limits={"memory": "4Gi"}), ["resources.limits.memory"], id="default-memory-limit-above"),
    pytest.param("default", resources(limits={"cpu": "1", "memory": "1Gi", GPU: 1}), [f"resources.limits.{GPU}"], id="default-has-no-gpu"),
    # requests cannot exceed the limit that applies: their own, else the instance type's
    pytest.param("small", resources({"cpu": "1", "memory": "1Gi"}, {"cpu": "500m"}), ["resources.requests.cpu"], id="cpu-request-above-own-limit"),
    pytest.param("small", resources({"cpu": "1", "memory": "2Gi"}, {"memory": "1Gi"}), ["resources.requests.memory"], id="memory-request-above-own-limit"),
    pytest.param("default", resources({"cpu": "2001m", "memory": "1Gi"}), ["resources.requests.cpu"], id="cpu-request-above-default-limit"),
    pytest.param("default", resources({"cpu": "1", "memory": "3Gi"}), ["resources.requests.memory"], id="memory-request-above-default-limit"),
    pytest.param("small", resources({"cpu": "5", "memory": "1Gi"}), ["resources.requests.cpu"], id="cpu-request-above-type-limit"),
]


@pytest.mark.parametrize("shape, body, expected", REFUSED)
def test_resources_refused(shape, body, expected):
    resolved, errors = resolve_resources(body, SHAPES[shape], mlflow=False)
    assert resolved == {}
    assert sorted({path for path, _ in errors}) == sorted(expected), errors
    assert all(message for _, message in errors)


def test_a_refused_limit_names_the_instance_type_and_its_limit():
    _, errors = resolve_resources(resources(limits={"cpu": "4"}), SMALL, mlflow=False)
    assert "small" in errors[0][1] and "4" in errors[0][1]
    _, errors = resolve_resources(resources(limits={"memory": "2Gi"}), DEFAULT_SHAPE, mlflow=False)
    assert "defaultinstancetype" in errors[0][1]


def test_the_limit_messages_say_why_cpu_and_memory_stay_below_and_gpus_may_equal():
    _, errors = resolve_resources(resources(limits={"cpu": "4"}), SMALL, mlflow=False)
    assert "room for the server's own processes" in errors[0][1] and "GPU limits may equal" in errors[0][1]
    _, errors = resolve_resources(resources(limits={"cpu": "2", "memory": "2Gi", GPU: 2}), ONE_GPU, mlflow=False)
    assert errors == [(f"resources.limits.{GPU}", f"The {GPU} limit 2 cannot be more than the limit of instance type 'gpu-one' (1); "
                                                  "it may be equal, as GPUs are whole devices no other process uses.")]


# MLflow: requests of at least 2 CPU and 4 GB, with or without a resources section

@pytest.mark.parametrize("shape, body", [
    pytest.param("big", None, id="type-requests-2-cpu-4Gi"),
    pytest.param("big", resources({"cpu": "2", "memory": "4Gi"}), id="requests-2-cpu-4Gi"),
    pytest.param("big", resources({"cpu": "2000m", "memory": "4G"}), id="requests-2000m-4G"),
    pytest.param("big", resources({"cpu": "4", "memory": "8Gi"}, {"cpu": "6", "memory": "16Gi"}), id="more-with-limits"),
])
def test_mlflow_minimum_met(shape, body):
    resolved, errors = resolve_resources(body, SHAPES[shape], mlflow=True)
    assert errors == [] and resolved


@pytest.mark.parametrize("shape, body, target", [
    pytest.param("default", None, "instance_type", id="default-type-100m"),
    pytest.param("small", None, "instance_type", id="type-requests-1-cpu"),
    pytest.param("gpu", None, "instance_type", id="type-requests-700m"),
    pytest.param("big", resources({"cpu": "1", "memory": "4Gi"}), "resources.requests", id="requests-1-cpu"),
    pytest.param("big", resources({"cpu": "1999m", "memory": "8Gi"}), "resources.requests", id="requests-1999m"),
    pytest.param("big", resources({"cpu": "2", "memory": "3Gi"}), "resources.requests", id="requests-3Gi"),
    pytest.param("big", resources({"cpu": "2", "memory": "3999M"}), "resources.requests", id="requests-3999M"),
    pytest.param("big", SEED_EXAMPLE, "resources.requests", id="the-seeds-example"),
])
def test_mlflow_minimum_not_met(shape, body, target):
    resolved, errors = resolve_resources(body, SHAPES[shape], mlflow=True)
    assert target in [path for path, _ in errors]
    assert any("MLflow" in message for _, message in errors)


def test_mlflow_is_not_checked_for_other_models():
    assert resolve_resources(SEED_EXAMPLE, BIG, mlflow=False)[1] == []
    assert resolve_resources(None, DEFAULT_SHAPE, mlflow=False)[1] == []


def test_a_yaml_date_in_tags_or_environment_variables_is_kept_as_the_text_written():
    """YAML reads `2026-01-31` as a date; the user meant the text — the rule the job parser had, now one copy for both."""
    written = datetime.date(2026, 1, 31)
    assert parse_endpoint(endpoint(tags={"since": written}))["tags"] == {"since": "2026-01-31"}
    spec = parse_deployment(deployment(tags={"since": written}, environment_variables={"SINCE": written}), "ep")
    assert (spec["tags"], spec["environment_variables"]) == ({"since": "2026-01-31"}, {"SINCE": "2026-01-31"})
