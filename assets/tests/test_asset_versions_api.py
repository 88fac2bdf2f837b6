"""Environments, models and data over the API (API.md): register from YAML or JSON, versions, @latest, archive, 409."""
import pytest
import yaml

from assets.models import Data, Environment, Model
from assets.tests.support import WS, post_archive, targz
from tests.support import assert_error
from workspaces.models import AuditEvent

ENV = {"name": "sklearn-env", "version": "1", "image": "python:3.11-slim", "description": "for training",
       "tags": {"team": "a"}}
pytestmark = pytest.mark.usefixtures("workspace")
URL = "https://example.org/data/iris.csv"


def uploaded(api, files=None, workspace: str = WS) -> str:
    """A folder uploaded to the workspace: its azureml://uploads/<sha256> path."""
    return post_archive(api, targz(files or {"model.pkl": b"weights"}), workspace=workspace).json()["path"]


def test_an_environment_is_registered_from_yaml_and_shown_by_version(owner_api):
    body = yaml.safe_dump({**ENV, "conda_file": {"channels": ["conda-forge"], "dependencies": ["python=3.11"]}})
    created = owner_api.post(f"{WS}/environments/", body, content_type="application/yaml")
    assert created.status_code == 201, created.content
    shown = owner_api.get(f"{WS}/environments/sklearn-env/versions/1/")
    assert shown.status_code == 200 and shown["ETag"]
    data = shown.json()
    assert {key: data[key] for key in ("name", "version", "image", "description", "tags", "archived", "created_by")} == {
        "name": "sklearn-env", "version": "1", "image": "python:3.11-slim", "description": "for training",
        "tags": {"team": "a"}, "archived": False, "created_by": "olivia"}
    assert data["conda_file"]["channels"] == ["conda-forge"]
    assert AuditEvent.objects.filter(target_type="environment", target_name="sklearn-env:1").exists()


def test_the_same_name_and_version_again_is_a_conflict(owner_api):
    assert owner_api.post(f"{WS}/environments/", ENV, format="json").status_code == 201
    again = owner_api.post(f"{WS}/environments/", {**ENV, "image": "python:3.12"}, format="json")
    assert_error(again, 409, "Conflict")
    assert Environment.objects.get().image == "python:3.11-slim"


def test_a_version_left_out_is_the_next_whole_number(owner_api):
    for _ in range(2):
        owner_api.post(f"{WS}/environments/", {**ENV, "version": None}, format="json")
    assert sorted(Environment.objects.values_list("version", flat=True)) == ["1", "2"]


def test_latest_is_the_highest_version_not_archived_numbers_compared_as_numbers(owner_api):
    for version in ("2", "10", "9"):
        owner_api.post(f"{WS}/environments/", {**ENV, "version": version, "image": f"img:{version}"}, format="json")
    assert owner_api.get(f"{WS}/environments/sklearn-env/versions/latest/").json()["version"] == "10"
    assert owner_api.delete(f"{WS}/environments/sklearn-env/versions/10/").status_code == 204
    assert owner_api.delete(f"{WS}/environments/sklearn-env/versions/10/").status_code == 204  # again: still archived
    assert owner_api.get(f"{WS}/environments/sklearn-env/versions/latest/").json()["version"] == "9"
    # an archived version is still shown by its number
    assert owner_api.get(f"{WS}/environments/sklearn-env/versions/10/").json()["archived"] is True


@pytest.mark.parametrize("versions, latest", [
    (["1.9", "1.10", "1.2"], "1.10"), (["0.0.1-preview", "0.0.2"], "0.0.2"), (["1", "1.0"], "1.0"),
    (["2024.01.05", "2024.1.4"], "2024.01.05"), (["a", "B", "c"], "c"),
])
def test_latest_in_the_database_follows_the_order_of_versions(owner_api, versions, latest):
    for version in versions:
        assert owner_api.post(f"{WS}/environments/", {**ENV, "version": version}, format="json").status_code == 201
    assert owner_api.get(f"{WS}/environments/sklearn-env/versions/latest/").json()["version"] == latest
    assert owner_api.get(f"{WS}/environments/").json()["results"][0]["version"] == latest


def test_the_list_shows_the_latest_of_each_name_or_every_version_of_one(owner_api):
    for name, version in (("a", "1"), ("a", "3"), ("b", "1"), ("a", "2")):
        owner_api.post(f"{WS}/environments/", {**ENV, "name": name, "version": version}, format="json")
    listed = owner_api.get(f"{WS}/environments/").json()
    assert listed["count"] == 2
    assert [(row["name"], row["version"]) for row in listed["results"]] == [("a", "3"), ("b", "1")]
    versions = owner_api.get(f"{WS}/environments/?name=a").json()["results"]
    assert [row["version"] for row in versions] == ["3", "2", "1"]
    owner_api.delete(f"{WS}/environments/a/versions/3/")
    assert [row["version"] for row in owner_api.get(f"{WS}/environments/").json()["results"]] == ["2", "1"]
    assert [row["version"] for row in owner_api.get(f"{WS}/environments/?archived=true").json()["results"]] == ["3"]


def test_archiving_by_latest_is_refused(owner_api):
    owner_api.post(f"{WS}/environments/", ENV, format="json")
    assert_error(owner_api.delete(f"{WS}/environments/sklearn-env/versions/latest/"), 400, "InvalidVersion")


def test_restore_brings_an_archived_version_back_to_latest(owner_api):
    for version in ("1", "2"):
        owner_api.post(f"{WS}/environments/", {**ENV, "version": version}, format="json")
    owner_api.delete(f"{WS}/environments/sklearn-env/versions/2/")
    restored = owner_api.post(f"{WS}/environments/sklearn-env/versions/2/restore/")
    assert restored.status_code == 200 and restored.json()["archived"] is False
    assert owner_api.get(f"{WS}/environments/sklearn-env/versions/latest/").json()["version"] == "2"
    assert owner_api.post(f"{WS}/environments/sklearn-env/versions/2/restore/").status_code == 200  # again: no change
    assert_error(owner_api.post(f"{WS}/environments/sklearn-env/versions/latest/restore/"), 400, "InvalidVersion")
    assert owner_api.post(f"{WS}/environments/sklearn-env/versions/7/restore/").status_code == 404


def test_a_stale_if_match_does_not_archive(owner_api):
    owner_api.post(f"{WS}/environments/", ENV, format="json")
    response = owner_api.delete(f"{WS}/environments/sklearn-env/versions/1/", HTTP_IF_MATCH='"stale"')
    assert_error(response, 412, "PreconditionFailed")
    assert Environment.objects.get().archived is False


def test_a_model_is_registered_from_an_upload_of_the_workspace(owner_api):
    path = uploaded(owner_api)
    created = owner_api.post(f"{WS}/models/", {"name": "my-model", "version": 1, "path": path, "type": "mlflow_model"},
                             format="json")
    assert created.status_code == 201, created.content
    assert {key: created.json()[key] for key in ("name", "version", "path", "type")} == {
        "name": "my-model", "version": "1", "path": path, "type": "mlflow_model"}
    assert Model.objects.get().snapshot.path == path
    assert owner_api.get(f"{WS}/models/my-model/versions/1/").json()["path"] == path


@pytest.mark.parametrize("path, words", [
    ("azureml://uploads/" + "a" * 64, "is not an upload of workspace"),
    ("./model", "is a path on your machine"),
    ("../../etc/passwd", "leaves the YAML file's folder"),
    ("/etc/passwd", "is absolute"),
    ("azureml://jobs/j1/outputs/artifacts/paths/model/", "has no job 'j1'"),
    ("https://example.org/model.pkl", "URLs"),
    ("azureml://uploads/../../x", ""),
])
def test_a_model_path_that_is_not_an_upload_here_is_refused_at_path(owner_api, path, words):
    response = owner_api.post(f"{WS}/models/", {"name": "m", "version": 1, "path": path}, format="json")
    assert_error(response, 400, "InvalidModel")
    assert response.json()["error"]["details"][0]["target"] == "path"
    assert words in response.json()["error"]["message"]
    assert not Model.objects.exists()


def test_an_upload_of_another_workspace_is_not_this_ones(owner_api, make_user):
    from conftest import client_for
    from workspaces.services import workspace_create

    bob = make_user("bob")
    workspace_create(user=bob, name="team-b")
    theirs = uploaded(client_for(bob), {"secret.bin": b"theirs"}, workspace="/api/v1/workspaces/team-b")
    response = owner_api.post(f"{WS}/models/", {"name": "m", "version": 1, "path": theirs}, format="json")
    assert_error(response, 400, "InvalidModel")


def test_data_is_registered_from_an_upload_or_an_https_url(owner_api):
    path = uploaded(owner_api, {"iris.csv": b"a,b\n1,2\n"})
    folder = owner_api.post(f"{WS}/data/", {"name": "iris", "version": "1", "type": "uri_folder", "path": path},
                            format="json")
    assert folder.status_code == 201, folder.content
    remote = owner_api.post(f"{WS}/data/", {"name": "iris", "version": "2", "type": "uri_file", "path": URL},
                            format="json")
    assert remote.status_code == 201, remote.content
    assert remote.json()["path"] == URL and Data.objects.get(version="2").snapshot is None
    assert owner_api.get(f"{WS}/data/iris/versions/latest/").json()["version"] == "2"


@pytest.mark.parametrize("path", ["s3://bucket/x", "http://example.org/x", "https://user:pw@example.org/x",
                                  "azureml://datastores/workspaceblobstore/paths/x"])
def test_data_paths_other_than_uploads_and_https_are_refused(owner_api, path):
    response = owner_api.post(f"{WS}/data/", {"name": "d", "version": "1", "path": path}, format="json")
    assert_error(response, 400, "InvalidData")
    assert response.json()["error"]["details"][0]["target"] == "path"
    assert not Data.objects.exists()


def test_an_unknown_version_is_404(owner_api):
    assert_error(owner_api.get(f"{WS}/models/nope/versions/1/"), 404, "NotFound")
    assert_error(owner_api.get(f"{WS}/data/nope/versions/latest/"), 404, "NotFound")


@pytest.mark.parametrize("path, status", [
    ("environments/a%00b/versions/1/", 404), ("environments/a/versions/1%00/", 404), ("models/..%2F..%2Fx/versions/1/", 404),
    ("models/?name=a%00b", 400), ("data/?archived=maybe", 400),
])
def test_odd_names_in_the_url_are_4xx_not_500(owner_api, path, status):
    response = owner_api.get(f"{WS}/{path}")
    assert response.status_code == status, response.content
