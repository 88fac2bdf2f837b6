"""Artifact collection: abandoned uploads, unnamed snapshots, unlisted blobs; rows first, stored objects after."""
import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from assets import storage
from assets.collect import collect
from assets.models import Blob, BlobPart, BlobUpload, Snapshot
from assets.tasks import collect_artifacts
from assets.tests.conftest import stored_keys
from assets.tests.support import post_archive, records, send, sha, start, targz
from workspaces.services import workspace_create

FILES = {"train.py": b"print('train')\n", "lib/util.py": b"x = 1\n" * 50}
DAY = timedelta(days=1)


def age(*querysets, by: timedelta = 2 * DAY) -> None:
    """Make rows older than the grace (and uploads quieter than the abandon time), as a day's wait would."""
    for queryset in querysets:
        field = "updated_at" if queryset.model is BlobUpload else "created_at"
        queryset.update(**{field: timezone.now() - by})


def blob_keys() -> set[str]:
    return {key for key in stored_keys() if key.startswith("blobs/")}


def part_keys() -> set[str]:
    return {key for key in stored_keys() if key.startswith("parts/")}


def test_an_abandoned_upload_goes_with_its_parts(store, owner_api, workspace):
    data = b"a" * 3000
    start(owner_api, data)
    send(owner_api, sha(data), 0, data[:1000])
    fresh = b"b" * 3000
    start(owner_api, fresh)
    send(owner_api, sha(fresh), 0, fresh[:1000])
    age(BlobUpload.objects.filter(sha256=sha(data)))
    assert len(part_keys()) == 2

    freed = collect()

    assert (freed.uploads, freed.parts, freed.bytes) == (1, 1, 1000)
    assert list(BlobUpload.objects.values_list("sha256", flat=True)) == [sha(fresh)]  # a chunk came today: kept
    assert BlobPart.objects.count() == 1 and len(part_keys()) == 1


def test_an_unnamed_snapshot_and_its_blobs_go_after_the_grace(store, owner_api, workspace):
    assert post_archive(owner_api, targz(FILES)).status_code == 201
    assert collect().snapshots == 0  # younger than the grace
    age(Snapshot.objects.all(), Blob.objects.all())

    freed = collect()

    assert (freed.snapshots, freed.blob_rows, freed.objects) == (1, 2, 2)
    assert freed.bytes == sum(len(data) for data in FILES.values())
    assert records() == (0, 0, 0, 0)
    assert blob_keys() == set()


def test_blobs_a_kept_snapshot_lists_stay(store, owner_api, workspace):
    post_archive(owner_api, targz(FILES))
    age(Blob.objects.all())  # old blobs, but the snapshot listing them is young
    assert post_archive(owner_api, targz({"other.py": b"y"})).status_code == 201
    age(Blob.objects.filter(sha256=sha(b"y")), Snapshot.objects.filter(file_count=1))

    freed = collect()

    assert (freed.snapshots, freed.blob_rows, freed.objects) == (1, 1, 1)
    assert set(Blob.objects.values_list("sha256", flat=True)) == {sha(data) for data in FILES.values()}
    assert blob_keys() == {storage.blob_key(sha(data)) for data in FILES.values()}


def test_stored_content_another_workspace_has_stays(store, owner, owner_api, workspace):
    other = workspace_create(user=owner, name="team-b", description="")
    post_archive(owner_api, targz(FILES))
    post_archive(owner_api, targz(FILES), workspace=f"/api/v1/workspaces/{other.name}")
    age(Snapshot.objects.filter(workspace=workspace), Blob.objects.filter(workspace=workspace))

    freed = collect()

    assert (freed.snapshots, freed.blob_rows, freed.objects, freed.bytes) == (1, 2, 0, 0)
    assert set(Blob.objects.values_list("workspace__name", flat=True)) == {"team-b"}
    assert len(blob_keys()) == 2  # team-b's rows still name them


def test_what_a_crash_left_behind_is_found_by_listing_the_store(store, owner_api, workspace):
    post_archive(owner_api, targz(FILES))
    start(owner_api, b"c" * 2000)
    send(owner_api, sha(b"c" * 2000), 0, b"c" * 500)
    # a crash after the rows went and before the stored objects did
    Snapshot.objects.all().delete()
    Blob.objects.all().delete()
    BlobUpload.objects.all().delete()

    freed = collect()

    assert (freed.objects, freed.parts, freed.bytes) == (2, 1, sum(len(data) for data in FILES.values()) + 500)
    assert stored_keys() == set()


def test_a_dry_run_deletes_nothing_and_says_what_a_run_frees(store, owner_api, workspace):
    post_archive(owner_api, targz(FILES))
    start(owner_api, b"d" * 2000)
    send(owner_api, sha(b"d" * 2000), 0, b"d" * 500)
    age(Snapshot.objects.all(), Blob.objects.all(), BlobUpload.objects.all())
    before, keys = records(), stored_keys()

    dry = collect(dry_run=True)

    assert (records(), stored_keys()) == (before, keys)
    assert collect() == dry
    assert (dry.uploads, dry.snapshots, dry.blob_rows, dry.objects) == (1, 1, 2, 2)
    assert stored_keys() == set()


def test_the_command_runs_it_by_hand(own_store, owner_api, workspace, capsys):
    post_archive(owner_api, targz(FILES))
    age(Snapshot.objects.all(), Blob.objects.all())
    call_command("collect_artifacts", "--dry-run")
    assert "Would free: 0 abandoned uploads (0 parts), 1 snapshots, 2 blob records, 2 stored blobs" in capsys.readouterr().out
    assert records() == (2, 0, 0, 1)
    call_command("collect_artifacts")
    assert capsys.readouterr().out.startswith("Freed: 0 abandoned uploads (0 parts), 1 snapshots")
    assert records() == (0, 0, 0, 0)


def test_the_collection_is_logged(own_store, owner_api, workspace, caplog):
    post_archive(owner_api, targz(FILES))
    age(Snapshot.objects.all(), Blob.objects.all())
    with caplog.at_level("INFO", logger="dockyard.artifacts"):
        collect()
    assert "Artifact collection: 0 abandoned uploads (0 parts), 1 snapshots, 2 blob records, 2 stored blobs; 21 bytes" \
        .replace("21", str(sum(len(data) for data in FILES.values()))) in caplog.text


def test_the_empty_blob_is_collected_like_any_other(store, owner_api, workspace):
    assert start(owner_api, b"").json()["complete"] is True
    age(Blob.objects.all())
    assert collect().objects == 1
    assert blob_keys() == set()
    storage.blob_put(sha(b""), io.BytesIO(b""))  # and stored again by the next upload of it
    assert blob_keys() == {storage.blob_key(sha(b""))}


@pytest.mark.parametrize("dry_run", [False, True])
def test_nothing_to_collect_is_a_quiet_run(own_store, workspace, dry_run):
    assert collect(dry_run=dry_run).summary() == ("0 abandoned uploads (0 parts), 0 snapshots, 0 blob records, "
                                                  "0 stored blobs; 0 bytes")


def test_beat_runs_the_collection_as_a_task(own_store, owner_api, workspace, settings):
    entry = settings.CELERY_BEAT_SCHEDULE["collect-artifacts"]
    assert entry["task"] == collect_artifacts.name == "assets.tasks.collect_artifacts"
    assert entry["schedule"].total_seconds() == settings.DOCKYARD_ARTIFACT_COLLECT_SECONDS
    post_archive(owner_api, targz(FILES))
    age(Snapshot.objects.all(), Blob.objects.all())
    assert collect_artifacts.apply().get().startswith("0 abandoned uploads (0 parts), 1 snapshots, 2 blob records")
    assert records() == (0, 0, 0, 0)
