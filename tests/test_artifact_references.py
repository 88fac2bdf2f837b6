"""Artifact collection keeps every snapshot some app still names: the providers jobs, endpoints and assets register."""
from datetime import timedelta

import pytest
from django.utils import timezone

from assets import references
from assets.collect import collect
from assets.models import Blob, Data, Model, Snapshot
from assets.tests.conftest import own_store  # noqa: F401 (a fixture)
from assets.tests.support import post_archive, targz
from endpoints.models import OnlineDeployment, OnlineEndpoint
from jobs.models import Job
from workspaces.services import workspace_create

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("own_store")]  # collection lists the whole store


def name_in_job_code(workspace, snapshot):
    return Job.objects.create(workspace=workspace, name="j", spec={"command": "x", "code": snapshot.path}, target="local")


def name_in_job_input(workspace, snapshot):
    return Job.objects.create(workspace=workspace, name="j", spec={"command": "x"}, target="local",
                              resolved_inputs={"data": {"snapshot": snapshot.sha256, "file": None}})


def name_in_job_outputs(workspace, snapshot):
    return Job.objects.create(workspace=workspace, name="j", spec={"command": "x"}, target="local",
                              outputs_snapshot=snapshot)


def name_in_model(workspace, snapshot):
    return Model.objects.create(workspace=workspace, name="m", version="1", sort_key="1", type="custom_model",
                                path=snapshot.path, snapshot=snapshot)


def name_in_data(workspace, snapshot):
    return Data.objects.create(workspace=workspace, name="d", version="1", sort_key="1", type="uri_folder",
                               path=snapshot.path, snapshot=snapshot)


def name_in_deployment_code(workspace, snapshot):
    endpoint = OnlineEndpoint.objects.create(workspace=workspace, name="ep", compute_name="local")
    return OnlineDeployment.objects.create(endpoint=endpoint, name="blue", instance_type="Standard_DS3_v2", spec={
        "code_configuration": {"code": snapshot.path, "scoring_script": "score.py"}})


def name_in_deployment_model(workspace, snapshot):
    endpoint = OnlineEndpoint.objects.create(workspace=workspace, name="ep", compute_name="local")
    return OnlineDeployment.objects.create(endpoint=endpoint, name="blue", instance_type="Standard_DS3_v2", spec={
        "model": {"reference": "azureml:m:1", "name": "m", "version": "1", "type": "custom_model", "path": snapshot.path}})


NAMERS = [name_in_job_code, name_in_job_input, name_in_job_outputs, name_in_model, name_in_data, name_in_deployment_code,
          name_in_deployment_model]


@pytest.mark.parametrize("name_it", NAMERS)
def test_a_named_snapshot_and_its_blobs_outlive_the_grace(owner_api, workspace, name_it):
    post_archive(owner_api, targz({"score.py": b"def run(x): return x\n"}))
    snapshot = Snapshot.objects.get()
    holder = name_it(workspace, snapshot)
    old = timezone.now() - timedelta(days=30)
    Snapshot.objects.update(created_at=old)
    Blob.objects.update(created_at=old)

    assert (collect().snapshots, Snapshot.objects.count(), Blob.objects.count()) == (0, 1, 1)

    holder.delete()
    freed = collect()
    assert (freed.snapshots, freed.blob_rows, freed.objects) == (1, 1, 1)


def test_a_snapshot_of_the_same_hash_in_another_workspace_is_not_kept_by_this_ones_name(owner, owner_api, workspace):
    other = workspace_create(user=owner, name="team-b", description="")
    body = targz({"score.py": b"print(1)\n"})
    post_archive(owner_api, body)
    post_archive(owner_api, body, workspace=f"/api/v1/workspaces/{other.name}")
    name_in_job_code(workspace, Snapshot.objects.get(workspace=workspace))
    Snapshot.objects.update(created_at=timezone.now() - timedelta(days=30))
    assert collect().snapshots == 1
    assert list(Snapshot.objects.values_list("workspace__name", flat=True)) == ["team-a"]


def test_every_reference_has_its_provider():
    names = {provider.__module__ + "." + provider.__name__ for provider in references.registered()}
    assert names >= {"jobs.references.code_snapshots", "jobs.references.input_snapshots",
                     "jobs.references.output_snapshots", "assets.references.model_snapshots",
                     "assets.references.data_snapshots", "endpoints.references.code_snapshots",
                     "endpoints.references.model_snapshots"}


def test_a_foreign_key_added_after_the_providers_were_asked_still_keeps_it(owner_api, workspace, monkeypatch):
    post_archive(owner_api, targz({"score.py": b"print(2)\n"}))
    snapshot = Snapshot.objects.get()
    name_in_model(workspace, snapshot)
    monkeypatch.setattr(references, "snapshots_in_use", set)  # as if the model came after the providers answered
    Snapshot.objects.update(created_at=timezone.now() - timedelta(days=30))
    assert collect().snapshots == 0  # PROTECT refused the delete
    assert Snapshot.objects.count() == 1
