"""Service rules added after review: key hygiene across auth modes, absolute local paths, MLflow folders, round trips."""
import pytest

from endpoints.models import OnlineDeployment, OnlineEndpoint
from endpoints.tests.bodies import local_deployment
from endpoints.tests.support import BASE, create_deployment, create_endpoint, score
from tests.support import assert_error

# local compute is off by default: enabled as staff would
pytestmark = pytest.mark.usefixtures("local_compute", "deployment_folders")


def test_switching_back_to_key_makes_new_keys_and_the_old_ones_stop(api):
    old = create_endpoint(api)["keys"]["primaryKey"]
    assert api.patch(f"{BASE}/my-ep/", {"auth_mode": "aml_token"}, format="json").status_code == 200
    assert OnlineEndpoint.objects.get(name="my-ep").primary_key_hash == ""
    response = api.patch(f"{BASE}/my-ep/", {"auth_mode": "key"}, format="json")
    new = response.json()["keys"]["primaryKey"]
    assert new != old
    assert score(old).status_code == 401


@pytest.mark.parametrize("field, body", [
    ("code_configuration.code", local_deployment(code_configuration={"code": "relative/folder", "scoring_script": "score.py"})),
    ("model.path", local_deployment(model="relative/model")),
])
def test_local_paths_must_be_absolute(api, field, body):
    create_endpoint(api)
    response = api.post(f"{BASE}/my-ep/deployments/", body, format="json")
    assert_error(response, 400, "InvalidDeployment", target=field)
    assert not OnlineDeployment.objects.exists()


def test_a_model_folder_with_an_mlmodel_file_is_an_mlflow_model(api, tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "MLmodel").write_text("flavors: {}\n")
    create_endpoint(api)
    body = local_deployment(model=str(tmp_path / "model"), code_configuration=None)
    response = api.post(f"{BASE}/my-ep/deployments/", body, format="json")
    # MLflow needs no code_configuration on Azure ML; a local deployment has no no-code MLflow server to run it with
    assert_error(response, 400, "InvalidDeployment", target="model.type")
    assert "MLflow" in response.json()["error"]["message"]


def test_a_deployment_body_sent_back_as_read_is_unchanged(api):
    create_endpoint(api)
    shown = create_deployment(api)  # a local deployment: no instance type, no resources (shown as null and {})
    response = api.patch(f"{BASE}/my-ep/deployments/blue/", {"resources": shown["resources"]}, format="json")
    assert response.status_code == 200, response.json()
    assert OnlineDeployment.objects.get(name="blue").generation == 1
