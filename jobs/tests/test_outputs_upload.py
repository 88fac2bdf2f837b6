"""The route a pod gives its ./outputs back to (`POST /api/v1/artifacts/outputs/<token>/<rank>/`): the signed token is
the only authorisation; the body is a hostile .tar.gz read under the snapshot limits; the job's outputs are recorded,
ranks merged (the lowest rank wins a path two ranks wrote), a repeated upload changes nothing."""
import gzip
import io
import tarfile
import time

import pytest
from django.core import signing

from assets import delivery
from assets.models import Blob, Snapshot
from assets.tests.conftest import own_store, stored_keys  # noqa: F401 (own_store: a fixture)
from assets.tests.support import records
from assets.tests.test_hostile_artifacts import ARCHIVES
from jobs.models import Job
from jobs.tests.support import IMAGE, URL
from tests.support import assert_error

pytestmark = pytest.mark.usefixtures("k8s")


def packed(files: dict[str, bytes], links: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return buffer.getvalue()


def make_job(api, name: str = "train", nodes: int = 1) -> Job:
    body = {"name": name, "command": "python train.py", "compute": "k8s", "environment": {"image": IMAGE},
            "resources": {"instance_count": nodes}}
    response = api.post(URL, body, format="json")
    assert response.status_code == 201, response.json()
    return Job.objects.get(name=name)


def post(client, token: str, rank: int | str, body: bytes, content_type: str = "application/gzip"):
    return client.generic("POST", f"/api/v1/artifacts/outputs/{token}/{rank}/", body, content_type=content_type)


def token_for(job: Job, seconds: int = 600) -> str:
    return delivery.upload_token(job.workspace_id, job.pk, seconds)


def refused(response, status: int, code: str) -> str:
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert error["code"] == code and error["message"]
    return error["message"]


def test_an_upload_is_stored_and_recorded_as_the_jobs_outputs(client, owner_api, caplog):
    job = make_job(owner_api)
    with caplog.at_level("INFO", logger="dockyard.artifacts"):
        response = post(client, token_for(job), 0, packed({"./model/weights.bin": b"\0\1", "./metrics.json": b"{}"}))

    assert response.status_code == 201, response.json()
    job.refresh_from_db()
    snapshot = job.outputs_snapshot
    assert snapshot is not None and response.json() == {"sha256": snapshot.sha256, "files": 2, "size": 4,
                                                          "outputs": snapshot.sha256}
    assert sorted(path for path, _, _ in snapshot.files) == ["metrics.json", "model/weights.bin"]
    assert snapshot.workspace_id == job.workspace_id and snapshot.created_by is None
    event = job.events.get(reason="OutputsCollected")
    assert event.message == "The pod sent 2 files (4 bytes) from ./outputs."
    messages = [record.getMessage() for record in caplog.records if record.name == "dockyard.artifacts"]
    assert any(message.startswith(f"Issued an outputs upload URL for job {job.pk}") for message in messages)
    assert any(message.startswith(f"Outputs upload for job {job.pk} rank 0") for message in messages)


def test_the_same_upload_again_changes_nothing(client, owner_api):
    job = make_job(owner_api)
    body = packed({"a.txt": b"a"})
    assert post(client, token_for(job), 0, body).status_code == 201
    again = post(client, token_for(job), 0, body)
    assert again.status_code == 200
    assert job.events.filter(reason="OutputsCollected").count() == 1 and Snapshot.objects.count() == 1


def test_a_later_upload_of_the_same_rank_replaces_its_part(client, owner_api):
    job = make_job(owner_api)
    post(client, token_for(job), 0, packed({"a.txt": b"a"}))
    assert post(client, token_for(job), 0, packed({"a.txt": b"a", "b.txt": b"b"})).status_code == 201
    job.refresh_from_db()
    assert [path for path, _, _ in job.outputs_snapshot.files] == ["a.txt", "b.txt"]


def test_an_empty_outputs_folder_is_recorded_as_empty(client, owner_api):
    job = make_job(owner_api)
    empty = gzip.compress(b"\0" * 10240)  # what the sidecar sends when ./outputs holds nothing
    assert post(client, token_for(job), 0, empty).status_code == 201
    job.refresh_from_db()
    assert job.outputs_snapshot.file_count == 0


def test_ranks_are_merged_whatever_order_they_arrive_in_the_lowest_rank_winning(client, owner_api):
    job = make_job(owner_api, nodes=3)
    token = token_for(job)
    assert post(client, token, 2, packed({"model.pt": b"rank 2", "rank2.log": b"2", "logs/x": b"2"})).status_code == 201
    assert post(client, token, 0, packed({"model.pt": b"rank 0", "logs": b"a file here"})).status_code == 201
    assert post(client, token, 1, packed({"rank1.log": b"1"})).status_code == 201

    job.refresh_from_db()
    files = {path: sha for path, sha, _ in job.outputs_snapshot.files}
    assert sorted(files) == ["logs", "model.pt", "rank1.log", "rank2.log"]  # rank 2's logs/x clashes with rank 0's file
    assert Blob.objects.get(workspace=job.workspace, sha256=files["model.pt"]).size == len(b"rank 0")
    assert job.runner["outputs"].keys() == {"0", "1", "2"}
    last = job.events.filter(reason="OutputsCollected").last().message
    assert last.startswith("Rank 1 sent 1 files (1 bytes) from ./outputs. 2 files of higher ranks were left out")


@pytest.mark.parametrize("rank", ["1", "-1", "99999999", "x", "0x1"])
def test_a_rank_the_job_does_not_have_is_refused(client, owner_api, rank):
    job = make_job(owner_api)
    response = post(client, token_for(job), rank, packed({"a": b"a"}))
    assert response.status_code in (400, 404), response.content
    if response.status_code == 400:
        assert response.json()["error"]["code"] == "InvalidRank"
    assert Snapshot.objects.count() == 0


def test_a_forged_expired_or_foreign_token_is_refused_and_nothing_is_written(client, owner_api, monkeypatch):
    job = make_job(owner_api)
    body = packed({"a": b"a"})
    assert "not valid" in refused(post(client, "eyJ3IjoxfQ:forged:signature", 0, body), 403, "UploadRefused")
    fetch_like = signing.dumps({"w": job.workspace_id, "j": job.pk, "e": int(time.time()) + 60}, salt=delivery.FETCH_SALT)
    assert "not valid" in refused(post(client, fetch_like, 0, body), 403, "UploadRefused")  # another purpose's salt
    token = token_for(job, seconds=60)
    now = time.time()
    monkeypatch.setattr(delivery.time, "time", lambda: now + 61)
    assert "expired" in refused(post(client, token, 0, body), 403, "UploadRefused")
    assert Snapshot.objects.count() == 0 and Blob.objects.count() == 0 and not Job.objects.get(pk=job.pk).outputs_snapshot


def test_a_token_for_a_job_that_is_gone_writes_nothing(client, owner_api):
    job = make_job(owner_api)
    token = token_for(job)
    Job.objects.filter(pk=job.pk).update(deleting=True)
    assert "no longer exists" in refused(post(client, token, 0, packed({"a": b"a"})), 403, "UploadRefused")
    forged_elsewhere = delivery.upload_token(job.workspace_id + 1, job.pk)  # a job id of another workspace
    assert "no longer exists" in refused(post(client, forged_elsewhere, 0, packed({"a": b"a"})), 403, "UploadRefused")
    assert Snapshot.objects.count() == 0


def test_an_upload_long_after_the_job_ended_is_refused(client, owner_api):
    from datetime import timedelta

    from django.utils import timezone

    job = make_job(owner_api)
    token = token_for(job)
    Job.objects.filter(pk=job.pk).update(status="Completed", end_time=timezone.now() - timedelta(seconds=60))
    assert post(client, token, 0, packed({"a": b"a"})).status_code == 201  # the upload the pod made as it ended
    Job.objects.filter(pk=job.pk).update(end_time=timezone.now() - timedelta(seconds=301))
    assert "has ended" in refused(post(client, token, 0, packed({"b": b"b"})), 403, "UploadRefused")
    job.refresh_from_db()
    assert [path for path, _, _ in job.outputs_snapshot.files] == ["a"]


def bomb() -> bytes:
    """A gzip of one file of 2 GiB of zeros, compressed to a few MB."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb") as out:
        info = tarfile.TarInfo("zeros")
        info.size = 2 * 1024**3
        out.write(info.tobuf())
        chunk = b"\0" * (1 << 20)
        for _ in range(2048):
            out.write(chunk)
    return buffer.getvalue()


@pytest.mark.usefixtures("own_store")
@pytest.mark.parametrize("name", list(ARCHIVES))
def test_every_hostile_archive_of_the_uploads_corpus_is_refused_and_nothing_is_stored(name, client, owner_api):
    """The same archives `uploads/` refuses (assets/tests/test_hostile_artifacts.py): each a 400 in the error shape,
    no record, no stored byte, no outputs on the job."""
    job = make_job(owner_api)
    before = (records(), stored_keys())
    body, code = ARCHIVES[name]
    assert_error(post(client, token_for(job), 0, body), 400, code)
    assert (records(), stored_keys()) == before
    assert not Job.objects.get(pk=job.pk).outputs_snapshot and not job.events.filter(reason="OutputsCollected").exists()


def test_a_gzip_bomb_stops_at_the_snapshot_limit(client, owner_api, settings):
    settings.DOCKYARD_SNAPSHOT_MAX_BYTES = 1024**2
    job = make_job(owner_api)
    response = post(client, token_for(job), 0, bomb())
    assert response.status_code == 400 and response.json()["error"]["code"] in ("SnapshotTooLarge", "BlobTooLarge")
    assert Snapshot.objects.count() == 0 and Blob.objects.count() == 0


def test_a_body_over_the_limit_and_a_wrong_media_type_are_refused(client, owner_api, settings):
    job = make_job(owner_api)
    assert post(client, token_for(job), 0, packed({"a": b"a"}), "application/json").status_code == 415
    settings.DOCKYARD_ARTIFACT_BODY_MAX_BYTES = 100
    response = post(client, token_for(job), 0, packed({"big": bytes(range(256)) * 64}))
    assert response.status_code == 413 and "error" in response.json()
    assert Snapshot.objects.count() == 0
