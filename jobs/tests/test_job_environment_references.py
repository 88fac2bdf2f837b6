"""A job's `environment: azureml:...`: registered and curated environments run their image, resolved at submit."""
import pytest

from assets import registry
from controlplane.kube.resources import Shape
from jobs.manifests import job_manifest
from jobs.models import Job
from jobs.tests.support import k8s  # noqa: F401 (a fixture: the attached compute `k8s`)
from tests.support import assert_error

URL = "/api/v1/workspaces/team-a/jobs/"
CURATED = "mcr.microsoft.com/azureml/curated"


@pytest.fixture
def environments(owner, workspace):
    """Environment `train-env` versions 1 and 2 (images team/train:1 and :2), and `conda-env` with a conda file."""
    for version in ("1", "2"):
        registry.environment_create(user=owner, workspace=workspace, data={
            "name": "train-env", "version": version, "image": f"team/train:{version}"})
    registry.environment_create(user=owner, workspace=workspace, data={
        "name": "conda-env", "version": "1", "image": "python:3.11", "conda_file": {"dependencies": ["numpy"]}})


def submit(api, environment, compute="azureml:k8s"):
    return api.post(URL, {"command": "python -V", "compute": compute, "environment": environment}, format="json")


@pytest.mark.parametrize("reference, image", [
    ("azureml:train-env:1", "team/train:1"),
    ("azureml:train-env@latest", "team/train:2"),
    ("azureml:train-env:latest", "team/train:2"),
    ("azureml:AzureML-sklearn-1.5@latest", f"{CURATED}/sklearn-1.5:latest"),
    ("azureml:AzureML-sklearn-1.5", f"{CURATED}/sklearn-1.5:latest"),
    ("azureml://registries/azureml/environments/sklearn-1.5/versions/14", f"{CURATED}/sklearn-1.5:14"),
    ("azureml://registries/azureml/environments/sklearn-1.5/labels/latest", f"{CURATED}/sklearn-1.5:latest"),
])
def test_a_referenced_environment_runs_its_image_and_the_job_shows_the_reference(
        owner_api, k8s, environments, reference, image):  # noqa: F811
    response = submit(owner_api, reference)
    assert response.status_code == 201, response.content
    assert response.json()["environment"] == {"image": image, "reference": reference}
    job = Job.objects.get()
    assert job.spec["environment"]["image"] == image
    listed = owner_api.get(URL).json()["results"][0]
    assert listed["environment"]["reference"] == reference


def test_latest_skips_archived_versions_and_an_explicit_version_still_runs(owner_api, owner, k8s, environments):  # noqa: F811
    from assets.models import Environment

    registry.asset_archive(user=owner, record=Environment.objects.get(name="train-env", version="2"))
    assert submit(owner_api, "azureml:train-env@latest").json()["environment"]["image"] == "team/train:1"
    assert submit(owner_api, "azureml:train-env:2").json()["environment"]["image"] == "team/train:2"


def test_the_rendered_pod_runs_the_resolved_image(owner_api, k8s, environments):  # noqa: F811
    submit(owner_api, "azureml:train-env:1")
    job = Job.objects.get()
    manifest = job_manifest(spec=job.spec, job_name="j", namespace="ml", workspace="team-a", shape=Shape("default"))
    assert manifest["spec"]["template"]["spec"]["containers"][0]["image"] == "team/train:1"


@pytest.mark.parametrize("reference, words", [
    ("azureml:nope:1", "no version 1 of environment 'nope'"),
    ("azureml:nope@latest", "no version that is not archived"),
    ("azureml:AzureML-sklearn-9.9@latest", "not one of Azure ML's curated environments"),
    ("azureml://registries/other/environments/e/versions/1", "Registry 'other'"),
    ("azureml:train-env", "names no version"),
])
def test_references_that_do_not_resolve_are_400_at_environment_and_write_nothing(
        owner_api, k8s, environments, reference, words):  # noqa: F811
    error = assert_error(submit(owner_api, reference), 400, "InvalidJob")
    assert error["details"][0]["target"] == "environment" and words in error["message"]
    assert not Job.objects.exists()


def test_a_local_job_cannot_run_an_image_environment(owner_api, local_compute, environments):
    error = assert_error(submit(owner_api, "azureml:train-env:1", compute="local"), 400, "InvalidJob")
    assert error["details"][0]["target"] == "environment" and "not in a container" in error["message"]


def test_a_shown_job_submits_again_unchanged(owner_api, k8s, environments):  # noqa: F811
    shown = submit(owner_api, "azureml:train-env@latest").json()
    again = submit(owner_api, shown["environment"])
    assert again.status_code == 201, again.content
    assert again.json()["environment"] == {"image": "team/train:2", "reference": "azureml:train-env@latest"}
