"""endpoints/spec: a managed endpoint (no compute) and a managed deployment's own rules, valid and refused (pure)."""
import pytest

from controlplane.specs import SpecErrors
from endpoints.spec import (
    DEPLOYMENT_REFUSED,
    ENDPOINT_REFUSED,
    MANAGED,
    parse_deployment,
    parse_endpoint,
    target_errors,
)
from endpoints.spec.managed import MANAGED_REFUSED, size_name
from endpoints.tests.bodies import kube_deployment, targets

MANAGED_ENDPOINT_SCHEMA = "https://azuremlschemas.azureedge.net/latest/managedOnlineEndpoint.schema.json"


def managed(**fields) -> dict:
    return kube_deployment(**{"instance_type": "Standard_DS3_v2", **fields})


@pytest.mark.parametrize("body, stored", [
    pytest.param({"$schema": MANAGED_ENDPOINT_SCHEMA, "name": "my-endpoint", "auth_mode": "key"}, "", id="azure-ml-example"),
    pytest.param({"name": "my-endpoint", "compute": None}, "", id="null"),
    pytest.param({"name": "my-endpoint", "compute": "azureml:k8s"}, "k8s", id="kubernetes-still"),
    pytest.param({"name": "my-endpoint", "public_network_access": "Enabled"}, "", id="public-network-enabled"),
])
def test_managed_endpoint_bodies(body, stored):
    assert parse_endpoint(body)["compute"] == stored


@pytest.mark.parametrize("body, target, words", [
    pytest.param({"name": "my-endpoint", "public_network_access": "disabled"}, "public_network_access", "no private endpoints",
                 id="public-network-disabled"),
    pytest.param({"name": "my-endpoint", "identity": {"type": "system_assigned"}}, "identity", "Microsoft Entra ID",
                 id="identity"),
    pytest.param({"name": "my-endpoint", "auth_mode": "aad_token"}, "auth_mode", "Microsoft Entra ID", id="aad-token"),
])
def test_managed_endpoint_fields_refused_with_the_reason(body, target, words):
    with pytest.raises(SpecErrors) as exc:
        parse_endpoint(body)
    [(path, message)] = exc.value.errors
    assert path == target and words in message


@pytest.mark.parametrize("fields, stored", [
    pytest.param({}, "Standard_DS3_v2", id="as-written"),
    pytest.param({"instance_type": "STANDARD_DS3_V2"}, "Standard_DS3_v2", id="any-case"),
    pytest.param({"instance_type": "standard_f4s_v2"}, "Standard_F4s_v2", id="another-size"),
])
def test_a_vm_size_is_read_in_any_case(fields, stored):
    spec = parse_deployment(managed(**fields), "ep")
    assert target_errors(spec, MANAGED) == []
    assert size_name(spec["instance_type"]) == stored


@pytest.mark.parametrize("fields", [
    pytest.param({"instance_count": 3}, id="instance-count"),
    pytest.param({"type": "Managed"}, id="type-managed"),
    pytest.param({"request_settings": {"request_timeout_ms": 3000, "max_concurrent_requests_per_instance": 2}},
                 id="request-settings"),
    pytest.param({"liveness_probe": {"period": 5}, "readiness_probe": {"failure_threshold": 3}}, id="probes"),
    pytest.param({"scale_settings": {"type": "default"}}, id="scale-default"),
    pytest.param({"app_insights_enabled": True}, id="app-insights"),
    pytest.param({"model_mount_path": "/var/models"}, id="mount-path"),
])
def test_managed_only_fields_accepted(fields):
    body = managed(**fields)
    if "model_mount_path" in fields:
        body["model"] = "azureml:adder:1"
    spec = parse_deployment(body, "ep")
    assert target_errors(spec, MANAGED) == []


@pytest.mark.parametrize("fields, target, words", [
    pytest.param({"instance_type": None}, "instance_type", "needs instance_type, a VM size", id="no-size"),
    pytest.param({"instance_type": "cpusmall"}, "instance_type", "not a VM size Dockyard knows", id="an-instance-type"),
    pytest.param({"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}, "resources", "one whole node",
                 id="resources"),
    pytest.param({"scale_settings": {"type": "target_utilization"}}, "scale_settings.type", "instance_count instances",
                 id="autoscale"),
    pytest.param({"type": "kubernetes"}, "type", "use type managed", id="type-kubernetes"),
    pytest.param({"environment": {"image": "x", "venv": "/opt/venv"}}, "environment.venv", "container", id="venv"),
])
def test_managed_deployment_refusals(fields, target, words):
    spec = parse_deployment(managed(**fields), "ep")
    [(path, message)] = target_errors(spec, MANAGED)
    assert path == target and words in message


@pytest.mark.parametrize("fields, target", [
    pytest.param({"egress_public_network_access": "disabled"}, "egress_public_network_access", id="egress"),
    pytest.param({"data_collector": {"collections": {}}}, "data_collector", id="data-collector"),
    pytest.param({"private_network_connection": True}, "private_network_connection", id="private-network"),
    pytest.param({"request_settings": {"max_queue_wait_ms": 500}}, "request_settings.max_queue_wait_ms", id="queue-wait"),
])
def test_azure_ml_managed_fields_without_a_meaning_here_are_refused(fields, target):
    with pytest.raises(SpecErrors) as exc:
        parse_deployment(managed(**fields), "ep")
    assert targets(exc) == [target]
    assert exc.value.errors[0][1] == DEPLOYMENT_REFUSED[target]


def test_every_refusal_says_why_and_what_to_do():
    for reasons in (MANAGED_REFUSED, DEPLOYMENT_REFUSED, ENDPOINT_REFUSED):
        for field, why in reasons.items():
            assert why.endswith(".") and len(why) > 40, field
