"""endpoints/spec.py: endpoint names, auth modes, compute, other fields, and traffic shares against the deployments (pure)."""
import pytest

from controlplane.specs import SpecErrors
from endpoints.spec import check_traffic, parse_endpoint
from endpoints.tests.bodies import endpoint, targets

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


@pytest.mark.parametrize("compute", [None, ""], ids=["left-out", "empty"])
def test_no_compute_is_a_managed_endpoint(compute):
    """Azure ML's managed endpoints name no compute: stored as "" (Dockyard places it with its first deployment)."""
    body = endpoint(compute=compute) if compute is not None else {"name": "my-endpoint", "auth_mode": "key"}
    assert parse_endpoint(body)["compute"] == ""


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
