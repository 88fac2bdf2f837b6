"""Traffic and mirror traffic set by PATCH; a refused endpoint patch (mostly traffic rules) moves nothing."""
import pytest

from endpoints.models import OnlineDeployment, OnlineEndpoint
from endpoints.tests.bodies import local_deployment
from endpoints.tests.support import BASE, assert_refused, create_deployment, create_endpoint, set_traffic, state
from workspaces.models import AuditEvent

# local compute is off by default: enabled as staff would
pytestmark = pytest.mark.usefixtures("local_compute", "deployment_folders")


# ---------------------------------------------------------------- traffic

@pytest.fixture
def three(api):
    """Endpoint `my-ep` with local deployments blue, green and red; blue takes all the traffic."""
    create_endpoint(api, "my-ep")
    for name in ("blue", "green", "red"):
        create_deployment(api, "my-ep", local_deployment(name))
    set_traffic("my-ep", {"blue": 100})
    return api


@pytest.mark.parametrize("patch, traffic, mirror", [
    pytest.param({"traffic": {"blue": 90, "green": 10}}, {"blue": 90, "green": 10}, {}, id="ninety-ten"),
    pytest.param({"traffic": {"green": 100}}, {"green": 100}, {}, id="all-to-green"),
    pytest.param({"traffic": {"blue": 0, "green": 0}}, {"blue": 0, "green": 0}, {}, id="totals-zero"),
    pytest.param({"traffic": {}}, {}, {}, id="no-traffic"),
    pytest.param({"traffic": {"blue": 34, "green": 33, "red": 33}}, {"blue": 34, "green": 33, "red": 33}, {}, id="three-ways"),
    pytest.param({"mirror_traffic": {"green": 50}}, {"blue": 100}, {"green": 50}, id="mirror-fifty"),
    pytest.param({"traffic": {"blue": 100, "green": 0}, "mirror_traffic": {"green": 10}}, {"blue": 100, "green": 0}, {"green": 10},
                 id="mirror-to-a-zero-share"),
])
def test_traffic_accepted(three, patch, traffic, mirror):
    response = three.patch(f"{BASE}/my-ep/", patch, format="json")
    assert response.status_code == 200, response.json()
    assert (response.json()["traffic"], response.json()["mirror_traffic"]) == (traffic, mirror)
    endpoint = OnlineEndpoint.objects.get(name="my-ep")
    assert (endpoint.traffic, endpoint.mirror_traffic) == (traffic, mirror)
    event = AuditEvent.objects.filter(target_type="online-endpoint", action="update").get()
    assert set(event.changes) <= {"traffic", "mirror_traffic"}


def test_traffic_cannot_name_a_deployment_being_deleted(three):
    OnlineDeployment.objects.filter(name="red").update(provisioning_state="Deleting")
    before = state()
    assert_refused(three.patch(f"{BASE}/my-ep/", {"traffic": {"red": 100}}, format="json"), "InvalidTraffic", ["traffic.red"], before)


# ---------------------------------------------------------------- refused patches

BAD_ENDPOINT_PATCHES = [
    pytest.param({"traffic": {"blue": 90}}, "InvalidTraffic", ["traffic"], id="totals-90"),
    pytest.param({"traffic": {"blue": 60, "green": 60}}, "InvalidTraffic", ["traffic"], id="totals-120"),
    pytest.param({"traffic": {"blue": 1}}, "InvalidTraffic", ["traffic"], id="totals-1"),
    pytest.param({"traffic": {"purple": 100}}, "InvalidTraffic", ["traffic.purple"], id="unknown-deployment"),
    pytest.param({"traffic": {"blue": 50, "purple": 50}}, "InvalidTraffic", ["traffic.purple"], id="one-unknown"),
    pytest.param({"traffic": {"blue": 99.5, "green": 0.5}}, "InvalidEndpoint", ["traffic.blue", "traffic.green"], id="fractions"),
    pytest.param({"traffic": {"blue": -10, "green": 110}}, "InvalidEndpoint", ["traffic.blue", "traffic.green"], id="out-of-range"),
    pytest.param({"traffic": {"blue": "100"}}, "InvalidEndpoint", ["traffic.blue"], id="share-a-string"),
    pytest.param({"traffic": [["blue", 100]]}, "InvalidEndpoint", ["traffic"], id="traffic-a-list"),
    pytest.param({"mirror_traffic": {"green": 51}}, "InvalidTraffic", ["mirror_traffic.green"], id="mirror-over-50"),
    pytest.param({"mirror_traffic": {"green": 101}}, "InvalidEndpoint", ["mirror_traffic.green"], id="mirror-over-100"),
    pytest.param({"mirror_traffic": {"blue": 10}}, "InvalidTraffic", ["mirror_traffic.blue"], id="mirror-to-live"),
    pytest.param({"traffic": {"blue": 0, "green": 100}, "mirror_traffic": {"green": 10}}, "InvalidTraffic", ["mirror_traffic.green"],
                 id="mirror-to-the-new-live-one"),
    pytest.param({"mirror_traffic": {"green": 10, "red": 10}}, "InvalidTraffic", ["mirror_traffic"], id="mirror-to-two"),
    pytest.param({"mirror_traffic": {"purple": 10}}, "InvalidTraffic", ["mirror_traffic.purple"], id="mirror-to-unknown"),
    pytest.param({"name": "renamed"}, "ImmutableField", ["name"], id="rename"),
    pytest.param({"compute": "azureml:k8s"}, "ImmutableField", ["compute"], id="move-compute"),
    pytest.param({"auth_mode": "aad_token"}, "InvalidEndpoint", ["auth_mode"], id="aad-token"),
    pytest.param({"colour": "blue"}, "InvalidEndpoint", ["colour"], id="unknown-field"),
    pytest.param({"description": 5}, "InvalidEndpoint", ["description"], id="description-not-a-string"),
    pytest.param(["description"], "InvalidEndpoint", [""], id="body-a-list"),
]


@pytest.mark.parametrize("patch, code, targets", BAD_ENDPOINT_PATCHES)
def test_bad_endpoint_patches(three, patch, code, targets):
    before = state()
    assert_refused(three.patch(f"{BASE}/my-ep/", patch, format="json"), code, targets, before)
    assert OnlineEndpoint.objects.get(name="my-ep").traffic == {"blue": 100}


def test_a_bad_traffic_patch_in_yaml(three):
    before = state()
    response = three.patch(f"{BASE}/my-ep/", "traffic:\n  blue: 90\n  green: 5\n", content_type="application/yaml")
    assert_refused(response, "InvalidTraffic", ["traffic"], before)
