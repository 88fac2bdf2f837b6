"""The CLI and job data: a data input's local path uploaded like `code:` (relative to the YAML file), and `job download`
with Azure ML's flags (--name, --output-name, --all, --download-path), never writing outside the folder."""
import os

import pytest

from assets import folders
from assets.models import Snapshot
from cli.tests.support import write_yaml
from jobs.models import Job
from jobs.outputs import record_outputs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("local_compute")]


def test_local_input_paths_are_uploaded_and_named_as_uploads(dockyard, tmp_path):
    project = tmp_path / "project"
    (project / "data" / "sub").mkdir(parents=True)
    (project / "data" / "a.csv").write_text("1\n")
    (project / "data" / "sub" / "b.csv").write_text("2\n")
    (project / "iris.csv").write_text("sepal\n")
    path = write_yaml(project / "job.yml", {
        "type": "command", "name": "reads", "compute": "local", "command": "ls ${{inputs.folder}} ${{inputs.table}}",
        "inputs": {"folder": {"type": "uri_folder", "path": "./data"},
                   "table": {"type": "uri_file", "path": "iris.csv", "mode": "download"},
                   "written": {"type": "uri_folder", "path": "as/written", "mode": "direct"},
                   "rate": 0.1}})

    result = dockyard("job", "create", "-f", str(path))

    assert result.exit_code == 0, (result.stdout, result.stderr)
    job = Job.objects.get(name="reads")
    inputs = job.spec["inputs"]
    assert inputs["folder"]["path"].startswith("azureml://uploads/")
    assert inputs["table"]["path"].startswith("azureml://uploads/")
    assert inputs["written"]["path"] == "as/written" and inputs["rate"] == 0.1
    folder = Snapshot.objects.get(sha256=job.resolved_inputs["folder"]["snapshot"])
    assert [row[0] for row in folder.files] == ["a.csv", "sub/b.csv"]
    assert job.resolved_inputs["table"]["file"] == "iris.csv"


@pytest.fixture
def finished(owner_api, workspace, tmp_path) -> Job:
    """A completed job whose outputs are in storage: ./outputs/metrics.json and the declared output model/."""
    response = owner_api.post("/api/v1/workspaces/team-a/jobs/", {
        "name": "trained", "compute": "local", "command": "echo", "outputs": {"model": {"type": "uri_folder"}}},
        format="json")
    assert response.status_code == 201, response.json()
    outputs = tmp_path / "outputs"
    (outputs / "model" / "deep").mkdir(parents=True)
    (outputs / "metrics.json").write_text("{}")
    (outputs / "model" / "deep" / "w.bin").write_bytes(b"\0\1\2")
    fd = os.open(outputs, os.O_RDONLY | os.O_DIRECTORY)
    try:
        snapshot = folders.collect_folder(workspace, fd).snapshot
    finally:
        os.close(fd)
    job = Job.objects.get(name="trained")
    Job.objects.filter(pk=job.pk).update(status="Completed", exit_code=0)
    record_outputs(job, snapshot)
    return job


def test_download_one_named_output_with_azure_ml_flags(dockyard, finished, tmp_path):
    result = dockyard("job", "download", "--name", "trained", "--output-name", "model",
                      "--download-path", str(tmp_path / "dl"))
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "dl" / "named-outputs" / "model" / "deep" / "w.bin").read_bytes() == b"\0\1\2"
    assert not (tmp_path / "dl" / "named-outputs" / "model" / "metrics.json").exists()
    assert "model/deep/w.bin →" in result.stderr  # progress on stderr


def test_download_all_saves_the_log_and_every_output(dockyard, finished, tmp_path):
    result = dockyard("job", "download", "-n", "trained", "--all", "-p", str(tmp_path / "dl"))
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / "dl" / "trained.log").exists()
    assert (tmp_path / "dl" / "outputs" / "metrics.json").read_text() == "{}"
    assert (tmp_path / "dl" / "outputs" / "model" / "deep" / "w.bin").exists()


def test_an_unknown_output_name_or_two_names_are_refused(dockyard, finished, tmp_path):
    result = dockyard("job", "download", "trained", "--output-name", "nothing", "-p", str(tmp_path / "dl"))
    assert result.exit_code != 0 and "no files in an output named 'nothing'" in result.stderr
    result = dockyard("job", "download", "trained", "--name", "other")
    assert result.exit_code != 0 and "Two job names" in result.stderr


@pytest.mark.parametrize("path", ["model/../../escape", "model//x", "/etc/passwd"])
def test_a_hostile_listing_writes_nothing_outside_the_folder(path, tmp_path):
    from cli.errors import InvalidInput
    from cli.resources.job_download import _of_output, output_target

    [(row, inside)] = _of_output([{"path": path, "output": "model"}], "model", "j")
    with pytest.raises(InvalidInput):
        output_target(tmp_path, inside)
