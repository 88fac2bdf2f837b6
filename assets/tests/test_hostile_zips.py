"""Hostile .zip uploads: each answers 400 in the error shape and writes nothing (no record, no stored byte).

The same rules as a .tar.gz (paths never leave the folder, links and special files refused, expanded size and member
count bounded), and what only a zip can do: symlinks hidden in external attributes, members that share bytes (bombs
without recursion), sizes declared other than the bytes, encrypted members, names that hide a NUL, and a central
directory too large to parse.
"""
import stat
import struct
import tarfile
import zipfile

import pytest

from assets.models import Snapshot
from assets.specs import snapshots as spec
from assets.tests.conftest import stored_keys
from assets.tests.support import post_archive, records, sha, targz, upload, zipped
from tests.support import assert_error

DATA = b"print('hi')\n"
SCRIPT = b"#!/bin/sh\necho hi\n"
NOISE = b"".join(sha(str(index).encode()).encode() for index in range(2000))
ZIP = "application/zip"
LOCAL, CENTRAL = b"PK\x03\x04", b"PK\x01\x02"


@pytest.fixture
def uploaded(owner_api, workspace, own_store):
    """One blob uploaded (DATA); what the workspace and the storage hold then."""
    upload(owner_api, DATA)
    return records(), stored_keys()


def patched(body: bytes, *, local: dict[int, bytes], central: dict[int, bytes]) -> bytes:
    """Overwrite fields of every local header and central directory record (offset in the record -> bytes)."""
    data = bytearray(body)
    for signature, fields in ((LOCAL, local), (CENTRAL, central)):
        at = data.find(signature)
        while at >= 0:
            for offset, value in fields.items():
                data[at + offset:at + offset + len(value)] = value
            at = data.find(signature, at + 4)
    return bytes(data)


def with_flags(body: bytes, flags: int) -> bytes:
    return patched(body, local={6: struct.pack("<H", flags)}, central={8: struct.pack("<H", flags)})


def with_method(body: bytes, method: int) -> bytes:
    return patched(body, local={8: struct.pack("<H", method)}, central={10: struct.pack("<H", method)})


def with_declared_size(body: bytes, size: int) -> bytes:
    return patched(body, local={22: struct.pack("<I", size)}, central={24: struct.pack("<I", size)})


def overlapping() -> bytes:
    """Two directory records naming the same local member (how bombs without recursion multiply one member)."""
    body = zipped({"a.bin": NOISE})
    start = body.find(CENTRAL)
    end = body.find(b"PK\x05\x06")
    record = body[start:end]
    twin = record.replace(b"a.bin", b"b.bin")
    eocd = bytearray(body[end:])
    eocd[8:12] = struct.pack("<HH", 2, 2)
    eocd[12:16] = struct.pack("<I", 2 * len(record))
    return body[:start] + record + twin + bytes(eocd)


ZIPS = {
    "parent": (zipped({"ok.py": DATA, "../evil.py": DATA}), "InvalidPath"),
    "deep-parent": (zipped({"src/../../evil.py": DATA}), "InvalidPath"),
    "absolute": (zipped({"/etc/cron.d/evil": DATA}), "InvalidPath"),
    "backslash": (zipped({"src\\..\\..\\evil.py": DATA}), "InvalidPath"),
    "control": (zipped({"a\nb.py": DATA}), "InvalidPath"),
    "nul-in-name": (zipped({"aZb.py": DATA}).replace(b"aZb.py", b"a\x00b.py"), "InvalidPath"),
    "folder-escape": (zipped({"../x/": b""}), "InvalidPath"),
    "duplicate": (zipped({"a.py": DATA, "./a.py": DATA}), "InvalidPath"),
    "file-and-folder": (zipped({"a": DATA, "a/b.py": DATA}), "InvalidPath"),
    "symlink-out": (zipped({"ok.py": DATA, "link": b"/etc/passwd"}, modes={"link": stat.S_IFLNK | 0o777}), "LinkRefused"),
    "symlink-up": (zipped({"link": b"../../outside"}, modes={"link": stat.S_IFLNK | 0o777}), "LinkRefused"),
    "fifo": (zipped({"pipe": b""}, modes={"pipe": stat.S_IFIFO | 0o644}), "InvalidPath"),
    "device": (zipped({"zero": b""}, modes={"zero": stat.S_IFCHR | 0o644}), "InvalidPath"),
    "encrypted": (with_flags(zipped({"a.py": DATA}), 0x1), "EncryptedArchive"),
    "strongly-encrypted": (with_flags(zipped({"a.py": DATA}), 0x41), "EncryptedArchive"),
    "unknown-method": (with_method(zipped({"a.py": DATA}), 99), "InvalidArchive"),
    "declares-less": (with_declared_size(zipped({"a.bin": NOISE}), 100), "InvalidArchive"),
    "declares-more": (with_declared_size(zipped({"a.bin": DATA}), 10_000), "InvalidArchive"),
    "overlapping": (overlapping(), "InvalidArchive"),
    "not-zip": (b"just some text", "InvalidArchive"),
    "tar-gz-as-zip": (targz({"a.py": DATA}), "InvalidArchive"),
    "truncated": (zipped({"a.bin": NOISE})[:-30], "InvalidArchive"),
    "damaged-directory": (zipped({"a.py": DATA}).replace(CENTRAL, b"PK\x09\x09"), "InvalidArchive"),
}


@pytest.mark.parametrize("name", list(ZIPS))
def test_a_hostile_zip_is_refused_and_nothing_is_stored(name, owner_api, uploaded):
    body, code = ZIPS[name]
    assert_error(post_archive(owner_api, body, ZIP), 400, code)
    assert (records(), stored_keys()) == uploaded


def test_a_zip_bomb_stops_before_it_is_expanded(owner_api, uploaded, settings):
    settings.DOCKYARD_SNAPSHOT_MAX_BYTES = 1024 * 1024
    bomb = zipped({"zeros.bin": bytes(100 * 1024 * 1024)})  # 100 MB of zeros, ~100 KB compressed
    assert len(bomb) < 200 * 1024
    assert_error(post_archive(owner_api, bomb, ZIP), 400, "SnapshotTooLarge")
    assert (records(), stored_keys()) == uploaded


@pytest.mark.parametrize("setting, value, code", [
    ("DOCKYARD_SNAPSHOT_MAX_FILES", 2, "TooManyFiles"),
    ("DOCKYARD_ARTIFACT_MAX_BYTES", len(DATA) - 1, "BlobTooLarge"),
    ("DOCKYARD_SNAPSHOT_MAX_BYTES", 2 * len(DATA), "SnapshotTooLarge"),
])
def test_a_zip_past_a_limit_is_refused(setting, value, code, owner_api, uploaded, settings):
    setattr(settings, setting, value)
    assert_error(post_archive(owner_api, zipped({"a.py": DATA, "b.py": DATA, "c.py": DATA}), ZIP), 400, code)
    assert (records(), stored_keys()) == uploaded


def test_a_directory_of_many_folders_is_counted_before_it_is_parsed(owner_api, uploaded, settings):
    settings.DOCKYARD_SNAPSHOT_MAX_FILES = 2
    folders = {f"d{index}/": b"" for index in range(2 * 2 + 17)}
    assert_error(post_archive(owner_api, zipped(folders), ZIP), 400, "TooManyFiles")
    assert (records(), stored_keys()) == uploaded


def test_a_zip_and_a_tar_gz_of_the_same_folder_are_one_snapshot(owner_api, workspace, own_store):
    script = tarfile.TarInfo("run.sh")
    script.size, script.mode = len(SCRIPT), 0o755
    first = post_archive(owner_api, targz({"src/train.py": DATA, "run.sh": (script, SCRIPT)}))
    assert first.status_code == 201, first.content
    executable = {"run.sh": stat.S_IFREG | 0o755}
    for method in (zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED):
        again = post_archive(owner_api, zipped({"run.sh": SCRIPT, "src/train.py": DATA}, modes=executable, method=method), ZIP)
        assert again.status_code == 200 and again.json()["path"] == first.json()["path"]
    snapshot = Snapshot.objects.get(sha256=first.json()["sha256"])
    assert sorted(snapshot.files) == [["run.sh", sha(SCRIPT), 0o755], ["src/train.py", sha(DATA), 0o644]]


def test_a_zip_made_on_windows_holds_plain_files(owner_api, workspace, own_store):
    response = post_archive(owner_api, zipped({"data/iris.csv": b"1,2\n", "data/": b""}), ZIP)
    assert response.status_code == 201, response.content
    expected = spec.snapshot_id([spec.Entry("data/iris.csv", sha(b"1,2\n"), 0o644)])
    assert response.json()["sha256"] == expected
