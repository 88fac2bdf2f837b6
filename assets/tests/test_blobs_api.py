"""Blob uploads: start (or learn the blob is known), chunks at `received`, the hash checked at the end, downloads."""
import pytest

from assets.models import Blob, BlobUpload
from assets.specs.snapshots import EMPTY_SHA256
from assets.tests.support import WS, records, send, sha, start, upload
from tests.support import assert_error
from workspaces.services import workspace_create

DATA = b"x" * 1000


def test_starting_an_upload_answers_what_is_needed(owner_api, workspace):
    response = start(owner_api, DATA)
    assert response.status_code == 201
    assert response.json() == {"sha256": sha(DATA), "size": 1000, "received": 0, "complete": False}
    again = start(owner_api, DATA)
    assert (again.status_code, again.json()["received"]) == (200, 0)  # the same upload, resumed


def test_a_known_blob_is_skipped(owner_api, workspace):
    upload(owner_api, DATA)
    response = start(owner_api, DATA)
    assert response.status_code == 200
    assert response.json() == {"sha256": sha(DATA), "size": 1000, "received": 1000, "complete": True}


def test_a_known_blob_with_another_size_is_refused(owner_api, workspace):
    upload(owner_api, DATA)
    assert_error(start(owner_api, DATA, size=5), 400, "SizeMismatch", "size")


def test_chunks_go_at_the_received_offset_only(owner_api, workspace):
    start(owner_api, DATA)
    assert send(owner_api, sha(DATA), 0, DATA[:400]).json()["received"] == 400
    assert_error(send(owner_api, sha(DATA), 0, DATA[:400]), 409, "OffsetMismatch", "offset")
    assert_error(send(owner_api, sha(DATA), 800, DATA[800:]), 409, "OffsetMismatch", "offset")
    assert send(owner_api, sha(DATA), 400, DATA[400:]).json()["complete"] is True


def test_the_last_chunk_again_answers_complete(owner_api, workspace):
    upload(owner_api, DATA)
    response = send(owner_api, sha(DATA), 0, DATA)
    assert (response.status_code, response.json()["complete"]) == (200, True)


def test_a_chunk_past_the_announced_size_is_refused_and_not_stored(owner_api, workspace):
    start(owner_api, DATA)
    assert_error(send(owner_api, sha(DATA), 0, DATA + b"more"), 400, "ChunkTooLarge", "body")
    assert BlobUpload.objects.get().received == 0


@pytest.mark.parametrize("offset", ["", "-1", "abc", "1e3", "²", "9" * 30])
def test_a_bad_offset_is_refused(offset, owner_api, workspace):
    start(owner_api, DATA)
    response = owner_api.generic("PATCH", f"{WS}/blobs/{sha(DATA)}/?offset={offset}", DATA,
                                 content_type="application/octet-stream")
    assert_error(response, 400, "InvalidOffset", "offset")


def test_chunks_need_a_started_upload(owner_api, workspace):
    assert_error(send(owner_api, sha(DATA), 0, DATA), 404, "NotFound")


def test_an_empty_blob_is_complete_at_once(owner_api, workspace):
    response = start(owner_api, b"")
    assert (response.status_code, response.json()["complete"]) == (201, True)
    assert Blob.objects.get().sha256 == EMPTY_SHA256
    assert_error(owner_api.post(f"{WS}/blobs/", {"sha256": sha(b"a"), "size": 0}, format="json"), 400, "HashMismatch")


def test_a_blob_over_the_limit_is_refused_before_any_byte(owner_api, workspace, settings):
    settings.DOCKYARD_ARTIFACT_MAX_BYTES = 999
    assert_error(start(owner_api, DATA), 400, "BlobTooLarge", "size")
    assert records() == (0, 0, 0, 0)


@pytest.mark.parametrize("body, target", [
    ({"sha256": "ABC", "size": 1}, "sha256"),
    ({"sha256": "g" * 64, "size": 1}, "sha256"),
    ({"sha256": "a" * 64, "size": -1}, "size"),
    ({"sha256": "a" * 64}, "size"),
])
def test_a_bad_start_is_refused(body, target, owner_api, workspace):
    assert_error(owner_api.post(f"{WS}/blobs/", body, format="json"), 400, "ValidationError", target)
    assert records() == (0, 0, 0, 0)


def test_a_chunk_over_the_body_limit_is_413(owner_api, workspace, settings):
    settings.DOCKYARD_ARTIFACT_BODY_MAX_BYTES = 500
    start(owner_api, DATA)
    assert_error(send(owner_api, sha(DATA), 0, DATA), 413, "PayloadTooLarge")
    assert BlobUpload.objects.get().received == 0


def test_an_incomplete_blob_is_not_downloadable(owner_api, workspace):
    start(owner_api, DATA)
    send(owner_api, sha(DATA), 0, DATA[:10])
    assert_error(owner_api.get(f"{WS}/blobs/{sha(DATA)}/?download=true"), 409, "BlobIncomplete")


def test_a_state_has_an_etag(owner_api, workspace):
    upload(owner_api, DATA)
    assert owner_api.get(f"{WS}/blobs/{sha(DATA)}/")["ETag"]


def test_another_workspace_learns_nothing_of_a_blob(owner_api, workspace, make_user):
    """Storage keeps one copy, but `known` and downloads go by the workspace's own records."""
    from conftest import client_for

    upload(owner_api, DATA)
    bob = make_user("bob")
    workspace_create(user=bob, name="team-b")
    theirs = client_for(bob)
    other = "/api/v1/workspaces/team-b"
    assert_error(theirs.get(f"{other}/blobs/{sha(DATA)}/?download=true"), 404, "NotFound")
    assert_error(theirs.get(f"{WS}/blobs/{sha(DATA)}/?download=true"), 404, "NotFound")
    assert start(theirs, DATA, workspace=other).json()["complete"] is False  # must prove it has the bytes
    # and a claim without the bytes gets nothing
    assert_error(send(theirs, sha(DATA), 0, b"y" * 1000, workspace=other), 400, "HashMismatch")
    assert_error(theirs.get(f"{other}/blobs/{sha(DATA)}/?download=true"), 404, "NotFound")
    assert upload(theirs, DATA, workspace=other)["complete"] is True
    assert b"".join(theirs.get(f"{other}/blobs/{sha(DATA)}/?download=true").streaming_content) == DATA
