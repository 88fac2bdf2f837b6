"""Snapshots: a folder's manifest of uploaded blobs, named by the sha256 of its canonical form; and `uploads/`."""
import tarfile

from assets.specs import snapshots as spec
from assets.tests.support import WS, member, post_archive, sha, targz, upload
from tests.support import assert_error

TRAIN, README = b"print('train')\n", b"# project\n"


def manifest(*files) -> dict:
    return {"files": [{"path": path, "sha256": sha(data), "mode": mode} for path, data, mode in files]}


def test_a_snapshot_of_uploaded_blobs(owner_api, workspace):
    upload(owner_api, TRAIN)
    upload(owner_api, README)
    response = owner_api.post(f"{WS}/snapshots/", manifest(("src/train.py", TRAIN, 0o755), ("README.md", README, 0o600)),
                              format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["path"] == f"azureml://uploads/{body['sha256']}"
    assert (body["size"], body["file_count"], body["created_by"]) == (len(TRAIN) + len(README), 2, "olivia")
    # sorted by path; modes kept as git keeps them
    assert body["files"] == [{"path": "README.md", "sha256": sha(README), "mode": 0o644},
                             {"path": "src/train.py", "sha256": sha(TRAIN), "mode": 0o755}]
    entries = [spec.Entry("README.md", sha(README), 0o644), spec.Entry("src/train.py", sha(TRAIN), 0o755)]
    assert body["sha256"] == spec.snapshot_id(entries)


def test_the_same_files_give_the_same_snapshot(owner_api, workspace):
    upload(owner_api, TRAIN)
    first = owner_api.post(f"{WS}/snapshots/", manifest(("a.py", TRAIN, 0o644), ("b.py", TRAIN, 0o644)), format="json")
    again = owner_api.post(f"{WS}/snapshots/", manifest(("b.py", TRAIN, 0o664), ("a.py", TRAIN, 0o600)), format="json")
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["sha256"] == again.json()["sha256"]


def test_missing_blobs_are_named(owner_api, workspace):
    upload(owner_api, TRAIN)
    response = owner_api.post(f"{WS}/snapshots/", manifest(("train.py", TRAIN, 0o644), ("README.md", README, 0o644)),
                              format="json")
    error = assert_error(response, 400, "MissingBlobs", "files.1.sha256")
    assert [detail["target"] for detail in error["details"]] == ["files.1.sha256"]
    assert sha(README) in error["details"][0]["message"]


def test_list_and_show(owner_api, workspace):
    upload(owner_api, TRAIN)
    made = owner_api.post(f"{WS}/snapshots/", manifest(("train.py", TRAIN, 0o644)), format="json").json()
    page = owner_api.get(f"{WS}/snapshots/").json()
    assert page["count"] == 1 and "files" not in page["results"][0]
    assert page["results"][0]["sha256"] == made["sha256"]
    shown = owner_api.get(f"{WS}/snapshots/{made['sha256']}/")
    assert shown.json() == made and shown["ETag"]
    assert_error(owner_api.get(f"{WS}/snapshots/{'0' * 64}/"), 404, "NotFound")


def test_an_archive_becomes_the_same_snapshot_as_its_manifest(owner_api, workspace):
    response = post_archive(owner_api, targz({"src/train.py": TRAIN, "README.md": README}, prefix="./"))
    assert response.status_code == 201, response.json()
    body = response.json()
    assert set(body) == {"path", "sha256", "size"}  # API.md's answer
    assert (body["path"], body["size"]) == (f"azureml://uploads/{body['sha256']}", len(TRAIN) + len(README))
    from_manifest = owner_api.post(f"{WS}/snapshots/", manifest(("src/train.py", TRAIN, 0o644), ("README.md", README, 0o644)),
                                   format="json")
    assert (from_manifest.status_code, from_manifest.json()["sha256"]) == (200, body["sha256"])


def test_the_same_content_packed_again_answers_200_with_the_same_path(owner_api, workspace):
    first = post_archive(owner_api, targz({"train.py": TRAIN}, mtime=1))
    again = post_archive(owner_api, targz({"train.py": TRAIN}, mtime=999_999))
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json() == again.json()


def test_folders_and_modes_in_an_archive(owner_api, workspace):
    folder = tarfile.TarInfo("./src")
    folder.type = tarfile.DIRTYPE
    script = tarfile.TarInfo("./src/run.sh")
    script.size, script.mode = 4, 0o700
    body = targz({".": member(".", tarfile.DIRTYPE), "./src": (folder, None), "./src/run.sh": (script, b"ls\n\n")})
    made = post_archive(owner_api, body).json()
    shown = owner_api.get(f"{WS}/snapshots/{made['sha256']}/").json()
    assert shown["files"] == [{"path": "src/run.sh", "sha256": sha(b"ls\n\n"), "mode": 0o755}]
    # its blobs are the workspace's now: known, downloadable
    assert owner_api.post(f"{WS}/blobs/", {"sha256": sha(b"ls\n\n"), "size": 4}, format="json").json()["complete"] is True
