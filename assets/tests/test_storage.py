"""The same artifact storage behaviour on the filesystem (embedded) and on a real S3-compatible server (production)."""
import io

import pytest
from django.core.files.storage import storages

from assets import storage
from assets.models import Blob
from assets.tests.conftest import stored_keys
from assets.tests.support import WS, post_archive, send, sha, start, targz, upload

pytestmark = pytest.mark.usefixtures("store")
BIG = bytes(range(256)) * 5000  # 1.28 MB: several chunks


def test_a_blob_is_stored_once_under_its_hash(db):
    storage.blob_put(sha(b"hello"), io.BytesIO(b"hello"))
    storage.blob_put(sha(b"hello"), io.BytesIO(b"hello"))
    assert stored_keys() == {f"blobs/{sha(b'hello')[:2]}/{sha(b'hello')}"}
    with storage.blob_open(sha(b"hello")) as stored:
        assert stored.read() == b"hello"


def test_parts_are_joined_in_order_and_hashed(db):
    keys = [storage.part_put(7, offset, io.BytesIO(BIG[offset:offset + 100_000])) for offset in range(0, len(BIG), 100_000)]
    joined, size, digest = storage.parts_joined(keys, len(BIG))
    with joined:
        assert (joined.read(), size, digest) == (BIG, len(BIG), sha(BIG))
    storage.delete(keys)
    assert stored_keys() == set()


def test_a_chunked_upload_is_verified_stored_and_downloaded(owner_api, workspace):
    answer = upload(owner_api, BIG, chunk_size=300_000)
    assert answer == {"sha256": sha(BIG), "size": len(BIG), "received": len(BIG), "complete": True}
    # the chunks are gone; only the blob stays
    assert stored_keys() == {f"blobs/{sha(BIG)[:2]}/{sha(BIG)}"}
    response = owner_api.get(f"{WS}/blobs/{sha(BIG)}/", {"download": "true"})
    assert response.status_code == 200
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"].startswith("attachment")
    assert b"".join(response.streaming_content) == BIG


def test_an_interrupted_upload_resumes_where_the_store_says(owner_api, workspace):
    start(owner_api, BIG)
    send(owner_api, sha(BIG), 0, BIG[:500_000])
    state = owner_api.get(f"{WS}/blobs/{sha(BIG)}/").json()
    assert (state["received"], state["complete"]) == (500_000, False)
    assert send(owner_api, sha(BIG), state["received"], BIG[state["received"]:]).json()["complete"] is True
    with storages["artifacts"].open(f"blobs/{sha(BIG)[:2]}/{sha(BIG)}") as stored:
        assert stored.read() == BIG


def test_a_wrong_hash_discards_the_upload_and_stores_nothing(owner_api, workspace):
    claimed = sha(b"something else")
    owner_api.post(f"{WS}/blobs/", {"sha256": claimed, "size": len(BIG)}, format="json")
    send(owner_api, claimed, 0, BIG[:1000])
    response = send(owner_api, claimed, 1000, BIG[1000:])
    assert (response.status_code, response.json()["error"]["code"]) == (400, "HashMismatch")
    assert stored_keys() == set() and not Blob.objects.exists()
    assert owner_api.get(f"{WS}/blobs/{claimed}/").status_code == 404


def test_an_uploaded_archive_stores_each_content_once(owner_api, workspace):
    """Small files (kept in memory while the archive is checked) and large ones (spilled to disk) alike."""
    contents = {"src/train.py": b"print('hi')\n", "src/copy.py": b"print('hi')\n", "weights.bin": BIG}
    response = post_archive(owner_api, targz(contents))
    assert response.status_code == 201, response.json()
    assert stored_keys() == {f"blobs/{sha(data)[:2]}/{sha(data)}" for data in (b"print('hi')\n", BIG)}
    for data in set(contents.values()):
        download = owner_api.get(f"{WS}/blobs/{sha(data)}/", {"download": "true"})
        assert b"".join(download.streaming_content) == data
    assert post_archive(owner_api, targz(contents, mtime=12345)).status_code == 200
    assert len(stored_keys()) == 2
