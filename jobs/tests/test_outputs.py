"""A local job's ./outputs: listed and downloaded through the API, read as hostile (links, FIFOs, escapes refused)."""
import os
from pathlib import Path

import pytest

from jobs import files
from jobs.models import Job
from jobs.tests.support import IMAGE

pytestmark = pytest.mark.usefixtures("local_compute")
URL = "/api/v1/workspaces/team-a/jobs/"


@pytest.fixture
def job_dir(settings, tmp_path):
    settings.DOCKYARD_JOB_DIR = tmp_path / "jobs"
    return settings.DOCKYARD_JOB_DIR


@pytest.fixture
def done(owner_api, job_dir) -> Job:
    """A local job whose process left files in ./outputs (written here as its command would have)."""
    response = owner_api.post(URL, {"name": "done", "command": "echo", "compute": "local"}, format="json")
    assert response.status_code == 201, response.json()
    job = Job.objects.get(name="done")
    outputs = files.run_folder(job) / files.WORKDIR / files.OUTPUTS
    (outputs / "model").mkdir(parents=True)
    (outputs / "helloworld.txt").write_text("hello\n")
    (outputs / "model" / "weights.bin").write_bytes(b"\0\1\2")
    return job


def error_of(response, status: int, target: str | None = None) -> dict:
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert error["message"]
    if target:
        assert [row["target"] for row in error["details"]] == [target], error
    return error


def test_the_files_a_local_job_left_are_listed(owner_api, done):
    response = owner_api.get(f"{URL}done/outputs/")
    assert response.status_code == 200, response.json()
    assert response.json() == [{"name": "helloworld.txt", "path": "helloworld.txt", "size": 6, "output": None},
                               {"name": "weights.bin", "path": "model/weights.bin", "size": 3, "output": None}]


def test_one_file_downloads_as_an_attachment(owner_api, done):
    response = owner_api.get(f"{URL}done/outputs/", {"path": "model/weights.bin"})
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"\0\1\2"
    assert response["Content-Disposition"] == 'attachment; filename="weights.bin"'
    assert response["Content-Type"] == "application/octet-stream"


def test_a_reader_may_read_outputs(api_as, users, done):
    assert api_as("reader").get(f"{URL}done/outputs/").status_code == 200


def test_a_job_that_has_not_started_has_no_outputs_yet(owner_api, job_dir):
    assert owner_api.post(URL, {"name": "later", "command": "echo", "compute": "local"}, format="json").status_code == 201
    response = owner_api.get(f"{URL}later/outputs/")
    assert (response.status_code, response.json()) == (200, [])


def test_a_kubernetes_job_says_its_outputs_are_not_kept(owner_api, k8s):
    assert owner_api.post(URL, {"name": "pod", "command": "echo", "compute": "k8s", "environment": {"image": IMAGE}},
                          format="json").status_code == 201
    error = error_of(owner_api.get(f"{URL}pod/outputs/"), 409)
    assert error["code"] == "OutputsNotKept" and "Kubernetes" in error["message"]


@pytest.mark.parametrize("path", [
    "../output.log", "model/../../run.pid", "/etc/passwd", "", "./helloworld.txt", "model//weights.bin",
    "model\\weights.bin", "hello\0world", "a" * 5000,
])
def test_paths_that_leave_the_outputs_folder_are_refused(owner_api, done, path):
    error = error_of(owner_api.get(f"{URL}done/outputs/", {"path": path}), 400, "path")
    assert error["code"] == "InvalidPath"


def test_a_link_out_of_the_folder_is_neither_listed_nor_served(owner_api, done, tmp_path):
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host secret")
    outputs = files.run_folder(done) / files.WORKDIR / files.OUTPUTS
    (outputs / "leak.txt").symlink_to(secret)
    (outputs / "etc").symlink_to(tmp_path)
    assert {row["path"] for row in owner_api.get(f"{URL}done/outputs/").json()} == {"helloworld.txt", "model/weights.bin"}
    for path in ("leak.txt", "etc/host-secret.txt"):
        response = owner_api.get(f"{URL}done/outputs/", {"path": path})
        assert b"host secret" not in response.content
        error_of(response, 400, "path")


def test_outputs_replaced_by_a_link_serve_nothing(owner_api, done, tmp_path):
    outputs = files.run_folder(done) / files.WORKDIR / files.OUTPUTS
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "helloworld.txt").write_text("not the job's")
    os.rename(outputs, outputs.with_name("old"))
    outputs.symlink_to(tmp_path / "elsewhere")
    assert error_of(owner_api.get(f"{URL}done/outputs/"), 409)["code"] == "OutputsUnreadable"
    error_of(owner_api.get(f"{URL}done/outputs/", {"path": "helloworld.txt"}), 400, "path")


def test_a_fifo_or_a_folder_is_refused_without_waiting(owner_api, done):
    outputs = files.run_folder(done) / files.WORKDIR / files.OUTPUTS
    os.mkfifo(outputs / "pipe")
    assert "pipe" not in {row["name"] for row in owner_api.get(f"{URL}done/outputs/").json()}
    error_of(owner_api.get(f"{URL}done/outputs/", {"path": "pipe"}), 400, "path")
    error_of(owner_api.get(f"{URL}done/outputs/", {"path": "model"}), 400, "path")


def test_a_missing_file_is_a_404_in_the_error_shape(owner_api, done):
    error = error_of(owner_api.get(f"{URL}done/outputs/", {"path": "model/nothing.bin"}), 404)
    assert "nothing.bin" in error["message"]


def test_the_list_is_bounded(owner_api, done, settings):
    settings.DOCKYARD_JOB_OUTPUTS_MAX_LIST = 1
    assert len(owner_api.get(f"{URL}done/outputs/").json()) == 1


def test_listing_outputs_takes_a_bounded_number_of_queries(owner_api, done, django_assert_max_num_queries):
    with django_assert_max_num_queries(8):
        assert owner_api.get(f"{URL}done/outputs/").status_code == 200


# The working folder made before the command starts


def test_outputs_and_declared_output_folders_are_made_before_the_command(owner_api, job_dir):
    body = {"name": "hello-world-output", "compute": "local", "command": "echo hello > ./outputs/helloworld.txt",
            "outputs": {"model": {"type": "uri_folder"}, "score": {"type": "uri_file"}}}
    assert owner_api.post(URL, body, format="json").status_code == 201
    job = Job.objects.get(name="hello-world-output")
    workdir = files.run_folder(job) / files.WORKDIR
    files.prepare_workdir(job, workdir)
    assert (workdir / "outputs").is_dir() and (workdir / "outputs" / "model").is_dir()
    assert not (workdir / "outputs" / "score").exists()  # a uri_file output names a file the command writes


def test_the_folder_belongs_to_one_job_record(owner_api, job_dir):
    """Issue 10 item 17: a job made again with a deleted job's name does not find the old job's folder."""
    assert owner_api.post(URL, {"name": "again", "command": "echo", "compute": "local"}, format="json").status_code == 201
    first = Job.objects.get(name="again")
    old = files.run_folder(first)
    old.mkdir(parents=True)
    (old / "exit_code").write_text("0\n")
    Job.objects.filter(pk=first.pk).delete()
    assert owner_api.post(URL, {"name": "again", "command": "echo", "compute": "local"}, format="json").status_code == 201
    second = Job.objects.get(name="again")
    assert files.run_folder(second) != old and not files.run_folder(second).exists()


def test_a_folder_another_record_left_is_cleared_not_adopted(owner_api, job_dir):
    """Ids may come back (a database restored beside an old var/): the folder's owner mark must match the record."""
    assert owner_api.post(URL, {"name": "mine", "command": "echo", "compute": "local"}, format="json").status_code == 201
    job = Job.objects.get(name="mine")
    folder = files.run_folder(job)
    for mark in ("999 2020-01-01T00:00:00+00:00\n", None):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "exit_code").write_text("0\n")
        if mark:
            (folder / files.OWNER).write_text(mark)
        else:
            (folder / files.OWNER).unlink()
        assert files.claim_run_folder(job) == folder and not (folder / "exit_code").exists()
        assert (folder / files.OWNER).read_text() == files.owner_mark(job)
    (folder / "run.pid").write_text("123\n")
    files.claim_run_folder(job)
    assert (folder / "run.pid").exists()  # its own folder is kept: a start that crashed is adopted from it


# The code folder copied in


@pytest.fixture
def code(tmp_path) -> Path:
    source = tmp_path / "src"
    (source / "pkg" / "__pycache__").mkdir(parents=True)
    (source / "train.py").write_text("print('train')\n")
    (source / "data.csv").write_text("a,b\n")
    (source / "pkg" / "model.py").write_text("x = 1\n")
    (source / "pkg" / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"\0")
    (source / "pkg" / "notes.tmp").write_text("scratch")
    (source / "pkg" / "keep.tmp").write_text("kept")
    return source


def copied(source: Path, target: Path) -> set[str]:
    files.copy_code(source, target)
    return {str(path.relative_to(target)) for path in target.rglob("*") if not path.is_dir()}


def test_gitignore_rules_apply_in_nested_folders(code, tmp_path):
    (code / ".gitignore").write_text("__pycache__/\n*.csv\n")
    (code / "pkg" / ".gitignore").write_text("*.tmp\n!keep.tmp\n")
    assert copied(code, tmp_path / "out") == {".gitignore", "train.py", "pkg/.gitignore", "pkg/model.py", "pkg/keep.tmp"}


def test_amlignore_is_used_instead_of_gitignore(code, tmp_path):
    (code / ".gitignore").write_text("*.py\n")
    (code / ".amlignore").write_text("data.csv\npkg/\n")
    assert copied(code, tmp_path / "out") == {".gitignore", ".amlignore", "train.py"}


def test_links_out_of_the_code_folder_are_not_followed(code, tmp_path):
    (tmp_path / "host.txt").write_text("host file")
    (code / "escape.txt").symlink_to(tmp_path / "host.txt")
    (code / "escape-dir").symlink_to(tmp_path)
    (code / "inside.py").symlink_to("train.py")
    _, _, skipped = files.copy_code(code, tmp_path / "out")
    out = tmp_path / "out"
    assert skipped == 2 and not (out / "escape.txt").exists() and not (out / "escape-dir").exists()
    assert os.readlink(out / "inside.py") == "train.py"


def test_the_copy_is_bounded(code, tmp_path, settings):
    settings.DOCKYARD_JOB_CODE_MAX_FILES = 3
    with pytest.raises(files.FileRefused, match="DOCKYARD_JOB_CODE_MAX_FILES"):
        files.copy_code(code, tmp_path / "out")
    settings.DOCKYARD_JOB_CODE_MAX_FILES, settings.DOCKYARD_JOB_CODE_MAX_BYTES = 100, 10
    with pytest.raises(files.FileRefused, match="DOCKYARD_JOB_CODE_MAX_BYTES"):
        files.copy_code(code, tmp_path / "out2")


def test_setuid_bits_are_not_copied(code, tmp_path):
    os.chmod(code / "train.py", 0o4755)
    files.copy_code(code, tmp_path / "out")
    assert (tmp_path / "out" / "train.py").stat().st_mode & 0o7777 == 0o755
