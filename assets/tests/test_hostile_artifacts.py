"""Hostile manifests and archives: each answers 4xx in the error shape and writes nothing (no record, no stored byte).

Paths must never leave the folder whatever unpacks them later (a tar, a shell loop, Windows); archives are bounded in
expanded size, member count and header size; links, devices and pipes are refused.
"""
import gzip
import io
import tarfile

import pytest

from assets.tests.conftest import stored_keys
from assets.tests.support import WS, member, post_archive, records, sha, targz, upload
from tests.support import assert_error

DATA = b"print('hi')\n"
NOISE = b"".join(sha(str(index).encode()).encode() for index in range(2000))  # 128 KB that gzip cannot shrink much


@pytest.fixture
def uploaded(owner_api, workspace, own_store):
    """One blob uploaded (DATA); what the workspace and the storage hold then."""
    upload(owner_api, DATA)
    return records(), stored_keys()


BAD_PATHS = [
    "../evil.py", "a/../../evil.py", "..", "/etc/passwd", "//server/share/x", "C:/Windows/x.py", "c:evil.py",
    "a\\..\\..\\evil.py", "a\\b", "a\x00b", "a\nb", "a\x1b[2Jb", "", ".", "./a.py", "a/./b.py", "a//b.py", "a/",
    "x" * 1025, "/".join(["d"] * 32) + "/f.py", "d/" + "é" * 128,
]


@pytest.mark.parametrize("path", BAD_PATHS, ids=[repr(path)[:40] for path in BAD_PATHS])
def test_a_manifest_path_that_could_leave_the_folder_is_refused(path, owner_api, uploaded):
    body = {"files": [{"path": "ok.py", "sha256": sha(DATA)}, {"path": path, "sha256": sha(DATA)}]}
    response = owner_api.post(f"{WS}/snapshots/", body, format="json")
    # (the JSON parser refuses NUL in any field first)
    assert_error(response, 400, "InvalidBody" if "\x00" in path else "InvalidManifest", "files.1.path")
    assert (records(), stored_keys()) == uploaded


@pytest.mark.parametrize("files, code, target", [
    ([{"path": "a.py", "sha256": sha(DATA)}, {"path": "a.py", "sha256": sha(DATA)}], "InvalidManifest", "files.1.path"),
    ([{"path": "a", "sha256": sha(DATA)}, {"path": "a/b.py", "sha256": sha(DATA)}], "InvalidManifest", "files.1.path"),
    ([{"path": "a.py", "sha256": "A" * 64}], "InvalidManifest", "files.0.sha256"),
    ([{"path": "a.py", "sha256": sha(DATA), "mode": -1}], "InvalidManifest", "files.0.mode"),
    ([{"path": "a.py", "sha256": sha(DATA), "mode": True}], "InvalidManifest", "files.0.mode"),
    ([{"path": "a.py", "sha256": sha(DATA), "mode": "0755"}], "InvalidManifest", "files.0.mode"),
    ([{"path": "a.py", "sha256": sha(DATA), "symlink": "/etc"}], "InvalidManifest", "files.0"),
    (["a.py"], "InvalidManifest", "files.0"),
    ({"a.py": sha(DATA)}, "InvalidManifest", "files"),
    ([{"path": "a.py", "sha256": sha(b"never uploaded")}], "MissingBlobs", "files.0.sha256"),
])
def test_a_bad_manifest_is_refused(files, code, target, owner_api, uploaded):
    assert_error(owner_api.post(f"{WS}/snapshots/", {"files": files}, format="json"), 400, code, target)
    assert (records(), stored_keys()) == uploaded


def test_too_many_files_are_refused_before_they_are_read(owner_api, uploaded, settings):
    settings.DOCKYARD_SNAPSHOT_MAX_FILES = 3
    files = [{"path": f"f{index}.py", "sha256": sha(DATA)} for index in range(4)]
    assert_error(owner_api.post(f"{WS}/snapshots/", {"files": files}, format="json"), 400, "TooManyFiles", "files")
    assert (records(), stored_keys()) == uploaded


def test_a_snapshot_over_the_size_limit_is_refused(owner_api, uploaded, settings):
    settings.DOCKYARD_SNAPSHOT_MAX_BYTES = 2 * len(DATA) - 1
    files = [{"path": f"f{index}.py", "sha256": sha(DATA)} for index in range(2)]
    assert_error(owner_api.post(f"{WS}/snapshots/", {"files": files}, format="json"), 400, "SnapshotTooLarge", "files")
    assert (records(), stored_keys()) == uploaded


def gzipped(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=1)


def pax_bomb() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("a.py")
        info.size, info.pax_headers = len(DATA), {"comment": "x" * (2 * 1024 * 1024)}
        tar.addfile(info, io.BytesIO(DATA))
    return buffer.getvalue()


ARCHIVES = {
    "parent": (targz({"ok.py": DATA, "../evil.py": DATA}), "InvalidPath"),
    "deep-parent": (targz({"src/../../evil.py": DATA}), "InvalidPath"),
    "absolute": (targz({"/etc/cron.d/evil": DATA}), "InvalidPath"),
    "backslash": (targz({"src\\..\\..\\evil.py": DATA}), "InvalidPath"),
    "control": (targz({"a\nb.py": DATA}), "InvalidPath"),
    "folder-escape": (targz({"../x": member("../x", tarfile.DIRTYPE)}), "InvalidPath"),
    "duplicate": (targz({"a.py": DATA, "./a.py": DATA}), "InvalidPath"),
    "file-and-folder": (targz({"a": DATA, "a/b.py": DATA}), "InvalidPath"),
    "symlink-out": (targz({"ok.py": DATA, "link": member("link", tarfile.SYMTYPE, linkname="/etc/passwd")}), "LinkRefused"),
    "symlink-up": (targz({"link": member("link", tarfile.SYMTYPE, linkname="../../outside")}), "LinkRefused"),
    "hardlink": (targz({"ok.py": DATA, "hard": member("hard", tarfile.LNKTYPE, linkname="ok.py")}), "LinkRefused"),
    "fifo": (targz({"pipe": member("pipe", tarfile.FIFOTYPE)}), "InvalidPath"),
    "device": (targz({"zero": member("zero", tarfile.CHRTYPE)}), "InvalidPath"),
    "not-gzip": (b"just some text", "InvalidArchive"),
    "truncated": (targz({"a.py": NOISE})[:30_000], "InvalidArchive"),
    "gzip-not-tar": (gzipped(b"\x01" * 5000), "InvalidArchive"),
    "pax-header-bomb": (pax_bomb(), "InvalidArchive"),
}


@pytest.mark.parametrize("name", list(ARCHIVES))
def test_a_hostile_archive_is_refused_and_nothing_is_stored(name, owner_api, uploaded):
    body, code = ARCHIVES[name]
    assert_error(post_archive(owner_api, body), 400, code)
    assert (records(), stored_keys()) == uploaded


def test_a_gzip_bomb_stops_at_the_limit(owner_api, uploaded, settings):
    settings.DOCKYARD_SNAPSHOT_MAX_BYTES = 1024 * 1024
    bomb = targz({"zeros.bin": bytes(100 * 1024 * 1024)})  # 100 MB of zeros, ~100 KB compressed
    assert len(bomb) < 200 * 1024
    assert_error(post_archive(owner_api, bomb), 400, "SnapshotTooLarge")
    assert (records(), stored_keys()) == uploaded


@pytest.mark.parametrize("setting, value, code", [
    ("DOCKYARD_SNAPSHOT_MAX_FILES", 2, "TooManyFiles"),
    ("DOCKYARD_ARTIFACT_MAX_BYTES", len(DATA) - 1, "BlobTooLarge"),
    ("DOCKYARD_SNAPSHOT_MAX_BYTES", 2 * len(DATA), "SnapshotTooLarge"),
])
def test_an_archive_past_a_limit_is_refused(setting, value, code, owner_api, uploaded, settings):
    setattr(settings, setting, value)
    assert_error(post_archive(owner_api, targz({"a.py": DATA, "b.py": DATA, "c.py": DATA})), 400, code)
    assert (records(), stored_keys()) == uploaded


def test_an_archive_over_the_body_limit_is_413(owner_api, uploaded, settings):
    settings.DOCKYARD_ARTIFACT_BODY_MAX_BYTES = 100
    assert_error(post_archive(owner_api, targz({"a.py": DATA * 100})), 413, "PayloadTooLarge")
    assert (records(), stored_keys()) == uploaded


@pytest.mark.parametrize("content_type", ["application/json", "application/x-tar", "text/plain"])
def test_an_archive_of_another_type_is_415(content_type, owner_api, uploaded):
    assert_error(post_archive(owner_api, targz({"a.py": DATA}), content_type), 415, "UnsupportedMediaType")
    assert (records(), stored_keys()) == uploaded
