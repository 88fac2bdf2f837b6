"""A deployment's `environment: azureml:...` runs the referenced image; `model: azureml:...` must name a model here."""
import io

import pytest

from assets import registry
from assets.services import upload_create
from assets.tests.support import targz
from endpoints.models import OnlineDeployment
from endpoints.tests.bodies import kube_deployment, local_deployment
from endpoints.tests.support import BASE, assert_refused, create_endpoint, state

pytestmark = pytest.mark.usefixtures("deployment_folders", "local_compute")
CURATED = "mcr.microsoft.com/azureml/curated"


@pytest.fixture
def assets(owner, workspace):
    """Environment `score-env:1` (an image) and model `adder-model:1` (an upload)."""
    registry.environment_create(user=owner, workspace=workspace, data={
        "name": "score-env", "version": "1", "image": "team/score:1"})
    snapshot, _ = upload_create(user=owner, workspace=workspace, body=io.BytesIO(targz({"model.pkl": b"w"})),
                                content_type="application/gzip")
    registry.model_create(user=owner, workspace=workspace, data={"name": "adder-model", "version": 1,
                                                                  "path": snapshot.path})


@pytest.mark.parametrize("reference, image", [
    ("azureml:score-env:1", "team/score:1"),
    ("azureml:score-env@latest", "team/score:1"),
    ("azureml:AzureML-minimal-ubuntu22.04-py39-cpu-inference@latest",
     f"{CURATED}/minimal-ubuntu22.04-py39-cpu-inference:latest"),
])
def test_a_kubernetes_deployment_runs_the_referenced_image(api, k8s, assets, reference, image):
    create_endpoint(api, compute="azureml:k8s")
    response = api.post(f"{BASE}/my-ep/deployments/", kube_deployment(environment=reference, instance_type="small"),
                        format="json")
    assert response.status_code == 201, response.content
    assert response.json()["environment"] == {"image": image, "reference": reference}
    assert OnlineDeployment.objects.get().spec["environment"]["image"] == image
    # the shown deployment's environment sent back in a PATCH keeps the reference
    patched = api.patch(f"{BASE}/my-ep/deployments/blue/", {"environment": response.json()["environment"],
                                                            "description": "again"}, format="json")
    assert patched.status_code == 200, patched.content
    assert patched.json()["environment"] == {"image": image, "reference": reference}


@pytest.mark.parametrize("body, words", [
    (local_deployment(environment="azureml:nope:1"), "no version 1 of environment 'nope'"),
    (local_deployment(model="azureml:nope:1"), "no version 1 of model 'nope'"),
])
def test_references_that_do_not_resolve_or_cannot_be_used_are_refused(api, assets, body, words):
    create_endpoint(api)
    before = state()
    response = api.post(f"{BASE}/my-ep/deployments/", body, format="json")
    target = "model" if "model" in body else "environment"
    assert_refused(response, "InvalidDeployment", [target], before)
    assert words in response.json()["error"]["message"]
