"""A job's data inputs resolved at submit (`Job.resolved_inputs`): uploads, Data and Model assets, other jobs' outputs
and https files; everything else refused at `inputs.<name>` with the reason, nothing written."""
import pytest

from assets.models import Snapshot
from assets.tests.support import post_archive, targz
from jobs.models import Job
from jobs.outputs import record_outputs
from jobs.tests.support import set_state
from workspaces.services import workspace_create

pytestmark = pytest.mark.usefixtures("local_compute")
URL = "/api/v1/workspaces/team-a/jobs/"


def uploaded(api, files: dict[str, bytes], workspace: str = "team-a") -> str:
    response = post_archive(api, targz(files), workspace=f"/api/v1/workspaces/{workspace}")
    assert response.status_code in (200, 201), response.json()
    return response.json()["path"]


def post(api, inputs: dict, name: str = "reader", **fields):
    body = {"name": name, "compute": "local", "command": "ls ${{inputs.data}}", "inputs": inputs, **fields}
    return api.post(URL, body, format="json")


def resolved(api, data: dict) -> dict:
    response = post(api, {"data": data})
    assert response.status_code == 201, response.json()
    return Job.objects.get(name="reader").resolved_inputs


def refused(api, data: dict, words: str) -> str:
    response = post(api, {"data": data})
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert [row["target"] for row in error["details"]] == ["inputs.data"], error
    assert words in error["message"], error["message"]
    assert not Job.objects.exists()
    return error["message"]


def test_an_upload_is_fetched_as_a_folder(owner_api):
    path = uploaded(owner_api, {"a.txt": b"a", "sub/b.txt": b"b"})
    assert resolved(owner_api, {"type": "uri_folder", "path": path}) == {
        "data": {"snapshot": path.rsplit("/", 1)[-1], "file": None}}


def test_a_uri_file_upload_names_its_one_file(owner_api):
    path = uploaded(owner_api, {"train.csv": b"x,y\n"})
    assert resolved(owner_api, {"type": "uri_file", "path": path, "mode": "download"})["data"]["file"] == "train.csv"


def test_a_uri_file_upload_of_two_files_is_refused(owner_api):
    path = uploaded(owner_api, {"a.csv": b"1", "b.csv": b"2"})
    refused(owner_api, {"type": "uri_file", "path": path}, "holds 2")


def test_another_workspaces_upload_is_refused(owner_api, owner):
    workspace_create(user=owner, name="team-b", display_name="B")
    path = uploaded(owner_api, {"secret.txt": b"theirs"}, workspace="team-b")
    refused(owner_api, {"type": "uri_folder", "path": path}, "is not an upload of workspace 'team-a'")


def test_data_assets_by_version_and_latest(owner_api):
    path = uploaded(owner_api, {"iris.csv": b"1,2\n"})
    for version in ("1", "2"):
        response = owner_api.post("/api/v1/workspaces/team-a/data/",
                                  {"name": "iris", "version": version, "type": "uri_file", "path": path}, format="json")
        assert response.status_code == 201, response.json()
    sha256 = path.rsplit("/", 1)[-1]
    assert resolved(owner_api, {"type": "uri_file", "path": "azureml:iris@latest"}) == {
        "data": {"snapshot": sha256, "file": "iris.csv"}}
    Job.objects.all().delete()
    assert resolved(owner_api, {"type": "uri_folder", "path": "azureml:iris:1"})["data"] == {"snapshot": sha256,
                                                                                            "file": None}


def test_a_data_asset_at_a_url_is_fetched_from_it(owner_api):
    response = owner_api.post("/api/v1/workspaces/team-a/data/", {"name": "titanic", "version": "1", "type": "uri_file",
                              "path": "https://example.org/data/titanic.csv"}, format="json")
    assert response.status_code == 201, response.json()
    assert resolved(owner_api, {"type": "uri_file", "path": "azureml:titanic:1"})["data"] == {
        "url": "https://example.org/data/titanic.csv", "file": "titanic.csv"}


def test_a_model_input_names_a_model(owner_api):
    path = uploaded(owner_api, {"MLmodel": b"flavors: {}\n"})
    response = owner_api.post("/api/v1/workspaces/team-a/models/", {"name": "clf", "version": 3, "path": path,
                                                                    "type": "mlflow_model"}, format="json")
    assert response.status_code == 201, response.json()
    assert resolved(owner_api, {"type": "mlflow_model", "path": "azureml:clf:3"})["data"]["snapshot"] == \
        path.rsplit("/", 1)[-1]


@pytest.mark.parametrize("reference, words", [
    ("azureml:nothing:1", "has no version 1 of data 'nothing'"),
    ("azureml://registries/azureml/data/iris/versions/1", "Registry 'azureml' is not available"),
    ("azureml:/subscriptions/s/resourceGroups/g/providers/Microsoft.MachineLearningServices/workspaces/other/data/d/"
     "versions/1", "names workspace 'other'"),
])
def test_unknown_asset_references_are_refused(owner_api, reference, words):
    refused(owner_api, {"type": "uri_folder", "path": reference}, words)


def test_an_https_file_is_a_url_input(owner_api):
    assert resolved(owner_api, {"type": "uri_file", "path": "https://example.org/x/iris%20data.csv?sv=1"})["data"] == {
        "url": "https://example.org/x/iris%20data.csv?sv=1", "file": "iris data.csv"}


def test_a_wasbs_file_is_fetched_from_its_public_https_address(owner_api):
    data = {"type": "uri_file", "path": "wasbs://datasets@azuremlexamples.blob.core.windows.net/titanic.csv"}
    assert resolved(owner_api, data)["data"] == {
        "url": "https://azuremlexamples.blob.core.windows.net/datasets/titanic.csv", "file": "titanic.csv"}


@pytest.mark.parametrize("data, words", [
    ({"type": "uri_folder", "path": "https://example.org/folder/"}, "no listing over https"),
    ({"type": "uri_folder", "path": "wasbs://datasets@azuremlexamples.blob.core.windows.net/cifar/"}, "no listing"),
    ({"type": "uri_folder", "path": "abfss://fs@acct.dfs.core.windows.net/x"}, "Upload the folder"),
    ({"type": "uri_file", "path": "abfss://fs@acct.dfs.core.windows.net/x.csv"}, "Upload the file"),
    ({"type": "uri_file", "path": "http://example.org/x.csv"}, "https://"),
    ({"type": "uri_folder", "path": "azureml://datastores/workspaceblobstore/paths/cifar/"}, "no datastores"),
    ({"type": "uri_folder", "path": "azureml://subscriptions/s/resourcegroups/g/workspaces/w/datastores/d/paths/p"},
     "no datastores"),
    ({"type": "uri_folder", "path": "./data"}, "upload it"),
    ({"path": "data"}, "upload it"),
    ({"type": "uri_file", "path": "https://example.org/"}, "must name a file"),
    ({"type": "uri_file", "path": "https://example.org/%2e%2e"}, "must name a file"),
    ({"type": "uri_file", "path": "https://example.org/a%00b"}, "must name a file"),
    ({"type": "uri_file", "path": "https://user:pw@example.org/a.csv"}, "without credentials"),
    ({"type": "uri_file", "path": "wasbs://c@evil.example.org/a.csv"}, "wasbs://<container>@<account>"),
])
def test_what_cannot_be_fetched_is_refused_with_the_reason(owner_api, data, words):
    refused(owner_api, data, words)


def test_direct_mode_and_host_paths_are_given_as_written(owner_api):
    response = post(owner_api, {"data": {"type": "uri_folder", "path": "data", "mode": "direct"},
                                "host": {"type": "uri_folder", "path": "/srv/shared"}},
                    command="ls ${{inputs.data}} ${{inputs.host}}")
    assert response.status_code == 201, response.json()
    assert Job.objects.get(name="reader").resolved_inputs == {}


# another job's outputs


@pytest.fixture
def trained(owner_api, tmp_path) -> Job:
    """A completed job whose outputs (./outputs with a declared `model`) are kept in storage."""
    response = owner_api.post(URL, {"name": "train", "compute": "local", "command": "echo",
                                    "outputs": {"model": {"type": "uri_folder"}}}, format="json")
    assert response.status_code == 201, response.json()
    path = uploaded(owner_api, {"model/MLmodel": b"m", "model/weights.bin": b"w", "metrics.json": b"{}"})
    job = set_state("train", status="Completed", end_time="2026-01-01T00:00:00Z")
    record_outputs(job, Snapshot.objects.get(sha256=path.rsplit("/", 1)[-1]))
    return job


@pytest.mark.parametrize("reference, files", [
    ("azureml://jobs/train/outputs/model", ["MLmodel", "weights.bin"]),
    ("azureml://jobs/train/outputs/model/paths/weights.bin", ["weights.bin"]),
    ("azureml://jobs/train/outputs/default", ["metrics.json", "model/MLmodel", "model/weights.bin"]),
    ("azureml://jobs/train/outputs/artifacts/paths/outputs/model/", ["MLmodel", "weights.bin"]),
    ("azureml://jobs/train/outputs/artifacts/paths/metrics.json", ["metrics.json"]),
])
def test_another_jobs_output_is_its_subtree(owner_api, trained, reference, files):
    data = resolved(owner_api, {"type": "uri_folder", "path": reference})["data"]
    snapshot = Snapshot.objects.get(sha256=data["snapshot"])
    assert [row[0] for row in snapshot.files] == files


@pytest.mark.parametrize("reference, words", [
    ("azureml://jobs/train/outputs/nothing", "has no output 'nothing'"),
    ("azureml://jobs/train/outputs/model/paths/missing", "left nothing at outputs/model/missing"),
    ("azureml://jobs/ghost/outputs/model", "has no job 'ghost'"),
    ("azureml://jobs/train/outputs/model/paths/../../etc", "leaves the output's folder"),
])
def test_job_outputs_that_are_not_there_are_refused(owner_api, trained, reference, words):
    response = post(owner_api, {"data": {"type": "uri_folder", "path": reference}})
    assert response.status_code == 400 and words in response.json()["error"]["message"], response.json()


def test_a_job_that_has_not_ended_has_no_outputs_to_give(owner_api, trained):
    set_state("train", status="Running", end_time=None)
    response = post(owner_api, {"data": {"type": "uri_folder", "path": "azureml://jobs/train/outputs/model"}})
    assert response.status_code == 400 and "has not ended yet" in response.json()["error"]["message"]


def test_another_workspaces_job_is_not_found(owner_api, owner, trained):
    other = workspace_create(user=owner, name="team-b", display_name="B")
    other.local_compute_enabled = True
    other.save(update_fields=["local_compute_enabled"])
    response = owner_api.post("/api/v1/workspaces/team-b/jobs/", {
        "name": "thief", "command": "ls ${{inputs.d}}", "compute": "local",
        "inputs": {"d": {"type": "uri_folder", "path": "azureml://jobs/train/outputs/model"}}}, format="json")
    assert response.status_code == 400
    assert "has no job 'train'" in response.json()["error"]["message"]
    assert not Job.objects.filter(name="thief").exists()


def test_a_model_registers_a_job_output_by_path(owner_api, trained):
    response = owner_api.post("/api/v1/workspaces/team-a/models/", {
        "name": "clf", "type": "mlflow_model", "path": "azureml://jobs/train/outputs/artifacts/paths/outputs/model/"},
        format="json")
    assert response.status_code == 201, response.json()
    snapshot = Snapshot.objects.get(sha256=response.json()["path"].rsplit("/", 1)[-1])
    assert [row[0] for row in snapshot.files] == ["MLmodel", "weights.bin"]
    response = owner_api.post("/api/v1/workspaces/team-a/data/", {
        "name": "metrics", "type": "uri_file", "path": "azureml://jobs/train/outputs/default/paths/metrics.json"},
        format="json")
    assert response.status_code == 201, response.json()


@pytest.mark.parametrize("path", [
    "data\0", "azureml://uploads/" + "../" * 30, "azureml://jobs/a\0/outputs/b", "azureml://jobs/t/outputs/m/paths/\0",
    "x" * 70000, "azureml:" + "a" * 3000 + ":1", "wasbs://c@a\0.blob.core.windows.net/x", "https://[::1/x",
    "azureml://uploads/" + "A" * 64,
])
def test_hostile_input_paths_are_400_and_write_nothing(owner_api, path):
    response = post(owner_api, {"data": {"type": "uri_file", "path": path}})
    assert response.status_code == 400, response.json()
    assert response.json()["error"]["details"][0]["target"].startswith("inputs.data")
    assert not Job.objects.exists()


@pytest.mark.parametrize("output", [{"name": "a\0b"}, {"name": "../x"}, {"name": "m", "version": "1\0"},
                                    {"name": "m", "version": True}, {"name": ["m"]}])
def test_hostile_output_names_are_400(owner_api, output):
    response = owner_api.post(URL, {"name": "w", "compute": "local", "command": "echo", "outputs": {"o": output}},
                              format="json")
    assert response.status_code == 400, response.json()
    assert not Job.objects.exists()


def test_a_url_with_a_port_that_is_not_a_number_is_refused(owner_api):
    refused(owner_api, {"type": "uri_file", "path": "https://example.org:http/a.csv"}, "https://<host>/<path>")


@pytest.mark.parametrize("count", [1, 10])
def test_resolving_inputs_takes_a_bounded_number_of_queries_per_input(owner_api, count, django_assert_max_num_queries):
    path = uploaded(owner_api, {"a.txt": b"a"})
    inputs = {f"d{index}": {"type": "uri_folder", "path": path} for index in range(count)}
    command = "ls " + " ".join(f"${{{{inputs.d{index}}}}}" for index in range(count))
    with django_assert_max_num_queries(8 + count):  # one lookup per upload
        response = post(owner_api, inputs, command=command)
    assert response.status_code == 201, response.json()
    assert len(Job.objects.get(name="reader").resolved_inputs) == count
