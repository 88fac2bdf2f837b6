"""Who reaches artifacts: members read, contributors write; refused calls change nothing; other workspaces see nothing."""
import io

from assets import services
from assets.tests.conftest import stored_keys
from assets.tests.support import WS, post_archive, records, send, sha, start, targz
from tests.support import assert_error
from workspaces.services import workspace_create

DATA = b"secret model weights"


def test_refused_writes_change_nothing(api_as, users, workspace, own_store):
    services.blob_upload_start(user=users["owner"], workspace=workspace, sha256=sha(DATA), size=len(DATA))
    clients = {role: api_as(role) for role in ("anonymous", "outsider", "reader")}
    before = (records(), stored_keys())
    for role, client in clients.items():
        expected = {"anonymous": 401, "outsider": 404, "reader": 403}[role]
        for response in (
            start(client, b"other"),
            send(client, sha(DATA), 0, DATA),
            client.post(f"{WS}/snapshots/", {"files": []}, format="json"),
            post_archive(client, targz({"a.py": DATA})),
        ):
            assert response.status_code == expected, (role, response.content)
    assert (records(), stored_keys()) == before


def test_a_member_of_another_workspace_gets_404_for_ours(owner_api, workspace, make_user, own_store):
    from conftest import client_for

    snapshot, _ = services.upload_create(user=workspace.created_by, workspace=workspace,
                                         body=io.BytesIO(targz({"w.bin": DATA})), content_type="application/gzip")
    bob = make_user("bob")
    workspace_create(user=bob, name="team-b")
    theirs = client_for(bob)
    for path in (f"blobs/{sha(DATA)}/", f"blobs/{sha(DATA)}/?download=true", f"snapshots/{snapshot.sha256}/"):
        assert_error(theirs.get(f"{WS}/{path}"), 404, "NotFound")
        assert_error(theirs.get(f"/api/v1/workspaces/team-b/{path}"), 404, "NotFound")  # not in team-b either
    assert_error(theirs.get(f"{WS}/snapshots/"), 404, "NotFound")
    assert theirs.get("/api/v1/workspaces/team-b/snapshots/").json()["count"] == 0
    # the same bytes sent by team-b make team-b's own snapshot, stored content shared, records not
    again = post_archive(theirs, targz({"w.bin": DATA}), workspace="/api/v1/workspaces/team-b")
    assert again.status_code == 201 and again.json()["sha256"] == snapshot.sha256
    assert len(stored_keys()) == 1
