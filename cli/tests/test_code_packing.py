"""`code: ./src` packed by the CLI as Azure ML packs it (ignore files, no links out), deterministically, uploaded once."""
import gzip
import io
import os
import tarfile

import pytest

from assets.models import Snapshot
from cli.resources import uploads
from cli.tests.support import write_yaml
from jobs.models import Job

HELLO = {"$schema": "https://azuremlschemas.azureedge.net/latest/commandJob.schema.json", "type": "command",
         "command": "python main.py", "compute": "local"}


@pytest.fixture
def src(tmp_path):
    folder = tmp_path / "project" / "src"
    (folder / "pkg").mkdir(parents=True)
    (folder / "main.py").write_text("import pkg.helper\n")
    (folder / "pkg" / "helper.py").write_text("VALUE = 1\n")
    (folder / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(folder / "run.sh", 0o775)
    os.chmod(folder / "main.py", 0o600)
    return folder


def paths(packed: uploads.Packed) -> list[str]:
    return [item.path for item in packed.files]


def test_amlignore_wins_over_gitignore_and_nested_files_apply_below_their_folder(src):
    (src / ".gitignore").write_text("*.py\n")
    (src / ".amlignore").write_text("*.log\n!keep.log\n")
    (src / "debug.log").write_text("x")
    (src / "keep.log").write_text("x")
    (src / "pkg" / ".gitignore").write_text("helper.py\n")
    (src / "data").mkdir()
    (src / "data" / "big.bin").write_text("x")
    (src / "data" / ".amlignore").write_text("*.bin\n")

    packed = uploads.pack(src)

    assert paths(packed) == [".amlignore", ".gitignore", "data/.amlignore", "keep.log", "main.py", "pkg/.gitignore",
                             "run.sh"]


def test_gitignore_applies_when_there_is_no_amlignore(src):
    (src / ".gitignore").write_text("__pycache__/\n*.pyc\n")
    (src / "__pycache__").mkdir()
    (src / "__pycache__" / "main.cpython-312.pyc").write_text("x")
    (src / "pkg" / "helper.pyc").write_text("x")

    assert paths(uploads.pack(src)) == [".gitignore", "main.py", "pkg/helper.py", "run.sh"]


def test_the_same_folder_gives_the_same_sha_and_the_same_bytes_whatever_the_times_and_modes(src):
    first = uploads.pack(src)
    first_bytes = uploads.archive(first)
    os.utime(src / "main.py", (1, 1))
    os.chmod(src / "pkg" / "helper.py", 0o640)  # no execute bit either way: the same 0644
    second = uploads.pack(src)

    assert second.sha256 == first.sha256
    assert uploads.archive(second) == first_bytes
    assert first_bytes[4:8] == b"\0\0\0\0"  # gzip's mtime
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(first_bytes))) as tar:
        members = tar.getmembers()
    assert [member.name for member in members] == ["main.py", "pkg/helper.py", "run.sh"]
    assert {(member.mtime, member.uid, member.gid, member.uname, member.gname) for member in members} == {(0, 0, 0, "", "")}
    assert [oct(member.mode) for member in members] == ["0o644", "0o644", "0o755"]


def test_a_change_of_content_or_executable_bit_changes_the_sha(src):
    before = uploads.pack(src).sha256
    os.chmod(src / "main.py", 0o700)
    executable = uploads.pack(src).sha256
    (src / "main.py").write_text("import pkg.helper  # changed\n")

    assert len({before, executable, uploads.pack(src).sha256}) == 3


def test_links_out_of_the_folder_are_left_behind_and_links_inside_are_sent_as_files(src, tmp_path):
    (tmp_path / "secret.txt").write_text("not code")
    (src / "out.txt").symlink_to(tmp_path / "secret.txt")
    (src / "escape").symlink_to(tmp_path)
    (src / "same.py").symlink_to("main.py")
    os.mkfifo(src / "fifo")

    packed = uploads.pack(src)

    assert paths(packed) == ["main.py", "pkg/helper.py", "run.sh", "same.py"]
    assert sorted(packed.skipped) == ["escape", "fifo", "out.txt"]
    with tarfile.open(fileobj=io.BytesIO(uploads.archive(packed))) as tar:
        assert all(member.isreg() for member in tar.getmembers())
        assert tar.extractfile("same.py").read() == b"import pkg.helper\n"


def test_the_clis_sha_is_the_servers_snapshot_id(owner_api, workspace, src):
    packed = uploads.pack(src)
    response = owner_api.generic("POST", "/api/v1/workspaces/team-a/uploads/", uploads.archive(packed),
                                 content_type="application/gzip")

    assert response.status_code == 201, response.json()
    assert response.json()["sha256"] == packed.sha256


def test_job_create_uploads_the_code_once_and_sends_its_reference(dockyard, workspace, src, monkeypatch):
    path = write_yaml(src.parent / "job.yml", {**HELLO, "name": "coded", "code": "./src"})
    monkeypatch.chdir(src.parent.parent)  # not the YAML's folder: `code: ./src` is still the folder next to it
    workspace.local_compute_enabled = True
    workspace.save(update_fields=["local_compute_enabled"])

    first = dockyard("job", "create", "-f", str(path))
    second = dockyard("job", "create", "-f", str(path), "--name", "again")

    assert first.exit_code == 0, first.stderr
    sha256 = uploads.pack(src).sha256
    assert Job.objects.get(name="coded").spec["code"] == f"azureml://uploads/{sha256}"
    assert f"uploaded 3 files, 0.0 MB (azureml://uploads/{sha256})" in first.stderr
    assert second.exit_code == 0, second.stderr
    assert "code unchanged, not uploaded" in second.stderr
    assert Job.objects.get(name="again").spec["code"] == f"azureml://uploads/{sha256}"
    assert Snapshot.objects.filter(workspace=workspace).count() == 1


def test_apply_uploads_the_code_and_a_second_apply_is_unchanged_without_an_upload(dockyard, workspace, src):
    workspace.local_compute_enabled = True
    workspace.save(update_fields=["local_compute_enabled"])
    path = write_yaml(src.parent / "job.yml", {**HELLO, "name": "applied", "code": "src"})

    dry = dockyard("apply", "-f", str(path), "--dry-run")
    assert dry.exit_code == 0, dry.stderr
    assert not Snapshot.objects.exists()  # a dry run computes the reference, sends nothing

    first = dockyard("apply", "-f", str(path))
    second = dockyard("apply", "-f", str(path))

    assert first.exit_code == 0, first.stderr
    assert "job/applied created" in first.stdout
    assert second.exit_code == 0, second.stderr
    assert "job/applied unchanged" in second.stdout and "code unchanged, not uploaded" in second.stderr


def test_a_missing_code_folder_is_said_before_anything_is_sent(dockyard, workspace, tmp_path):
    path = write_yaml(tmp_path / "job.yml", {**HELLO, "code": "./nowhere"})

    result = dockyard("job", "create", "-f", str(path))

    assert result.exit_code != 0
    assert "nowhere" in result.stderr
    assert not Job.objects.exists()


def test_an_absolute_path_that_is_not_here_is_left_for_the_server(tmp_path):
    from cli.resources.uploads import uploaded_field

    assert uploaded_field(None, "team-a", tmp_path, "/var/azureml-app/adder") == "/var/azureml-app/adder"
    assert uploaded_field(None, "team-a", tmp_path, "azureml:code:1") == "azureml:code:1"
