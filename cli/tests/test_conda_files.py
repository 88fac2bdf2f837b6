"""`environment.conda_file: ./conda.yml` in job and deployment YAML: read beside the YAML file, as `environment create`
reads an environment's, and sent inline (the server reads no files)."""
import pytest

from cli.errors import InvalidInput
from cli.resources.asset import with_conda_file_read
from cli.tests.support import write_yaml
from jobs.models import Job

pytestmark = pytest.mark.django_db(transaction=True)
CONDA = {"name": "sklearn", "channels": ["conda-forge"], "dependencies": ["python=3.11", {"pip": ["scikit-learn"]}]}
JOB = {"type": "command", "command": "python -V",
       "compute": "local", "environment": {"conda_file": "env/conda.yml"}}


@pytest.fixture
def local(workspace):
    workspace.local_compute_enabled = True
    workspace.save(update_fields=["local_compute_enabled"])


def test_job_create_and_apply_read_the_conda_file_beside_the_yaml(dockyard, local, tmp_path, monkeypatch):
    write_yaml(tmp_path / "env" / "conda.yml", CONDA)
    path = write_yaml(tmp_path / "job.yml", {**JOB, "name": "conda-job"})
    monkeypatch.chdir("/")  # not the YAML's folder: the path is read relative to the YAML file
    created = dockyard("job", "create", "-f", str(path))
    assert created.exit_code == 0, created.stderr
    assert Job.objects.get(name="conda-job").spec["environment"] == {"conda_file": CONDA}
    again = dockyard("apply", "-f", str(path))
    assert again.exit_code == 0 and "job/conda-job unchanged" in again.stdout, again.stderr


def test_a_missing_conda_file_is_said_before_anything_is_sent(dockyard, local, tmp_path):
    result = dockyard("job", "create", "-f", str(write_yaml(tmp_path / "job.yml", JOB)))
    assert result.exit_code != 0 and "env/conda.yml does not exist" in result.stderr
    assert not Job.objects.exists()


def test_a_deployment_body_gets_its_conda_file_read_too(tmp_path):
    write_yaml(tmp_path / "conda.yml", CONDA)
    body = {"name": "blue", "environment": {"image": "python:3.11", "conda_file": "file:./conda.yml"}}
    with_conda_file_read(body, tmp_path)
    assert body["environment"]["conda_file"] == CONDA
    with pytest.raises(InvalidInput, match="not a YAML mapping"):
        (tmp_path / "list.yml").write_text("- numpy\n")
        with_conda_file_read({"environment": {"conda_file": "list.yml"}}, tmp_path)
