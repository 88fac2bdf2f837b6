"""Collection interleaved with uploads that reuse what it is collecting (PostgreSQL, real connections, real locks).

Each test stops one side at the dangerous point (threads and events, no sleeps), lets the other run into it, and
checks that no row is left naming nothing. The first test also runs the interleaving without the store's lock, to show
that it is the lock that saves the content (the same steps then lose it).
"""
import io
import threading

import pytest
from django.db import connection, connections

from assets import collect as collect_module
from assets import locks, services, storage
from assets.collect import collect
from assets.models import Blob, BlobUpload, Snapshot
from assets.tests.support import sha, targz
from assets.tests.test_collect import age

pytestmark = pytest.mark.django_db(transaction=True)
DATA = b"shared content\n" * 100
WAIT = 30  # seconds: a bound on waiting for the other thread, never a measurement


class Side(threading.Thread):
    """One side of the race in a thread of its own, with its own database connection."""

    def __init__(self, action):
        super().__init__(daemon=True)
        self.action, self.result, self.error = action, None, None

    def run(self):
        try:
            self.result = self.action()
        except Exception as exc:  # handed to the test
            self.error = exc
        finally:
            connections.close_all()

    def outcome(self):
        self.join(WAIT)
        assert not self.is_alive(), "the other side did not finish"
        return self.result, self.error


def wait_until_someone_waits_for_a_lock() -> None:
    """Until PostgreSQL shows a lock request not granted (the other side is blocked on ours)."""
    for _ in range(WAIT * 100):
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
            if cursor.fetchone()[0]:
                return
        threading.Event().wait(0.01)
    raise AssertionError("nobody waited for a lock")


def paused(target, name: str, monkeypatch, when=lambda *args: True):
    """Patch `target.name` so that a call (for which `when` holds) stops after running until released; the events."""
    reached, release, real = threading.Event(), threading.Event(), getattr(target, name)

    def stopping(*args, **kwargs):
        result = real(*args, **kwargs)
        if when(*args):
            reached.set()
            assert release.wait(WAIT)
        return result

    monkeypatch.setattr(target, name, stopping)
    return reached, release


def archive_upload(workspace, user):
    return lambda: services.upload_create(user=user, workspace=workspace, body=io.BytesIO(targz({"a.txt": DATA})),
                                          content_type="application/gzip")


@pytest.mark.parametrize("with_lock", [True, False])
def test_an_upload_reusing_a_stored_object_being_collected_keeps_it(own_store, owner, workspace, monkeypatch, with_lock):
    storage.blob_put(sha(DATA), io.BytesIO(DATA))  # stored, and no workspace's row names it: the collector's to take
    if not with_lock:
        monkeypatch.setattr(locks, "hold_store_shared", lambda: None)
    reached, release = paused(storage, "blobs_put", monkeypatch)  # the key was found present, nothing written
    upload = Side(archive_upload(workspace, owner))
    upload.start()
    assert reached.wait(WAIT)
    collector = Side(collect)
    collector.start()
    if with_lock:
        wait_until_someone_waits_for_a_lock()  # the collector waits for the upload to commit
    else:
        collector.outcome()  # nothing stops it
    release.set()
    (snapshot, created), error = upload.outcome()
    freed, collector_error = collector.outcome()
    assert (error, collector_error, created) == (None, None, True)
    assert Blob.objects.filter(workspace=workspace, sha256=sha(DATA)).exists()
    assert storage.blob_exists(sha(DATA)) is with_lock  # without the lock: a row naming nothing
    assert freed.objects == (0 if with_lock else 1)


def test_a_snapshot_made_from_blobs_being_collected_waits_and_is_refused(own_store, owner, workspace, monkeypatch):
    services.upload_create(user=owner, workspace=workspace, body=io.BytesIO(targz({"a.txt": DATA})),
                           content_type="application/gzip")
    Snapshot.objects.all().delete()
    age(Blob.objects.all())
    # the collector holds the blob's row, having found that no snapshot lists it
    reached, release = paused(collect_module, "listed_blobs", monkeypatch, when=lambda *args: connection.in_atomic_block)
    collector = Side(collect)
    collector.start()
    assert reached.wait(WAIT)
    manifest = {"files": [{"path": "a.txt", "sha256": sha(DATA), "mode": 0o644}]}
    maker = Side(lambda: services.snapshot_create(user=owner, workspace=workspace, data=manifest))
    maker.start()
    wait_until_someone_waits_for_a_lock()
    release.set()
    freed, _ = collector.outcome()
    _, error = maker.outcome()
    assert (freed.blob_rows, freed.objects) == (1, 1)
    assert isinstance(error, services.Refused) and error.error_code == "MissingBlobs"  # upload the blob again
    assert Snapshot.objects.count() == 0 and not storage.blob_exists(sha(DATA))


def test_blobs_a_snapshot_being_made_holds_are_skipped(own_store, owner, workspace, monkeypatch):
    services.upload_create(user=owner, workspace=workspace, body=io.BytesIO(targz({"a.txt": DATA})),
                           content_type="application/gzip")
    Snapshot.objects.all().delete()
    age(Blob.objects.all())
    manifest = {"files": [{"path": "b.txt", "sha256": sha(DATA), "mode": 0o644}]}
    reached, release = paused(services, "_snapshot_save", monkeypatch)  # the rows are locked, the snapshot not committed
    maker = Side(lambda: services.snapshot_create(user=owner, workspace=workspace, data=manifest))
    maker.start()
    assert reached.wait(WAIT)
    freed = collect()  # skips the held row: no wait
    release.set()
    (snapshot, created), error = maker.outcome()
    assert (error, created, freed.blob_rows, freed.objects) == (None, True, 0, 0)
    assert snapshot.files == [["b.txt", sha(DATA), 0o644]]
    assert storage.blob_exists(sha(DATA)) and Blob.objects.filter(sha256=sha(DATA)).exists()
    assert collect().blob_rows == 0  # and now the snapshot lists it


def test_an_upload_whose_chunk_is_being_written_is_not_abandoned(own_store, owner, workspace, monkeypatch):
    data = b"z" * 3000
    services.blob_upload_start(user=owner, workspace=workspace, sha256=sha(data), size=len(data))
    age(BlobUpload.objects.all())  # quiet for a day...
    reached, release = paused(storage, "part_put", monkeypatch)  # ...until a chunk arrives, holding the upload's row
    chunk = Side(lambda: services.blob_chunk_write(user=owner, workspace=workspace, sha256=sha(data), offset=0,
                                                   body=io.BytesIO(data[:1000])))
    chunk.start()
    assert reached.wait(WAIT)
    freed = collect()  # skips the held row: no wait
    release.set()
    state, error = chunk.outcome()
    assert (error, freed.uploads, state.received) == (None, 0, 1000)
    assert BlobUpload.objects.get().parts.count() == 1
    assert collect().uploads == 0  # the chunk made it recent again
