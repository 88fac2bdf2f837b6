"""`dockyard environment|model|data …` and assets in `apply`, against a real Dockyard server (live_server)."""
import io
import json

import pytest

from assets.models import Data, Environment, Model
from assets.services import upload_create
from assets.tests.support import targz
from cli.resources.asset import DATA, ENVIRONMENT, MODEL, asset_kind, name_and_version
from cli.resources.routing import route_of
from cli.tests.support import write_yaml

pytestmark = pytest.mark.django_db(transaction=True)
SCHEMA = "https://azuremlschemas.azureedge.net/latest/{}.schema.json"
ENV = {"$schema": SCHEMA.format("environment"), "name": "sklearn-env", "version": "1", "image": "python:3.11-slim",
       "description": "Environment for training", "conda_file": "conda.yml"}
CONDA = {"name": "sklearn", "channels": ["conda-forge"], "dependencies": ["python=3.11", {"pip": ["scikit-learn"]}]}
URL = "https://azuremlexamples.blob.core.windows.net/datasets/iris.csv"


@pytest.fixture
def uploaded(owner, workspace) -> str:
    """A folder uploaded to team-a (as the API's uploads/ stores it): its azureml://uploads/ path."""
    snapshot, _ = upload_create(user=owner, workspace=workspace, body=io.BytesIO(targz({"model.pkl": b"weights"})),
                                content_type="application/gzip")
    return snapshot.path


def test_environment_create_reads_the_conda_file_beside_the_yaml(dockyard, tmp_path):
    write_yaml(tmp_path / "conda.yml", CONDA)
    result = dockyard("environment", "create", "-f", str(write_yaml(tmp_path / "env.yml", ENV)))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == "environment/sklearn-env:1 created"
    assert Environment.objects.get().conda_file == CONDA


def test_environment_list_show_and_archive(dockyard, tmp_path):
    write_yaml(tmp_path / "conda.yml", CONDA)
    for version in ("1", "2"):
        dockyard("environment", "create", "-f", str(write_yaml(tmp_path / "env.yml", ENV)), "--version", version)
    listed = dockyard("environment", "list")
    assert listed.exit_code == 0 and "sklearn-env" in listed.stdout and "python:3.11-slim" in listed.stdout
    assert [row["version"] for row in dockyard.json("environment", "list", "--name", "sklearn-env")] == ["2", "1"]
    assert dockyard.json("environment", "show", "sklearn-env@latest")["version"] == "2"
    assert dockyard.json("environment", "show", "sklearn-env", "--version", "1")["version"] == "1"
    archived = dockyard("environment", "archive", "sklearn-env", "--version", "2")
    assert archived.exit_code == 0 and archived.stdout.strip() == "environment/sklearn-env:2 archived"
    assert dockyard.json("environment", "show", "sklearn-env")["version"] == "1"
    assert [row["version"] for row in dockyard.json("environment", "list", "--archived")] == ["2"]
    restored = dockyard("environment", "restore", "sklearn-env", "--version", "2")
    assert restored.exit_code == 0 and restored.stdout.strip() == "environment/sklearn-env:2 restored"
    assert dockyard.json("environment", "show", "sklearn-env")["version"] == "2"
    missing = dockyard("environment", "restore", "sklearn-env", "--version", "9")
    assert missing.exit_code == 1 and "has no version 9" in missing.stderr


def test_show_of_a_missing_version_says_which(dockyard):
    result = dockyard("model", "show", "nope", "--version", "3")
    assert result.exit_code == 1 and "Model 'nope' has no version 3 in workspace 'team-a'" in result.stderr


def test_model_create_with_an_uploaded_path(dockyard, tmp_path, uploaded):
    body = {"$schema": SCHEMA.format("model"), "name": "my-model", "version": 1, "path": uploaded, "type": "mlflow_model"}
    result = dockyard("model", "create", "-f", str(write_yaml(tmp_path / "model.yml", body)))
    assert result.exit_code == 0, result.stderr
    assert Model.objects.get().path == uploaded
    assert dockyard.json("model", "show", "my-model:1")["type"] == "mlflow_model"


def test_data_create_with_an_https_url_and_the_apis_refusal_of_other_urls(dockyard, tmp_path):
    body = {"$schema": SCHEMA.format("data"), "name": "iris", "version": "1", "type": "uri_file", "path": URL}
    assert dockyard("data", "create", "-f", str(write_yaml(tmp_path / "data.yml", body))).exit_code == 0
    assert Data.objects.get().path == URL
    refused = dockyard("data", "create", "-f", str(write_yaml(tmp_path / "data.yml", {**body, "version": "2",
                                                                                      "path": "s3://bucket/iris.csv"})))
    assert refused.exit_code == 1 and "https://" in refused.stderr


def test_a_local_path_needs_the_upload_support(dockyard, tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def without_uploads(name, *args, **kwargs):
        if name.endswith("uploads") or (args and len(args) > 2 and "upload_local_path" in (args[2] or ())):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_uploads)
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "model.pkl").write_bytes(b"w")
    body = {"name": "my-model", "version": 1, "path": "model", "type": "custom_model"}
    result = dockyard("model", "create", "-f", str(write_yaml(tmp_path / "model.yml", body)))
    assert result.exit_code == 1 and "local paths need the upload support" in result.stderr.lower()
    assert not Model.objects.exists()


def test_create_refuses_a_file_of_another_kind(dockyard, tmp_path):
    result = dockyard("model", "create", "-f", str(write_yaml(tmp_path / "env.yml", ENV)))
    assert result.exit_code == 1 and "dockyard environment create" in result.stderr


def test_apply_registers_each_asset_once(dockyard, tmp_path, uploaded):
    write_yaml(tmp_path / "conda.yml", CONDA)
    documents = (ENV, {"name": "m", "version": 1, "path": uploaded, "type": "custom_model"},
                 {"name": "iris", "version": "1", "type": "uri_file", "path": URL})
    path = write_yaml(tmp_path / "assets.yml", *documents)
    first = dockyard("apply", "-f", str(path))
    assert first.exit_code == 0, first.stderr
    assert first.stdout.splitlines() == ["environment/sklearn-env:1 created", "model/m:1 created", "data/iris:1 created"]
    again = dockyard("apply", "-f", str(path))
    assert again.stdout.splitlines() == ["environment/sklearn-env:1 unchanged", "model/m:1 unchanged",
                                         "data/iris:1 unchanged"]
    changed = dockyard("apply", "-f", str(write_yaml(tmp_path / "env.yml", {**ENV, "image": "python:3.12"})))
    assert changed.exit_code == 1 and "versions are never replaced" in changed.stderr
    assert json.loads(dockyard("apply", "-f", str(path), "-o", "json").stdout)[0]["action"] == "unchanged"


@pytest.mark.parametrize("body, kind", [
    ({"$schema": SCHEMA.format("environment"), "name": "e"}, ENVIRONMENT),
    ({"name": "e", "image": "python:3.11"}, ENVIRONMENT),
    ({"name": "e", "build": {"path": "docker"}}, ENVIRONMENT),
    ({"$schema": SCHEMA.format("model"), "name": "m", "path": "x"}, MODEL),
    ({"name": "m", "path": "model", "type": "mlflow_model"}, MODEL),
    ({"$schema": SCHEMA.format("data"), "name": "d", "path": "x"}, DATA),
    ({"name": "d", "path": "x", "type": "uri_folder"}, DATA),
    ({"command": "python train.py", "environment": {"image": "python"}, "type": "command"}, None),
    ({"name": "blue", "endpoint_name": "ep", "model": {"path": "m"}, "environment": {"image": "x"}}, None),
    ({"name": "k8s", "type": "kubernetes"}, None),
    ({"name": "ep", "compute": "azureml:k8s"}, None),
])
def test_apply_tells_assets_from_other_documents(body, kind):
    assert asset_kind(body) is kind
    if kind is not None:
        assert route_of(body) == kind.noun


@pytest.mark.parametrize("text, version, expected", [
    ("env", None, ("env", "latest")), ("env@latest", None, ("env", "latest")), ("env:3", None, ("env", "3")),
    ("env", "2", ("env", "2")), ("env:2", "2", ("env", "2")),
])
def test_names_and_versions(text, version, expected):
    assert name_and_version(text, version) == expected
