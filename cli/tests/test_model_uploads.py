"""A model folder as the CLI sends it: packed under its own name (Azure ML keeps `model/` inside AZUREML_MODEL_DIR),
by `dockyard model create` and for a deployment's inline `model.path` in `online-deployment create -f` and `apply -f`."""
import pytest

from assets.models import Model, Snapshot
from cli.resources import uploads
from cli.tests.support import write_yaml
from endpoints import tasks
from endpoints.models import OnlineDeployment
from endpoints.services import endpoint_create
from endpoints.tests.bodies import ADDER

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("local_compute")]
DEPLOYMENT = {"$schema": "https://azuremlschemas.azureedge.net/latest/kubernetesOnlineDeployment.schema.json",
              "name": "blue", "endpoint_name": "scaler", "code_configuration": {"code": str(ADDER), "scoring_script": "score.py"}}


@pytest.fixture(autouse=True)
def quiet_broker(monkeypatch, settings, tmp_path):
    """The records stay as the commands leave them (nothing reconciles them here)."""
    settings.DOCKYARD_DEPLOYMENT_DIR = tmp_path / "deployments"
    monkeypatch.setattr(tasks.reconcile_endpoint, "delay", lambda *args, **kwargs: None)
    monkeypatch.setattr(tasks.reconcile_deployment, "delay", lambda *args, **kwargs: None)


@pytest.fixture
def model_folder(tmp_path):
    """Azure ML's example layout: `model-1/model/sklearn_regression_model.pkl`, the YAML in `endpoints/`."""
    folder = tmp_path / "model-1" / "model"
    folder.mkdir(parents=True)
    (folder / "sklearn_regression_model.pkl").write_bytes(b"weights")
    (tmp_path / "endpoints").mkdir()
    return folder


def snapshot_paths(reference: str) -> list[str]:
    snapshot = Snapshot.objects.get(sha256=reference.rsplit("/", 1)[-1])
    return [row[0] for row in snapshot.files]


def test_a_model_folder_is_packed_under_its_own_name_and_a_file_as_itself(model_folder):
    assert [item.path for item in uploads.pack(model_folder, named=True).files] == ["model/sklearn_regression_model.pkl"]
    assert [item.path for item in uploads.pack(model_folder).files] == ["sklearn_regression_model.pkl"]  # code: as is
    single = model_folder / "sklearn_regression_model.pkl"
    assert [item.path for item in uploads.pack(single, named=True).files] == ["sklearn_regression_model.pkl"]
    assert uploads.pack(model_folder / ".." / "model" / "", named=True).sha256 == uploads.pack(model_folder, named=True).sha256


def test_model_create_keeps_the_folders_name(dockyard, model_folder, tmp_path):
    body = {"name": "regression", "version": 1, "path": "../model-1/model/"}
    result = dockyard("model", "create", "-f", str(write_yaml(tmp_path / "endpoints" / "model.yml", body)))
    assert result.exit_code == 0, result.stderr
    assert snapshot_paths(Model.objects.get().path) == ["model/sklearn_regression_model.pkl"]


def test_online_deployment_create_uploads_an_inline_model_path(dockyard, owner, workspace, model_folder, tmp_path):
    endpoint_create(user=owner, workspace=workspace, data={"name": "scaler", "compute": "local"})
    path = write_yaml(tmp_path / "endpoints" / "blue.yml", {**DEPLOYMENT, "model": {"path": "../model-1/model/"}})

    created = dockyard("online-deployment", "create", "-f", str(path), "--no-wait")

    assert created.exit_code == 0, created.stderr
    model = OnlineDeployment.objects.get(name="blue").spec["model"]
    assert model["path"] == uploads.local_reference(model_folder, named=True)
    assert snapshot_paths(model["path"]) == ["model/sklearn_regression_model.pkl"]


def test_apply_uploads_an_inline_model_once_and_a_dry_run_sends_nothing(dockyard, owner, workspace, model_folder,
                                                                         tmp_path):
    endpoint_create(user=owner, workspace=workspace, data={"name": "scaler", "compute": "local"})
    path = write_yaml(tmp_path / "endpoints" / "blue.yml", {**DEPLOYMENT, "model": {"path": "../model-1/model"}})

    dry = dockyard("apply", "-f", str(path), "--dry-run")
    assert dry.exit_code == 0, dry.stderr
    assert not Snapshot.objects.exists()

    first = dockyard("apply", "-f", str(path))
    again = dockyard("apply", "-f", str(path))

    assert first.exit_code == 0, first.stderr
    assert first.stdout.splitlines() == ["online-deployment/scaler/blue created"]
    assert again.stdout.splitlines() == ["online-deployment/scaler/blue unchanged"]
    assert "not uploaded" in again.stderr
    assert OnlineDeployment.objects.get().spec["model"]["path"] == uploads.local_reference(model_folder, named=True)


def test_a_registered_model_reference_is_sent_as_written(dockyard, owner, workspace, model_folder, tmp_path):
    assert dockyard("model", "create", "-f", str(write_yaml(tmp_path / "m.yml", {
        "name": "regression", "version": 1, "path": str(model_folder)}))).exit_code == 0
    endpoint_create(user=owner, workspace=workspace, data={"name": "scaler", "compute": "local"})
    path = write_yaml(tmp_path / "endpoints" / "blue.yml", {**DEPLOYMENT, "model": "azureml:regression@latest"})

    first = dockyard("apply", "-f", str(path))
    again = dockyard("apply", "-f", str(path), "--dry-run")

    assert first.exit_code == 0, first.stderr
    assert OnlineDeployment.objects.get().spec["model"]["version"] == "1"
    assert again.stdout.splitlines() == ["online-deployment/scaler/blue unchanged (dry run)"]
