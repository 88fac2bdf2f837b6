"""Hostile or wrong conda files in a job body: a 400 in the error shape naming the field, and nothing written."""
import pytest

from jobs.models import Job
from jobs.tests.support import k8s  # noqa: F401 (a fixture: the attached compute `k8s`)
from tests.support import assert_error

URL = "/api/v1/workspaces/team-a/jobs/"


def body(conda) -> dict:
    return {"command": "python -V", "compute": "azureml:k8s", "environment": {"image": "python:3.11", "conda_file": conda}}


@pytest.mark.parametrize("conda, target", [
    pytest.param({"dependencies": ["numpy\0"]}, "environment.conda_file.dependencies.0", id="nul"),
    pytest.param({"dependencies": [{"pip": ["-r ../../etc/passwd"]}]}, "environment.conda_file.dependencies.0.pip.0",
                 id="pip-reads-a-file"),
    pytest.param({"dependencies": [{"pip": ["pkg @ file:///etc/shadow"]}]}, "environment.conda_file.dependencies.0.pip.0",
                 id="file-url"),
    pytest.param({"dependencies": [f"package{index}" for index in range(600)]}, "environment.conda_file",
                 id="too-many-entries"),
    pytest.param({"dependencies": [{"pip": [f"{'x' * 900}{index}" for index in range(100)]}]}, "environment.conda_file",
                 id="oversized"),
    pytest.param({"prefix": "/opt/conda"}, "environment.conda_file.prefix", id="prefix"),
    pytest.param("conda.yml", "environment.conda_file", id="a-path-the-server-cannot-read"),
    pytest.param([["deep"] * 3] * 3, "environment.conda_file", id="a-list"),
])
def test_bad_conda_files_are_400_and_write_nothing(owner_api, k8s, conda, target):  # noqa: F811
    response = owner_api.post(URL, body(conda), format="json")
    error = assert_error(response, 400, response.json()["error"]["code"])  # NUL: refused by the body parser already
    assert error["code"] in ("InvalidJob", "InvalidBody") and target in [row["target"] for row in error["details"]], error
    assert not Job.objects.exists()


def test_an_aliased_yaml_conda_file_is_refused_before_it_is_read(owner_api, k8s):  # noqa: F811
    text = ("command: python -V\ncompute: azureml:k8s\nenvironment:\n  image: python:3.11\n  conda_file:\n"
            "    dependencies: &a [numpy, numpy, numpy]\n    channels: *a\n")
    response = owner_api.post(URL, text, content_type="application/yaml")
    assert response.status_code == 400 and "error" in response.json()
    assert not Job.objects.exists()


def test_a_local_job_takes_a_conda_file_or_a_venv_not_both(owner_api, local_compute, tmp_path):
    response = owner_api.post(URL, {"command": "python -V", "compute": "local",
                                    "environment": {"venv": str(tmp_path), "conda_file": {"dependencies": ["numpy"]}}},
                              format="json")
    error = assert_error(response, 400, "InvalidJob")
    assert "environment.venv" in [row["target"] for row in error["details"]]
    assert not Job.objects.exists()
