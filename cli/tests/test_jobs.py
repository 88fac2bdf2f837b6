"""`dockyard job …` and jobs in `apply` against a real Dockyard server (pytest-django's live_server).

Most tests drive a job's status and log lines by writing to the database, as a worker would; nothing reconciles
them (`quiet_broker`). `test_create_stream_runs_local_jobs_on_a_real_worker` runs a Celery worker instead.
"""
import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from celery.contrib.testing.worker import start_worker
from django.db import connections
from django.db.models import F
from django.utils import timezone

from cli.client import ApiClient
from cli.tests.support import write_yaml
from controlplane.celery import app
from jobs import tasks
from jobs.models import Job, JobLogLine
from jobs.services import job_create

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("local_compute")]  # local: as staff would

REPO = Path(__file__).resolve().parents[2]
HELLO = {"$schema": "https://azuremlschemas.azureedge.net/latest/commandJob.schema.json", "type": "command",
         "command": "echo hello ${{inputs.who}}", "compute": "local", "inputs": {"who": "world"}}


@pytest.fixture(autouse=True)
def quiet_broker(request, monkeypatch, settings, tmp_path):
    """Submitted jobs stay as the test writes them (no reconcile is enqueued), unless the test runs a worker."""
    settings.DOCKYARD_JOB_DIR = tmp_path / "jobs"
    settings.DOCKYARD_LOG_FOLLOW_SECONDS = 2  # streams end soon, so no server thread outlives its test for long
    if "worker" not in request.fixturenames:
        monkeypatch.setattr(tasks.reconcile_job, "delay", lambda *args, **kwargs: None)


@pytest.fixture
def worker(transactional_db):
    app.control.purge()
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        yield


def submit(owner, workspace, **fields) -> Job:
    return job_create(user=owner, workspace=workspace, data={**HELLO, **fields})


def add_lines(job: Job, *texts: str, source: str = "") -> None:
    start = Job.objects.get(pk=job.pk).log_line_count
    now = timezone.now()
    JobLogLine.objects.bulk_create(
        JobLogLine(job=job, seq=start + index, source=source, text=text, time=now) for index, text in enumerate(texts)
    )
    Job.objects.filter(pk=job.pk).update(log_line_count=F("log_line_count") + len(texts))


def end(job: Job, status: str, reason: str = "", exit_code: int | None = None) -> None:
    Job.objects.filter(pk=job.pk).update(status=status, status_reason=reason, exit_code=exit_code, end_time=timezone.now())


STATUS_LINE = re.compile(r"^\[(NotStarted|Queued|Starting|Running|CancelRequested)\]")


def without_statuses(stderr: str) -> list[str]:
    """stderr's lines less the followed job's status changes (`[Queued] …`), whose number depends on timing."""
    return [line for line in stderr.splitlines() if not STATUS_LINE.match(line)]


def in_background(name: str, action) -> threading.Thread:
    """Run `action(job)` beside the CLI once job `name` exists, as a worker would.

    Should it break, the job ends Failed, so a CLI following it stops instead of waiting for ever.
    """
    def run():
        try:
            deadline = time.monotonic() + 20
            while not Job.objects.filter(name=name).exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            action(Job.objects.get(name=name))
        except BaseException:
            Job.objects.filter(name=name).update(status="Failed", status_reason="The test's driver broke.")
            raise
        finally:
            connections.close_all()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


# create


def sent_yaml(monkeypatch) -> list[str]:
    """The YAML texts the CLI POSTs."""
    texts: list[str] = []
    post_yaml = ApiClient.post_yaml
    monkeypatch.setattr(ApiClient, "post_yaml", lambda self, path, text: (texts.append(text), post_yaml(self, path, text))[1])
    return texts


def test_create_sends_the_yaml_as_written_and_prints_the_job(dockyard, workspace, tmp_path, monkeypatch):
    text = "# Azure ML's own example, unchanged\n" + yaml.safe_dump({**HELLO, "name": "hello"}, sort_keys=False)
    path = tmp_path / "job.yml"
    path.write_text(text)
    sent = sent_yaml(monkeypatch)

    result = dockyard("job", "create", "-f", str(path))

    assert result.exit_code == 0, result.stderr
    assert result.stdout == "job/hello created\n"
    assert sent == [text]
    job = Job.objects.get(workspace=workspace, name="hello")
    assert (job.status, job.target, job.spec["inputs"]) == ("NotStarted", "local", {"who": "world"})


def test_create_without_a_name_prints_the_generated_one_and_json_prints_the_job(dockyard, workspace, tmp_path):
    path = write_yaml(tmp_path / "job.yml", HELLO)

    created = dockyard.json("job", "create", "-f", str(path))

    assert created["status"] == "NotStarted" and created["compute"] == "local"
    assert Job.objects.get(workspace=workspace).name == created["name"]
    assert dockyard("job", "create", "-f", "-", input=path.read_text()).stdout.startswith("job/")


def test_create_to_a_compute_cluster(dockyard, workspace, owner, tmp_path):
    """Azure ML's `compute: azureml:cpu-cluster`: the job runs on whole nodes of the cluster's size."""
    from compute.models import ComputeTarget
    from compute.tests.factories import as_checked, create_compute

    as_checked(create_compute(workspace, owner, "kubernetes", name="k8s"))
    cluster = create_compute(workspace, owner, "amlcompute", name="cpu-cluster")
    ComputeTarget.objects.filter(pk=cluster.pk).update(properties={**cluster.properties, "kubernetes_compute": "k8s"})
    path = write_yaml(tmp_path / "job.yml", {"$schema": HELLO["$schema"], "type": "command", "name": "on-cluster",
                                             "command": "python train.py", "environment": {"image": "python:3.11"},
                                             "compute": "azureml:cpu-cluster"})

    created = dockyard.json("job", "create", "-f", str(path))

    assert created["compute"] == "azureml:cpu-cluster"
    assert created["placement"] == {"target": "kubernetes", "compute": "cpu-cluster", "instance_type": "Standard_DS3_v2"}


def test_create_with_name_and_set_overrides(dockyard, workspace, tmp_path, monkeypatch):
    path = write_yaml(tmp_path / "job.yml", {**HELLO, "name": "from-file"})
    sent = sent_yaml(monkeypatch)

    result = dockyard("job", "create", "-f", str(path), "--name", "renamed", "--set", "inputs.who=there",
                      "--set", "limits.timeout=60", "--set", "environment_variables.MODE=fast")

    assert result.exit_code == 0, result.stderr
    assert result.stdout == "job/renamed created\n"
    assert yaml.safe_load(sent[0])["name"] == "renamed"  # still YAML, with the overrides
    spec = Job.objects.get(workspace=workspace, name="renamed").spec
    assert (spec["inputs"], spec["limits"], spec["environment_variables"]) == ({"who": "there"}, {"timeout": 60}, {"MODE": "fast"})


def test_set_resources_on_a_serverless_job_and_the_apis_validation_errors(dockyard, workspace, tmp_path):
    serverless = write_yaml(tmp_path / "gpu.yml", {"command": "python train.py", "environment": {"image": "python:3.11"}})
    assert dockyard("job", "create", "-f", str(serverless), "--name", "two", "--set", "resources.instance_count=2").exit_code == 0
    assert Job.objects.get(name="two").spec["resources"] == {"instance_count": 2, "shm_size": "2g"}

    local = write_yaml(tmp_path / "job.yml", HELLO)
    result = dockyard("job", "create", "-f", str(local), "--set", "resources.instance_count=2", "--set", "colour=red")

    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.splitlines() == [
        "Error (InvalidJob): colour: 'colour' is not a command-job field.",
    ]
    taken = dockyard("job", "create", "-f", str(serverless), "--name", "two")
    assert taken.exit_code == 1 and taken.stderr.startswith("Error (Conflict): A job named 'two' already exists")


def test_create_refuses_a_file_of_several_documents(dockyard, tmp_path):
    path = write_yaml(tmp_path / "jobs.yml", HELLO, HELLO)

    result = dockyard("job", "create", "-f", str(path))

    assert result.exit_code == 2
    assert "holds 2 documents; `job create` takes one (use `dockyard apply` for several)" in result.stderr


# list, show


def test_list_shows_the_newest_first_and_filters(dockyard, owner, workspace):
    first = submit(owner, workspace, name="first", experiment_name="mnist")
    second = submit(owner, workspace, name="second", display_name="Second run")
    submit(owner, workspace, name="third", compute=None, environment={"image": "python:3.11"})
    end(first, "Completed", exit_code=0)
    Job.objects.filter(pk=second.pk).update(status="Running")

    table = dockyard("job", "list").stdout.splitlines()
    assert table[0].split() == ["NAME", "DISPLAY", "NAME", "STATUS", "COMPUTE", "EXPERIMENT", "CREATED"]
    assert [line.split()[:5] for line in table[1:]] == [
        ["third", "third", "NotStarted", "serverless", "Default"],
        ["second", "Second", "run", "Running", "local"],
        ["first", "first", "Completed", "local", "mnist"],
    ]

    def names(*options: str) -> list[str]:
        return [row["name"] for row in dockyard.json("job", "list", *options)]

    assert names("--status", "running,completed") == ["second", "first"]
    assert names("--status", "Running", "--status", "NotStarted") == ["third", "second"]
    assert names("--compute", "local") == ["second", "first"]
    assert names("--compute", "serverless") == ["third"]
    assert names("--experiment", "mnist") == ["first"]
    unknown = dockyard("job", "list", "--status", "Done")
    assert unknown.exit_code == 2 and unknown.stderr.startswith("Error (InvalidOption): Unknown status 'Done'")
    none = dockyard("job", "list", "--experiment", "nope")
    assert (none.stdout, none.stderr) == ("", "No jobs in workspace 'team-a' match the filters.\n")


def test_list_follows_cursor_pages_up_to_max(dockyard, owner, workspace):
    for index in range(7):
        submit(owner, workspace, name=f"job-{index}")

    limited = dockyard("job", "list", "--max", "3", "-o", "yaml")
    assert [row["name"] for row in yaml.safe_load(limited.stdout)] == ["job-6", "job-5", "job-4"]
    assert limited.stderr == "Showing the newest 3 of 7 jobs (--max N shows more).\n"
    assert len(dockyard.json("job", "list")) == 7


def test_list_pages_of_the_api_are_followed(dockyard, owner, workspace, monkeypatch):
    monkeypatch.setattr("cli.client.MAX_PAGE_SIZE", 2)  # pages of two: the CLI must follow `next`
    for index in range(5):
        submit(owner, workspace, name=f"job-{index}")

    assert [row["name"] for row in dockyard.json("job", "list", "--max", "4")] == ["job-4", "job-3", "job-2", "job-1"]


def test_show_in_every_format_and_not_found(dockyard, owner, workspace):
    job = submit(owner, workspace, name="hello")
    end(job, "Failed", "The command exited with code 3.", 3)

    shown = [line.split(None, 1) for line in dockyard("job", "show", "hello").stdout.splitlines()]
    assert ["status", "Failed"] in shown and ["exit_code", "3"] in shown and ["inputs", '{"who":"world"}'] in shown
    assert "manifests" not in {key for key, _ in shown}
    assert yaml.safe_load(dockyard("job", "show", "hello", "-o", "yaml").stdout)["status_reason"] == "The command exited with code 3."
    assert dockyard.json("job", "show", "hello")["manifests"] == []

    missing = dockyard("job", "show", "nope")
    assert (missing.exit_code, missing.stderr) == (1, "Error (NotFound): Job 'nope' was not found in workspace 'team-a'.\n")
    nowhere = dockyard("job", "list", "-w", "nowhere")
    assert nowhere.stderr == "Error (NotFound): Workspace 'nowhere' was not found, or you are not a member of it.\n"


# cancel, delete


def test_cancel_a_running_job_and_not_one_that_ended(dockyard, owner, workspace):
    job = submit(owner, workspace, name="hello")

    result = dockyard("job", "cancel", "hello")

    assert (result.exit_code, result.stdout) == (0, "job/hello cancel requested\n")
    assert Job.objects.get(pk=job.pk).status == "CancelRequested"
    end(job, "Completed", exit_code=0)
    ended = dockyard("job", "cancel", "hello")
    assert ended.exit_code == 1
    assert ended.stderr.splitlines()[0] == (
        "Error (JobNotCancelable): Job 'hello' has already ended (Completed); there is nothing to cancel."
    )


def test_delete_asks_unless_yes(dockyard, owner, workspace):
    job = submit(owner, workspace, name="hello")

    declined = dockyard("job", "delete", "hello", input="n\n")
    assert declined.exit_code == 1 and not Job.objects.get(pk=job.pk).deleting
    assert "Delete job 'hello' and its logs from workspace 'team-a'?" in declined.stderr

    deleted = dockyard("job", "delete", "hello", "-y")
    assert (deleted.exit_code, deleted.stdout) == (0, "job/hello deleting\n")
    assert Job.objects.get(pk=job.pk).deleting
    assert dockyard("job", "delete", "nope", "--yes").stderr == "Error (NotFound): Job 'nope' was not found in workspace 'team-a'.\n"


# logs, download


def test_logs_prints_every_page_with_sources(dockyard, owner, workspace):
    job = submit(owner, workspace, name="big")
    add_lines(job, *(f"line {index}" for index in range(2345)))
    add_lines(job, "from rank 1", source="rank1")
    end(job, "Completed", exit_code=0)

    result = dockyard("job", "logs", "big")

    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2346 and lines[0] == "line 0" and lines[2344] == "line 2344"
    assert lines[-1] == "[rank1] from rank 1"
    assert result.stderr == ""
    as_json = dockyard.json("job", "logs", "big")
    assert len(as_json) == 2346 and as_json[-1]["source"] == "rank1" and as_json[5]["seq"] == 5


def test_logs_of_a_running_job_print_what_is_there_and_say_more_may_come(dockyard, owner, workspace):
    job = submit(owner, workspace, name="hello")
    add_lines(job, "one", "two")
    Job.objects.filter(pk=job.pk).update(status="Running")

    result = dockyard("job", "logs", "hello", "-w", "team-a")

    assert result.stdout == "one\ntwo\n"
    assert result.stderr == "job/hello is Running: more lines may come (`dockyard job logs hello --follow -w team-a` waits for them).\n"
    assert dockyard("job", "logs", "nope").stderr == "Error (NotFound): Job 'nope' was not found in workspace 'team-a'.\n"


def test_download_saves_the_whole_log(dockyard, owner, workspace, tmp_path, monkeypatch):
    job = submit(owner, workspace, name="hello")
    add_lines(job, "one", "two")
    add_lines(job, "three", source="rank0")
    end(job, "Completed", exit_code=0)
    monkeypatch.chdir(tmp_path)

    result = dockyard("job", "download", "hello")

    assert result.exit_code == 0, result.stderr
    assert result.stdout == "job/hello log saved to hello.log (22 bytes)\n"
    assert (tmp_path / "hello.log").read_text() == "one\ntwo\n[rank0] three\n"
    (tmp_path / "logs").mkdir()
    saved = dockyard.json("job", "download", "hello", "-p", "logs")
    assert saved == {"name": "hello", "path": "logs/hello.log", "bytes": 22}
    missing = dockyard("job", "download", "nope", "-p", "logs/nope.log")
    assert missing.exit_code == 1 and not (tmp_path / "logs" / "nope.log").exists()
    assert list((tmp_path / "logs").iterdir()) == [tmp_path / "logs" / "hello.log"]


def test_download_output_dir_saves_the_outputs_files(dockyard, owner, workspace, tmp_path):
    from jobs import files

    job = submit(owner, workspace, name="hello")
    outputs = files.run_folder(job) / files.WORKDIR / files.OUTPUTS
    (outputs / "model").mkdir(parents=True)
    (outputs / "helloworld.txt").write_text("hello\n")
    (outputs / "model" / "w.bin").write_bytes(b"\0\1")
    end(job, "Completed", exit_code=0)

    result = dockyard("job", "download", "hello", "--output-dir", str(tmp_path / "out"))

    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"job/hello outputs saved to {tmp_path / 'out'} (2 files, 8 bytes)\n"
    assert (tmp_path / "out" / "helloworld.txt").read_text() == "hello\n"
    assert (tmp_path / "out" / "model" / "w.bin").read_bytes() == b"\0\1"


@pytest.mark.parametrize("path", ["../x", "/etc/passwd", "a//b", "a/./b", "", None])
def test_download_never_writes_outside_the_output_dir(path, tmp_path):
    from cli.errors import InvalidInput
    from cli.resources.job_download import output_target

    with pytest.raises(InvalidInput):
        output_target(tmp_path, path)


# following a job


def test_logs_follow_reconnects_after_the_servers_timeout_until_the_job_ends(dockyard, owner, workspace, settings, monkeypatch):
    settings.DOCKYARD_LOG_FOLLOW_SECONDS = 1
    job = submit(owner, workspace, name="slow")
    add_lines(job, "first")
    Job.objects.filter(pk=job.pk).update(status="Running")
    connections_made = []
    events = ApiClient.events
    monkeypatch.setattr(ApiClient, "events", lambda self, *args, **kwargs: (connections_made.append(args), events(self, *args, **kwargs))[1])

    def run_the_job(job):
        time.sleep(1.5)
        add_lines(job, "second", source="rank0")
        time.sleep(1.5)
        add_lines(job, "third")
        end(job, "Canceled", "Canceled by request; the process group was stopped.")

    thread = in_background("slow", run_the_job)
    result = dockyard("job", "logs", "slow", "--follow")
    thread.join()

    assert result.stdout == "first\n[rank0] second\nthird\n"
    assert result.exit_code == 6
    assert result.stderr == ("[Running]\n"  # said once, though each of the reconnects starts with it
                             "Error (JobCanceled): Job 'slow' was canceled: Canceled by request; the process group was stopped.\n")
    assert len(connections_made) >= 3  # each stream ended after a second; every line still came exactly once


def test_create_stream_prints_the_log_and_exits_0_when_the_job_completed(dockyard, workspace, tmp_path):
    path = write_yaml(tmp_path / "job.yml", HELLO)

    def run_the_job(job):
        add_lines(job, "hello world")
        end(job, "Completed", exit_code=0)

    thread = in_background("streamed", run_the_job)
    result = dockyard("job", "create", "-f", str(path), "--name", "streamed", "--stream")
    thread.join()

    assert result.exit_code == 0, result.stderr
    assert result.stdout == "job/streamed created\nhello world\n"
    assert without_statuses(result.stderr) == ["job/streamed Completed"]


def test_create_stream_with_json_prints_the_final_job_and_the_log_on_stderr(dockyard, owner, workspace, tmp_path):
    path = write_yaml(tmp_path / "job.yml", {**HELLO, "name": "streamed"})
    def run_the_job(job):
        add_lines(job, "hello world")
        end(job, "Failed", "The command exited with code 3.", 3)

    thread = in_background("streamed", run_the_job)
    result = dockyard("job", "create", "-f", str(path), "--stream", "-o", "json")
    thread.join()

    assert result.exit_code == 5
    final = json.loads(result.stdout)
    assert (final["name"], final["status"], final["exit_code"]) == ("streamed", "Failed", 3)
    assert without_statuses(result.stderr) == ["hello world", "Error (JobFailed): Job 'streamed' failed: The command exited with code 3."]


def test_create_stream_says_why_a_job_waits_and_when_it_starts(dockyard, workspace, tmp_path):
    path = write_yaml(tmp_path / "job.yml", HELLO)

    def run_the_job(job):
        Job.objects.filter(pk=job.pk).update(status="Queued", status_reason="Waiting for a node: insufficient cpu")
        time.sleep(1.5)
        Job.objects.filter(pk=job.pk).update(status="Running", status_reason="")
        add_lines(job, "hello world")
        time.sleep(1.5)
        end(job, "Completed", exit_code=0)

    thread = in_background("waits", run_the_job)
    result = dockyard("job", "create", "-f", str(path), "--name", "waits", "--stream")
    thread.join()

    assert result.exit_code == 0, result.stderr
    assert result.stdout == "job/waits created\nhello world\n"  # the log alone: statuses go to stderr
    said = result.stderr.splitlines()
    assert said[-1] == "job/waits Completed"
    statuses = [line for line in said if STATUS_LINE.match(line)]
    assert "[Queued] Waiting for a node: insufficient cpu" in statuses and statuses[-1] == "[Running]", said
    assert len(statuses) == len(set(statuses))  # each change once


def test_logs_follow_as_json_prints_one_object_per_line(dockyard, owner, workspace):
    job = submit(owner, workspace, name="hello")
    add_lines(job, "one", "two", source="rank0")
    end(job, "Completed", exit_code=0)

    result = dockyard("job", "logs", "hello", "--follow", "-o", "json")

    assert result.exit_code == 0
    assert [(row["seq"], row["source"], row["text"]) for row in map(json.loads, result.stdout.splitlines())] == [
        (0, "rank0", "one"), (1, "rank0", "two"),
    ]
    assert dockyard("job", "stream", "hello").stdout == "[rank0] one\n[rank0] two\n"


def test_create_stream_runs_local_jobs_on_a_real_worker(worker, dockyard, workspace, tmp_path):
    failing = write_yaml(tmp_path / "fail.yml", {**HELLO, "command": "echo hello ${{inputs.who}}; exit 3"})
    passing = write_yaml(tmp_path / "pass.yml", HELLO)

    failed = dockyard("job", "create", "-f", str(failing), "--name", "fails", "--stream")
    completed = dockyard("job", "create", "-f", str(passing), "--name", "passes", "--stream")

    assert failed.exit_code == 5, failed.stderr
    assert failed.stdout == "job/fails created\nhello world\n"
    assert without_statuses(failed.stderr) == ["Error (JobFailed): Job 'fails' failed: The command exited with code 3."]
    assert completed.exit_code == 0, completed.stderr
    assert completed.stdout == "job/passes created\nhello world\n"
    assert without_statuses(completed.stderr) == ["job/passes Completed"]


def test_ctrl_c_stops_following_and_says_how_to_resume(live_server, owner, workspace, token, tmp_path):
    job = submit(owner, workspace, name="long")
    add_lines(job, "started")
    Job.objects.filter(pk=job.pk).update(status="Running")
    env = {**{key: value for key, value in os.environ.items() if not key.startswith("DOCKYARD_")},
           "DOCKYARD_CONFIG": str(tmp_path / "none.yaml"), "DOCKYARD_URL": live_server.url, "DOCKYARD_TOKEN": token}
    process = subprocess.Popen([sys.executable, "-m", "cli", "job", "logs", "long", "--follow", "-w", "team-a"], cwd=REPO,
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([process.stdout], [], [], 30)
        assert ready and process.stdout.readline() == "started\n"
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        process.kill()

    assert process.returncode == 130
    assert stderr.strip().splitlines()[-1] == "Stopped following job/long; the job keeps running. Resume with: dockyard job logs long --follow -w team-a"
    assert Job.objects.get(pk=job.pk).status == "Running"


# apply


def test_apply_submits_a_job_once_and_then_reports_it_unchanged(dockyard, workspace, tmp_path):
    from compute.tests.factories import host

    host(workspace)  # the kubernetes compute the compute cluster lives on
    document = {**HELLO, "name": "nightly", "display_name": "Nightly", "tags": {"run": 1}, "resources": {"instance_count": 1}}
    path = write_yaml(tmp_path / "all.yml", {"name": "cpu", "type": "computeinstance"}, document)

    first = dockyard("apply", "-f", str(path))
    second = dockyard("apply", "-f", str(path))

    assert first.exit_code == 0, first.stderr
    assert first.stdout.splitlines() == ["compute/cpu created", "job/nightly created"]
    assert second.stdout.splitlines() == ["compute/cpu unchanged", "job/nightly unchanged"]
    assert Job.objects.filter(name="nightly").count() == 1
    assert Job.objects.get(name="nightly").tags == {"run": "1"}


def test_apply_changes_only_a_jobs_display_fields(dockyard, owner, workspace, tmp_path):
    submit(owner, workspace, name="nightly")
    renamed = write_yaml(tmp_path / "renamed.yml", {**HELLO, "name": "nightly", "display_name": "Nightly run"})
    changed = write_yaml(tmp_path / "changed.yml", {**HELLO, "name": "nightly", "command": "echo bye", "limits": {"timeout": 5}})

    assert dockyard("apply", "-f", str(renamed), "--dry-run").stdout == "job/nightly configured (dry run: display_name)\n"
    assert dockyard("apply", "-f", str(renamed)).stdout == "job/nightly configured\n"
    assert Job.objects.get(name="nightly").display_name == "Nightly run"

    result = dockyard("apply", "-f", str(changed))
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.splitlines() == [
        "job/nightly failed",
        "Error (ImmutableField): Job 'nightly' exists and a submitted job cannot be changed (this document differs in: "
        "command, limits); only display_name, description, tags can. Give the document a new name to submit another job.",
        "  command: differs from the submitted job",
        "  limits: differs from the submitted job",
        "Error (ApplyFailed): 1 of 1 documents failed.",
    ]
    assert Job.objects.get(name="nightly").spec["command"] == HELLO["command"]


def test_apply_dry_run_submits_nothing_and_jobs_need_a_name(dockyard, workspace, tmp_path):
    path = write_yaml(tmp_path / "jobs.yml", {**HELLO, "name": "planned"}, HELLO, {"type": "pipeline", "name": "p", "jobs": {}})

    result = dockyard("apply", "-f", str(path), "--dry-run")

    assert result.exit_code == 1
    assert result.stdout == "job/planned created (dry run)\n"
    errors = result.stderr.splitlines()
    assert errors[:2] == [f"{path}, document 2 failed", "Error (InvalidDocument): A job needs a name to be applied (that is "
                          "how apply finds it again); `dockyard job create -f FILE` submits one with a generated name."]
    assert errors[2:4] == ["job/p failed", "Error (NotSupported): This is a pipeline job; Dockyard runs command jobs only (`type: command`)."]
    assert not Job.objects.exists()
