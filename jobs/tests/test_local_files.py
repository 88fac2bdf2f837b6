"""Local jobs end to end with their files: ./outputs made and kept, `code:` copied in, one folder per job record.

A real Celery worker and real processes, as test_local_jobs.py. Where bubblewrap is not installed the command runs
without the sandbox (these tests are about the job's folder; test_sandbox_attacks.py covers the sandbox itself).
"""
import os
from pathlib import Path

import pytest

from jobs import files
from jobs.models import Job
from jobs.reconcile import local
from jobs.tests.test_local_jobs import BASE, ended, job_dir, log_of, submit, wait_for, worker  # noqa: F401 (fixtures)

pytestmark = pytest.mark.usefixtures("local_compute", "worker")


@pytest.fixture(autouse=True)
def sandbox_where_installed(monkeypatch):
    if not os.access("/usr/bin/bwrap", os.X_OK):
        monkeypatch.setattr(local, "_sandbox", lambda job, workdir: None)


@pytest.fixture
def shared(settings, tmp_path) -> Path:
    """A folder the server shares with local jobs (DOCKYARD_LOCAL_PATHS), holding a code folder."""
    root = tmp_path / "shared"
    code = root / "src"
    (code / "pkg").mkdir(parents=True)
    (code / "train.sh").write_text('echo "training with $(cat pkg/settings.txt)"\necho model > outputs/model.txt\n')
    (code / "pkg" / "settings.txt").write_text("lr=0.1\n")
    (code / "big.bin").write_bytes(b"x" * 100)
    (code / ".amlignore").write_text("*.bin\n")
    settings.DOCKYARD_LOCAL_PATHS = [root]
    return root


def test_hello_world_output_writes_to_outputs_and_lists_it(owner_api):
    name = submit(owner_api, name="hello-world-output", command="echo hello > ./outputs/helloworld.txt")
    job = ended(owner_api, name)
    assert job["status"] == "Completed", (job["status_reason"], log_of(owner_api, name))
    assert owner_api.get(f"{BASE}/{name}/outputs/").json() == [{"name": "helloworld.txt", "path": "helloworld.txt", "size": 6,
                                                                   "output": None}]
    response = owner_api.get(f"{BASE}/{name}/outputs/", {"path": "helloworld.txt"})
    assert b"".join(response.streaming_content) == b"hello\n"


def test_the_code_folder_is_copied_in_without_what_amlignore_lists(owner_api, shared):
    name = submit(owner_api, command="sh train.sh; ls", code=str(shared / "src"))
    job = ended(owner_api, name)
    assert job["status"] == "Completed", (job["status_reason"], log_of(owner_api, name))
    assert log_of(owner_api, name) == ["training with lr=0.1", "outputs", "pkg", "train.sh"]
    assert [row["path"] for row in owner_api.get(f"{BASE}/{name}/outputs/").json()] == ["model.txt"]
    events = owner_api.get(f"{BASE}/{name}/events").json()["results"]
    assert any(event["reason"] == "CodeCopied" and "Copied 3 files" in event["message"] for event in events), events


def test_a_code_folder_no_longer_shared_fails_the_job_with_the_reason(owner_api, shared, settings, monkeypatch):
    from jobs import services

    monkeypatch.setattr(services, "_enqueue", lambda job: None)
    name = submit(owner_api, command="sh train.sh", code=str(shared / "src"))
    settings.DOCKYARD_LOCAL_PATHS = []  # the server stopped sharing it after the job was posted
    from jobs.tasks import reconcile_job

    reconcile_job.delay(Job.objects.get(name=name).pk)
    job = ended(owner_api, name)
    assert job["status"] == "Failed" and "DOCKYARD_LOCAL_PATHS" in job["status_reason"]


def test_a_job_made_again_with_a_deleted_jobs_name_runs_fresh(owner_api):
    """Issue 10 item 17: the old folder (its exit code, its log) is gone with its record and never adopted."""
    submit(owner_api, name="again", command="echo first; exit 3")
    assert ended(owner_api, "again")["exit_code"] == 3
    old = files.run_folder(Job.objects.get(name="again"))
    assert owner_api.delete(f"{BASE}/again/").status_code == 202
    wait_for(lambda: not Job.objects.filter(name="again").exists(), 15, "the row's removal")
    assert not old.exists()
    submit(owner_api, name="again", command="echo second")
    job = ended(owner_api, "again")
    assert (job["status"], job["exit_code"]) == ("Completed", 0), job["status_reason"]
    assert log_of(owner_api, "again") == ["second"]


def test_a_data_input_under_the_shared_folders_is_readable_in_the_sandbox(owner_api, shared):
    (shared / "cifar").mkdir()
    (shared / "cifar" / "labels.txt").write_text("cat dog\n")
    name = submit(owner_api, command="cat ${{inputs.training_data}}/labels.txt",
                  inputs={"training_data": {"path": str(shared / "cifar"), "mode": "ro_mount"}})
    job = ended(owner_api, name)
    assert job["status"] == "Completed", (job["status_reason"], log_of(owner_api, name))
    assert log_of(owner_api, name) == ["cat dog"]
