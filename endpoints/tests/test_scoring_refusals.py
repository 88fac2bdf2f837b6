"""Scoring without a running server: who may score (keys, tokens, roles) and the answer when nothing can serve."""
import pytest
from rest_framework.test import APIClient

from endpoints.models import OnlineDeployment
from endpoints.tests.bodies import local_deployment
from endpoints.tests.support import BASE, create_deployment, create_endpoint, score, set_traffic
from tests.support import assert_error

# local compute is off by default: enabled as staff would
pytestmark = pytest.mark.usefixtures("local_compute", "deployment_folders")


# ---------------------------------------------------------------- scoring, without a running server

@pytest.fixture
def scoring(api):
    """Endpoint `my-ep` (keys returned) with local deployment blue, not yet serving."""
    made = create_endpoint(api, "my-ep")["keys"]
    create_deployment(api, "my-ep", local_deployment("blue"))
    return made


def test_score_an_unknown_endpoint(scoring, users):
    """A member's token learns that the endpoint does not exist; anyone else gets the 401 a wrong key gets (no leak)."""
    from workspaces.services import token_create

    tokens = {role: token_create(user=users[role], name="score")[1] for role in ("reader", "outsider")}
    assert_error(score(tokens["reader"], "nope"), 404, "NotFound")
    for key in (scoring["primaryKey"], tokens["outsider"], None):
        response = score(key, "nope")
        assert_error(response, 401, "Unauthorized")
        assert response["WWW-Authenticate"] == "Bearer"
    missing_workspace = APIClient().post("/api/v1/workspaces/no-such-team/online-endpoints/my-ep/score", {}, format="json",
                                         HTTP_AUTHORIZATION=f"Bearer {tokens['reader']}")
    assert_error(missing_workspace, 401, "Unauthorized")


@pytest.mark.parametrize("authorization", [None, "", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Token abc"])
def test_score_without_a_key(scoring, authorization):
    headers = {} if authorization is None else {"HTTP_AUTHORIZATION": authorization}
    response = APIClient().post(f"{BASE}/my-ep/score", {"numbers": [1]}, format="json", **headers)
    assert_error(response, 401, "Unauthorized")
    assert response["WWW-Authenticate"] == "Bearer"


def test_score_with_a_wrong_key(scoring, api, owner):
    from workspaces.services import token_create

    _, token = token_create(user=owner, name="not-a-key")
    for key in ("wrong", scoring["primaryKey"][:-1], scoring["primaryKey"] + "x", token):
        response = score(key)
        assert_error(response, 401, "Unauthorized")
        assert response["WWW-Authenticate"] == "Bearer"


def test_score_with_no_traffic(scoring):
    assert_error(score(scoring["primaryKey"]), 404, "NoTraffic")
    set_traffic("my-ep", {"blue": 0})
    assert_error(score(scoring["secondaryKey"]), 404, "NoTraffic")


def test_score_with_an_unknown_deployment_header(scoring):
    set_traffic("my-ep", {"blue": 100})
    assert_error(score(scoring["primaryKey"], HTTP_AZUREML_MODEL_DEPLOYMENT="green"), 404, "DeploymentNotFound")


def test_score_a_deployment_that_is_not_ready(scoring):
    assert_error(score(scoring["primaryKey"], HTTP_AZUREML_MODEL_DEPLOYMENT="blue"), 503, "DeploymentNotReady")
    set_traffic("my-ep", {"blue": 100})
    assert_error(score(scoring["primaryKey"]), 503, "DeploymentNotReady")
    assert_error(APIClient().post(f"{BASE}/my-ep/score/", {"numbers": [1]}, format="json",
                                  HTTP_AUTHORIZATION=f"Bearer {scoring['primaryKey']}"), 503, "DeploymentNotReady")


def test_score_a_deployment_being_deleted_or_an_endpoint_being_deleted(scoring, api, owner):
    from workspaces.services import token_create

    OnlineDeployment.objects.filter(name="blue").update(provisioning_state="Deleting")
    assert_error(score(scoring["primaryKey"], HTTP_AZUREML_MODEL_DEPLOYMENT="blue"), 404, "DeploymentNotFound")
    api.delete(f"{BASE}/my-ep/")
    assert_error(score(scoring["primaryKey"]), 401, "Unauthorized")  # an endpoint being deleted is gone: its keys too
    assert_error(score(token_create(user=owner, name="score")[1]), 404, "NotFound")


def test_score_an_aml_token_endpoint(api, api_as, users):
    create_endpoint(api, "tok", auth_mode="aml_token")
    from workspaces.services import token_create

    # a reader may read the endpoint but not use it (API.md: a member without the role gets 403)
    codes = {404: "NoTraffic", 401: "Unauthorized", 403: "Forbidden"}
    for role, expected in (("reader", 403), ("contributor", 404), ("owner", 404), ("outsider", 401)):
        _, token = token_create(user=users[role], name="score")
        response = score(token, "tok")
        assert_error(response, expected, codes[expected])
    assert_error(score(None, "tok"), 401, "Unauthorized")
