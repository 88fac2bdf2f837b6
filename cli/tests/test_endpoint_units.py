"""The online endpoint commands' pure parts: traffic options, telling documents apart, comparing, keys (no server)."""
import httpx
import pytest

from cli.commands.online_endpoint import model_failed
from cli.errors import CliError
from cli.resources.online_deployment import deployment_changes, ready_cell
from cli.resources.online_endpoint import (
    deployments_named,
    endpoint_changes,
    online_kind,
    parse_traffic,
    shown_keys,
    traffic_text,
)
from cli.resources.routing import route_of

SCHEMAS = "https://azuremlschemas.azureedge.net/latest/"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("blue=90,green=10", {"blue": 90, "green": 10}),
        ("blue=90 green=10", {"blue": 90, "green": 10}),  # Azure CLI's spelling
        (" blue:90 , green = 10 ", {"blue": 90, "green": 10}),
        ("blue=100", {"blue": 100}),
        ("", {}),
        ("  ", {}),
    ],
)
def test_parse_traffic(text, expected):
    assert parse_traffic(text, "--traffic") == expected


@pytest.mark.parametrize("text", ["blue", "blue=", "blue=ninety", "=10", "blue=1.5", "blue=10,blue=90"])
def test_parse_traffic_refuses_what_is_not_name_equals_percent_as_a_usage_error(text):
    with pytest.raises(CliError) as error:
        parse_traffic(text, "--mirror-traffic")
    assert error.value.exit_code == 2 and error.value.details[0]["target"] == "--mirror-traffic"


def test_traffic_text_and_the_deployments_a_document_names():
    assert traffic_text({"blue": 90, "green": 10}) == "blue=90,green=10"
    assert traffic_text({}) is None and traffic_text(None) is None
    assert deployments_named({"traffic": {"blue": 100}, "mirror_traffic": {"green": 10}, "tags": {"x": 1}}) == {"blue", "green"}


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        ({"$schema": SCHEMAS + "managedOnlineEndpoint.schema.json", "name": "ep"}, "online-endpoint"),
        ({"$schema": SCHEMAS + "kubernetesOnlineEndpoint.schema.json", "name": "ep", "compute": "azureml:k8s"}, "online-endpoint"),
        ({"$schema": SCHEMAS + "kubernetesOnlineDeployment.schema.json", "name": "blue", "type": "kubernetes"}, "online-deployment"),
        ({"$schema": SCHEMAS + "managedOnlineDeployment.schema.json", "name": "blue"}, "online-deployment"),
        ({"name": "ep", "compute": "local"}, "online-endpoint"),
        ({"name": "ep", "auth_mode": "key"}, "online-endpoint"),
        ({"name": "blue", "endpoint_name": "ep", "type": "kubernetes"}, "online-deployment"),
        ({"name": "blue", "code_configuration": {}, "environment": {}}, "online-deployment"),
        ({"name": "k8s", "type": "kubernetes", "namespace": "a"}, None),
        ({"type": "command", "command": "echo", "compute": "local"}, None),
        ({"command": "echo", "compute": "local"}, None),
    ],
)
def test_online_kind(body, kind):
    assert online_kind(body) == kind


def test_a_kubernetes_deployment_is_not_routed_as_a_kubernetes_compute():
    assert route_of({"name": "blue", "endpoint_name": "ep", "type": "kubernetes"}) == "online-deployment"
    assert route_of({"name": "k8s", "type": "kubernetes", "kubeconfig": "..."}) == "compute"
    assert route_of({"name": "ep", "compute": "local", "auth_mode": "aml_token"}) == "online-endpoint"


def test_endpoint_changes_count_a_zero_share_as_no_share_and_compare_tags_as_strings():
    current = {"description": "", "tags": {"run": "1"}, "auth_mode": "key", "traffic": {"blue": 100, "green": 0},
               "mirror_traffic": {}}
    same = {"name": "ep", "compute": "local", "tags": {"run": 1}, "traffic": {"blue": 100}, "mirror_traffic": {"green": 0}}

    assert endpoint_changes(same, current) == []
    assert endpoint_changes({"description": None, "auth_mode": "key"}, current) == []
    assert endpoint_changes({"traffic": {"green": 100}, "auth_mode": "aml_token", "description": "x"}, current) == [
        "description", "auth_mode", "traffic",
    ]


def test_deployment_changes_allow_for_what_the_api_fills_in():
    current = {
        "model": {"path": "/models/m", "type": "custom_model"}, "tags": {"n": "1"}, "environment_variables": {"ON": "true"},
        "instance_type": "defaultinstancetype", "instance_count": 1,
        "request_settings": {"request_timeout_ms": 5000, "max_concurrent_requests_per_instance": 1},
        "code_configuration": {"code": "/src", "scoring_script": "score.py"},
    }
    document = {"name": "blue", "model": "/models/m", "tags": {"n": 1}, "environment_variables": {"ON": True},
                "request_settings": {"request_timeout_ms": 5000}, "code_configuration": {"code": "/src", "scoring_script": "score.py"},
                "instance_type": None}

    assert deployment_changes(document, current) == []
    changed = {**document, "request_settings": {"request_timeout_ms": 9000}, "instance_count": 2, "model": {"path": "/models/n"}}
    assert deployment_changes(changed, current) == ["model", "request_settings", "instance_count"]


def test_shown_keys_read_both_answers_that_show_keys():
    assert shown_keys({"name": "ep", "keys": {"primaryKey": "p", "secondaryKey": "s"}}) == {"primaryKey": "p", "secondaryKey": "s"}
    assert shown_keys({"auth_mode": "key", "secondaryKey": "s"}) == {"secondaryKey": "s"}
    assert shown_keys({"name": "ep", "keys": {}}) == {} and shown_keys({"name": "ep"}) == {}


def test_ready_cell():
    assert ready_cell({"status": {"replicas": 2, "ready_replicas": 1}}) == "1/2"
    assert ready_cell({"status": {"state": "Starting", "replicas": 1, "ready_replicas": 0}}) == "0/1"
    assert ready_cell({"status": {}}) is None


def test_a_models_own_error_is_reported_with_its_answer():
    request = httpx.Request("POST", "http://dockyard/score")
    error = model_failed(httpx.Response(500, text='"KeyError: numbers"', request=request), "blue")
    assert (error.code, error.message, error.exit_code) == ("ScoringFailed", "Deployment 'blue' answered 500 Internal Server Error: KeyError: numbers", 1)
    empty = model_failed(httpx.Response(400, request=request), "green")
    assert empty.message == "Deployment 'green' answered 400 Bad Request."
