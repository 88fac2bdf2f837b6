"""endpoints/spec.py: every deployment rule (model, code, environment, counts, probes, settings), valid and refused (pure)."""
import datetime

import pytest

from controlplane.specs import SpecErrors
from endpoints.spec import parse_deployment, parse_endpoint
from endpoints.tests.bodies import PROBE_DEFAULTS, SEED_EXAMPLE, endpoint, targets
from endpoints.tests.bodies import kube_deployment as deployment

# ---------------------------------------------------------------- deployments

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
        "environment": {"conda_file": {"dependencies": ["python=3.10", {"pip": ["scikit-learn"]}]},
                        "image": "mcr.microsoft.com/azureml/openmpi3.1.2-ubuntu18.04:latest"},
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
    ("azureml:sklearn-mnist:1", {"reference": "azureml:sklearn-mnist:1"}),  # resolved by the service
    ("azureml:sklearn-mnist@latest", {"reference": "azureml:sklearn-mnist@latest"}),
    ({"path": "azureml://uploads/" + "a" * 64, "type": "MLflow_Model", "name": "mnist", "version": 2},
     {"path": "azureml://uploads/" + "a" * 64, "type": "mlflow_model", "name": "mnist", "version": "2"}),
])
def test_model_forms_accepted(model, parsed):
    assert parse_deployment(deployment(model=model), "ep")["model"] == parsed


@pytest.mark.parametrize("model, target", [
    pytest.param("azureml:sklearn-mnist", "model", id="registered-model-without-version"),
    pytest.param("azureml:../x:1", "model", id="registered-model-path-escape"),
    pytest.param("azureml:x\x00:1", "model", id="registered-model-nul"),
    pytest.param("azureml:" + "m" * 5000 + ":1", "model", id="registered-model-huge"),
    pytest.param("azureml://registries/azureml/environments/x/versions/1", "model", id="an-environment"),
    pytest.param({"path": "./model", "type": "triton_model"}, "model.type", id="triton"),
    pytest.param({"path": "./model", "datastore": "x"}, "model.datastore", id="unknown-inline-field"),
    pytest.param({"path": "./model", "name": "../up"}, "model.name", id="inline-name-escape"),
    pytest.param({"path": "./model", "version": "0"}, "model.version", id="inline-version-zero"),
    pytest.param({"reference": "azureml:m:1", "path": 5}, "model.path", id="shown-path-not-text"),
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
    {"image": "mcr.microsoft.com/azureml/openmpi3.1.2-ubuntu18.04:latest", "conda_file": {"dependencies": ["numpy"]}},
    {"venv": "/opt/venv"},
    {},
])
def test_environments_accepted(environment):
    assert parse_deployment(deployment(environment=environment), "ep")["environment"] == environment


@pytest.mark.parametrize("environment, target", [
    pytest.param("azureml:sklearn-env", "environment", id="registered-without-version"),
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
    ({"data_collector": {"collections": {}}}, "data_collector", "log inputs and outputs"),
    ({"egress_public_network_access": "disabled"}, "egress_public_network_access", "network policies"),
    ({"private_network_connection": True}, "private_network_connection", "no private endpoints"),
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
        parse_deployment({"name": "x", "environment": "azureml:env", "instance_count": 0, "endpoint_name": "other"}, "ep")
    assert set(targets(exc)) == {"name", "endpoint_name", "code_configuration", "environment", "instance_count"}


@pytest.mark.parametrize("body", [None, [], "name: blue"])
def test_a_deployment_body_must_be_a_mapping(body):
    with pytest.raises(SpecErrors) as exc:
        parse_deployment(body, "ep")
    assert targets(exc) == [""]


def test_a_yaml_date_in_tags_or_environment_variables_is_kept_as_the_text_written():
    """YAML reads `2026-01-31` as a date; the user meant the text — the rule the job parser had, now one copy for both."""
    written = datetime.date(2026, 1, 31)
    assert parse_endpoint(endpoint(tags={"since": written}))["tags"] == {"since": "2026-01-31"}
    spec = parse_deployment(deployment(tags={"since": written}, environment_variables={"SINCE": written}), "ep")
    assert (spec["tags"], spec["environment_variables"]) == ({"since": "2026-01-31"}, {"SINCE": "2026-01-31"})
