"""A deployment's `model:` as the API takes it: registered models resolved to their snapshot (and the version kept when
shown and sent back), inline uploads checked, and every hostile or unusable reference refused at `model` with nothing
written. Query counts of the routes that resolve a model."""
import io

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from assets import registry
from assets.services import upload_create
from assets.tests.support import targz
from endpoints.models import OnlineDeployment
from endpoints.tests.bodies import kube_deployment, local_deployment
from endpoints.tests.support import BASE, assert_refused, create_endpoint, state
from workspaces.tests.factories import WorkspaceFactory

pytestmark = pytest.mark.usefixtures("deployment_folders", "local_compute")
DEPLOYMENTS = f"{BASE}/my-ep/deployments/"


def snapshot_of(user, workspace, files: dict[str, bytes]):
    snapshot, _ = upload_create(user=user, workspace=workspace, body=io.BytesIO(targz(files)),
                                content_type="application/gzip")
    return snapshot


@pytest.fixture
def models(owner, workspace):
    """`scaler` versions 1 and 2 (folders `model/weight.txt`), `flow:1` an MLflow model, `triton:1` a Triton one."""
    made = {}
    for version, weight in (("1", b"2"), ("2", b"5")):
        snapshot = snapshot_of(owner, workspace, {"model/weight.txt": weight})
        made[version] = registry.model_create(user=owner, workspace=workspace, data={
            "name": "scaler", "version": version, "path": snapshot.path})
    mlflow = snapshot_of(owner, workspace, {"model/MLmodel": b"flavors: {}\n"})
    registry.model_create(user=owner, workspace=workspace, data={"name": "flow", "version": 1, "path": mlflow.path,
                                                                  "type": "mlflow_model"})
    registry.model_create(user=owner, workspace=workspace, data={"name": "triton", "version": 1, "path": mlflow.path,
                                                                  "type": "triton_model"})
    return made


def test_a_registered_model_is_resolved_to_its_snapshot_and_sent_back_keeps_its_version(api, owner, workspace, models):
    create_endpoint(api)
    response = api.post(DEPLOYMENTS, local_deployment(model="azureml:scaler@latest"), format="json")
    assert response.status_code == 201, response.content
    shown = response.json()["model"]
    assert shown == {"reference": "azureml:scaler@latest", "name": "scaler", "version": "2", "type": "custom_model",
                     "path": models["2"].path}  # ops' GC finds the snapshot here, as for code_configuration.code
    snapshot = snapshot_of(owner, workspace, {"model/weight.txt": b"9"})
    registry.model_create(user=owner, workspace=workspace, data={"name": "scaler", "version": "3", "path": snapshot.path})

    kept = api.patch(f"{DEPLOYMENTS}blue/", {"model": shown, "description": "another field"}, format="json")
    assert kept.status_code == 200 and kept.json()["model"]["version"] == "2"  # a shown model stays where it was

    again = api.patch(f"{DEPLOYMENTS}blue/", {"model": "azureml:scaler@latest"}, format="json")
    assert again.status_code == 200 and again.json()["model"]["version"] == "3"  # written as text: resolved anew
    assert again.json()["provisioning_state"] == "Updating"
    assert OnlineDeployment.objects.get().generation == 3


def test_an_inline_upload_is_taken_with_its_name_and_version(api, owner, workspace):
    snapshot = snapshot_of(owner, workspace, {"model/weight.txt": b"2"})
    create_endpoint(api)
    body = local_deployment(model={"path": snapshot.path, "name": "mine", "version": 4})
    response = api.post(DEPLOYMENTS, body, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["model"] == {"path": snapshot.path, "type": "custom_model", "name": "mine", "version": "4"}


def other_workspace_model(owner) -> str:
    other = WorkspaceFactory(name="team-b", created_by=owner)
    snapshot = snapshot_of(owner, other, {"model/weight.txt": b"1"})
    registry.model_create(user=owner, workspace=other, data={"name": "scaler", "version": "7", "path": snapshot.path})
    return snapshot.path


@pytest.mark.parametrize("model, target, words", [
    ("azureml:nope:1", "model", "no version 1 of model 'nope'"),
    ("azureml:scaler:9", "model", "no version 9 of model 'scaler'"),
    ("azureml:scaler", "model", "names no version"),
    ("azureml:scаler:1", "model", "outside ASCII"),  # a Cyrillic 'а'
    ("azureml:" + "s" * 3000 + ":1", "model", "at most 2048"),
    ("azureml:../../etc:1", "model", "is not an asset name"),
    ("azureml://registries/azureml/models/scaler/versions/1", "model", "Registry 'azureml' is not available"),
    ("azureml://locations/westeurope/workspaces/team-b/models/scaler/versions/7", "model", "workspace 'team-b'"),
    ("/subscriptions/s/resourceGroups/g/providers/Microsoft.MachineLearningServices/workspaces/team-b/models/scaler/"
     "versions/7", "model", "workspace 'team-b'"),
    ("azureml://registries/r/environments/e/versions/1", "model", "environment asset where a model"),
    ("azureml://datastores/blobs/paths/model", "model", "no datastores"),
    ("azureml:triton:1", "model", "Triton"),
    ({"path": "azureml://uploads/" + "c" * 64}, "model.path", "not an upload of workspace 'team-a'"),
    ({"path": "azureml://uploads/nothex"}, "model.path", "is an upload (azureml://uploads/<sha256>)"),
    ({"path": "https://example.org/model.pkl"}, "model.path", "is an upload"),
    ({"reference": "azureml:scaler:1", "path": "azureml://uploads/" + "c" * 64, "extra": 1}, "model.extra", "not a field"),
])
def test_hostile_or_unusable_model_references_are_refused_and_nothing_is_written(api, owner, models, model, target,
                                                                                   words):
    other_workspace_model(owner)
    create_endpoint(api)
    before = state()
    response = api.post(DEPLOYMENTS, local_deployment(model=model), format="json")
    assert_refused(response, "InvalidDeployment", [target], before)
    assert words in response.json()["error"]["details"][0]["message"]


def test_a_nul_in_a_model_reference_is_refused_with_the_body(api, models):
    create_endpoint(api)
    before = state()
    response = api.post(DEPLOYMENTS, local_deployment(model="azureml:scaler:1\x00"), format="json")
    assert_refused(response, "InvalidBody", ["model"], before)


def test_another_workspaces_upload_is_refused_at_the_path(api, owner, workspace):
    path = other_workspace_model(owner)
    create_endpoint(api)
    before = state()
    response = api.post(DEPLOYMENTS, local_deployment(model={"path": path}), format="json")
    assert_refused(response, "InvalidDeployment", ["model.path"], before)


def test_an_archived_model_leaves_latest_but_runs_when_named_by_version(api, owner, workspace, models):
    for record in models.values():
        registry.asset_archive(user=owner, record=record)
    create_endpoint(api)
    before = state()
    refused = api.post(DEPLOYMENTS, local_deployment(model="azureml:scaler@latest"), format="json")
    assert_refused(refused, "InvalidDeployment", ["model"], before)
    assert "no version that is not archived" in refused.json()["error"]["message"]
    named = api.post(DEPLOYMENTS, local_deployment(model="azureml:scaler:1"), format="json")
    assert named.status_code == 201, named.content  # Azure ML's rule: an archived version still runs by its version


@pytest.mark.parametrize("setting, value", [("DOCKYARD_DEPLOYMENT_MODEL_MAX_BYTES", 0),
                                            ("DOCKYARD_DEPLOYMENT_MODEL_MAX_FILES", 0)])
@pytest.mark.parametrize("inline", [False, True])
def test_a_model_over_the_bounds_is_refused(api, settings, models, setting, value, inline):
    setattr(settings, setting, value)
    create_endpoint(api)
    before = state()
    model = {"path": models["1"].path} if inline else "azureml:scaler:1"
    response = api.post(DEPLOYMENTS, local_deployment(model=model), format="json")
    assert_refused(response, "InvalidDeployment", ["model.path" if inline else "model"], before)
    assert setting in response.json()["error"]["message"]


def test_a_local_mlflow_model_without_code_and_a_local_mount_path_are_refused(api, models):
    create_endpoint(api)
    before = state()
    no_code = api.post(DEPLOYMENTS, local_deployment(model="azureml:flow:1", code_configuration=None), format="json")
    assert_refused(no_code, "InvalidDeployment", ["model.type"], before)
    mounted = api.post(DEPLOYMENTS, local_deployment(model="azureml:scaler:1", model_mount_path="/var/models"),
                       format="json")
    assert_refused(mounted, "InvalidDeployment", ["model_mount_path"], before)


def test_a_registered_mlflow_model_keeps_the_seeds_resource_rule_on_kubernetes(api, k8s, models):
    create_endpoint(api, compute="azureml:k8s")
    before = state()
    small = api.post(DEPLOYMENTS, kube_deployment(model="azureml:flow:1", code_configuration=None, instance_type="small"),
                     format="json")
    assert_refused(small, "InvalidDeployment", ["instance_type"], before)
    assert "at least 2 CPU and 4 GB" in small.json()["error"]["message"]
    big = api.post(DEPLOYMENTS, kube_deployment(model="azureml:flow:1", code_configuration=None, instance_type="big"),
                   format="json")
    assert big.status_code == 201, big.content
    assert big.json()["model"]["type"] == "mlflow_model"


@pytest.mark.parametrize("files", [1, 300])
def test_a_registered_model_adds_two_queries_whatever_its_size(api, owner, workspace, files):
    """Resolution reads the model version and its snapshot's size and count, never the snapshot's file list."""
    snapshot = snapshot_of(owner, workspace, {f"model/part-{index}.bin": b"x" for index in range(files)})
    registry.model_create(user=owner, workspace=workspace, data={"name": "big", "version": "1", "path": snapshot.path})
    create_endpoint(api)
    with CaptureQueriesContext(connection) as plain:
        assert api.post(DEPLOYMENTS, local_deployment(name="plain"), format="json").status_code == 201
    with CaptureQueriesContext(connection) as with_model:
        response = api.post(DEPLOYMENTS, local_deployment(model="azureml:big:1"), format="json")
    assert response.status_code == 201, response.content
    assert len(with_model) == len(plain) + 2, [query["sql"] for query in with_model.captured_queries]
    with CaptureQueriesContext(connection) as patched:
        response = api.patch(f"{DEPLOYMENTS}blue/", {"model": "azureml:big@latest", "description": "x"}, format="json")
    assert response.status_code == 200, response.content
    assert len(patched) <= 12, [query["sql"] for query in patched.captured_queries]  # measured: 12
