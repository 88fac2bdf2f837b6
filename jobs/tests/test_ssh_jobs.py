"""Jobs on an attached VM, end to end against a real sshd on loopback (tests/sshd.py): submitted through the API,
reconciled look by look (the task's own step, under the row lock), processes started on the "host" as its SSH user.

The VM record is made directly as the attach reconcile leaves it (Succeeded, host key pinned), so these tests do not
depend on it. Each test has a jobs folder of its own under the SSH user's home; teardown kills what any job of it
left running (by the pid its wrapper wrote) and removes the folder.
"""
import secrets
import shlex
import time

import pytest
from django.db import transaction

from compute.choices import ComputeType
from compute.models import ComputeTarget
from compute.runners import ssh, ssh_jobs
from controlplane.reconciling import ProvisioningState
from jobs import reconcile, services
from jobs.choices import TERMINAL, JobStatus
from jobs.models import Job, JobEvent
from jobs.reconcile import ssh as ssh_reconcile
from jobs.reconcile.ssh import RESTARTED, job_key
from jobs.tests.test_uploaded_code import upload

URL = "/api/v1/workspaces/team-a/jobs/"


@pytest.fixture
def vm(workspace, owner, sshd, settings, tmp_path):
    """An attached VM record pointing at the test sshd, as a finished attach leaves it."""
    settings.DOCKYARD_JOB_DIR = tmp_path / "jobs"
    settings.DOCKYARD_SSH_JOBS_DIR = f".dockyard/test-{secrets.token_hex(4)}"
    compute = ComputeTarget(workspace=workspace, name="gpubox", type=ComputeType.VIRTUALMACHINE, created_by=owner,
                            provisioning_state=ProvisioningState.SUCCEEDED,
                            properties={"address": sshd.address, "ssh_port": sshd.port, "admin_username": sshd.username,
                                        "host_key": sshd.host_key},
                            status={"host_key_confirmed": True, "systemd": False, "gpus": []})
    compute.secrets = {"ssh_private_key": sshd.private_key}
    compute.save()
    yield compute
    jobs_dir = shlex.quote(settings.DOCKYARD_SSH_JOBS_DIR)
    sshd.run_as_user(f"cd && for p in {jobs_dir}/*/pid; do [ -f \"$p\" ] && kill -KILL -$(cat \"$p\"); done; "
                     f"rm -rf -- {jobs_dir}")


def submit(api, **fields) -> Job:
    data = {"command": "echo hi", "compute": "azureml:gpubox", **fields}
    response = api.post(URL, data, format="json")
    assert response.status_code == 201, response.json()
    return Job.objects.get(name=response.json()["name"])


def look(job: Job) -> tuple[Job, float | None]:
    """One reconcile step under the row lock, as the task runs it."""
    with transaction.atomic():
        locked = Job.objects.select_for_update(of=("self",)).select_related("workspace", "compute").filter(pk=job.pk)
        row = locked.first()
        if row is None:
            return job, None
        delay = reconcile.reconcile_job(row)
    fresh = Job.objects.filter(pk=job.pk).first()
    return fresh or row, delay


def until(job: Job, predicate, timeout: float = 30.0) -> Job:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job, _ = look(job)
        if predicate(job):
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job.name} is {job.status} ({job.status_reason}) after {timeout} s")


def wait_until(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.1)


def ended(job: Job) -> Job:
    return until(job, lambda row: row.status in TERMINAL)


def lines(job: Job) -> list[str]:
    return list(job.log_lines.order_by("seq").values_list("text", flat=True))


def reasons(job: Job) -> list[str]:
    return list(JobEvent.objects.filter(job=job).order_by("pk").values_list("reason", flat=True))


def on_host(sshd, command: str) -> str:
    done = sshd.run_as_user(command)
    return done.stdout


def remote_dir(sshd, settings, job: Job) -> str:
    return f"{sshd.home}/{settings.DOCKYARD_SSH_JOBS_DIR}/{job_key(job)}"


def gate(sshd, settings, job: Job) -> None:
    """Let a job waiting for the file `go` in its working folder go on."""
    on_host(sshd, f"touch {shlex.quote(remote_dir(sshd, settings, job))}/workdir/go")


WAIT_FOR_GATE = "while [ ! -e go ]; do sleep 0.1; done"


@pytest.fixture
def src(tmp_path):
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "main.py").write_text("import os, sys\nprint('hello from', os.path.basename(os.getcwd()))\n"
                                    "open('outputs/result.txt', 'w').write('42')\nprint('gpus=[%s]' % "
                                    "os.environ['CUDA_VISIBLE_DEVICES'])\nsys.stdout.flush()\n")
    return folder


def test_a_process_job_runs_its_uploaded_code_and_completes_with_logs_and_outputs(owner_api, vm, src, sshd, settings):
    code = upload(owner_api, src)
    job = submit(owner_api, code=code, command='python3 main.py && echo "$GREETING" && echo "$DOCKYARD_JOB_NAME"',
                 environment_variables={"GREETING": "it's a 'quoted' $value"})
    assert (job.target, job.instance_type) == ("ssh", "")
    job = ended(job)
    assert (job.status, job.exit_code, job.status_reason) == (JobStatus.COMPLETED, 0, "")
    assert lines(job) == ["hello from workdir", "gpus=[]", "it's a 'quoted' $value", job.name]
    assert {"Started", "CodeCopied", "Running", "Completed", "OutputsKept"} <= set(reasons(job))
    assert job.outputs_snapshot_id is not None  # ./outputs came back over SFTP and were kept as a local job's are
    folder = remote_dir(sshd, settings, job)
    assert job.runner["dir"] == folder and job.runner["gpus"] == [] and job.runner["container"] == ""
    assert on_host(sshd, f"stat -c %a {folder}/env").strip() == "600"
    assert "quoted" not in on_host(sshd, f"cat {folder}/command.sh")  # values only in env, never on a command line


def test_a_failing_command_fails_the_job_with_its_exit_code(owner_api, vm):
    job = ended(submit(owner_api, command="python3 -c 'import sys; print(\"bye\"); sys.exit(3)'"))
    assert (job.status, job.exit_code, job.status_reason) == (JobStatus.FAILED, 3, "The command exited with code 3.")
    assert lines(job) == ["bye"]


def test_logs_stream_while_the_job_runs(owner_api, vm, sshd, settings):
    job = submit(owner_api, command=f"echo first; {WAIT_FOR_GATE}; echo second")
    job = until(job, lambda row: row.status == JobStatus.RUNNING and lines(row) == ["first"])
    job, delay = look(job)
    assert (job.status, lines(job), delay) == (JobStatus.RUNNING, ["first"], settings.DOCKYARD_SSH_LOOK_SECONDS)
    gate(sshd, settings, job)
    job = ended(job)
    assert (job.status, lines(job)) == (JobStatus.COMPLETED, ["first", "second"])


def test_cancel_stops_the_whole_process_group(owner_api, vm, owner, sshd):
    marker = f"{secrets.randbelow(10**6) + 10**6}"
    job = submit(owner_api, command=f"sleep {marker}1 & sleep {marker}2; echo never")
    job = until(job, lambda row: row.status == JobStatus.RUNNING)
    assert on_host(sshd, f"pgrep -f 'slee[p] {marker}' | wc -l").strip() == "2"
    services.job_cancel(user=owner, job=job)
    job = ended(job)
    assert (job.status, job.status_reason) == (JobStatus.CANCELED, "Canceled by request; the process group was stopped.")
    assert on_host(sshd, f"pgrep -f 'slee[p] {marker}' | wc -l").strip() == "0"  # the child too
    assert "never" not in lines(job)


def test_a_queued_job_is_canceled_without_reaching_any_cluster(owner_api, vm, owner):
    ComputeTarget.objects.filter(pk=vm.pk).update(provisioning_state=ProvisioningState.CREATING)
    job, _ = look(submit(owner_api))
    assert job.status == JobStatus.QUEUED
    services.job_cancel(user=owner, job=job)
    job, delay = look(job)
    assert (job.status, job.status_reason, delay) == (JobStatus.CANCELED, "Canceled by request.", None)


def test_a_timeout_stops_the_job_and_fails_it(owner_api, vm, sshd):
    marker = f"{secrets.randbelow(10**6) + 10**6}"
    job = submit(owner_api, command=f"echo started; sleep {marker}", limits={"timeout": 1})
    job = until(job, lambda row: row.status == JobStatus.RUNNING)
    time.sleep(1.2)
    job = ended(job)
    assert (job.status, job.status_reason) == (
        JobStatus.FAILED, "The job timed out after 1 s (limits.timeout); its processes were stopped.")
    assert lines(job) == ["started"]
    assert on_host(sshd, f"pgrep -f 'slee[p] {marker}' | wc -l").strip() == "0"


def test_a_dropped_connection_loses_no_line_and_doubles_none(owner_api, vm, sshd, settings, monkeypatch):
    """The network drops in the middle of the last looks (between two reads of the log): the job runs on, says so
    once, and the next look goes on from the saved offset."""
    monkeypatch.setattr(ssh_jobs, "FOLLOW_CAP", 64)  # many reads per look: the drop lands between two of them
    job = submit(owner_api, command=f"seq 1 40; {WAIT_FOR_GATE}; seq 41 100")
    job = until(job, lambda row: row.status == JobStatus.RUNNING and len(lines(row)) > 0)
    gate(sshd, settings, job)
    exit_file = f"{remote_dir(sshd, settings, job)}/exit_code"
    wait_until(lambda: on_host(sshd, f"cat {exit_file} 2>/dev/null").strip() == "0")  # the next look drains the log
    real_run, calls = ssh.Session.run, []

    def dropping(session, command, *args, **kwargs):
        calls.append(ssh_jobs.HEADER in command)
        if calls.count(True) == 3:  # the look's own read, the drain's first, then the drop
            sshd.kill_connections()
        return real_run(session, command, *args, **kwargs)

    monkeypatch.setattr(ssh.Session, "run", dropping)
    job, delay = look(job)
    assert job.status == JobStatus.RUNNING and delay == settings.DOCKYARD_SSH_LOOK_SECONDS
    assert reasons(job).count("HostUnreachable") == 1
    assert on_host(sshd, f"cat {remote_dir(sshd, settings, job)}/pid") != ""
    monkeypatch.setattr(ssh.Session, "run", real_run)
    job = ended(job)
    assert job.status == JobStatus.COMPLETED
    assert lines(job) == [str(number) for number in range(1, 101)]
    assert "HostReachable" in reasons(job)


def test_a_start_whose_record_was_lost_is_adopted_not_started_twice(owner_api, vm, sshd, settings):
    job = submit(owner_api, command=f"echo ran >> ../count.txt; echo once; {WAIT_FOR_GATE}")
    job, delay = look(job)  # the GPUs (none here) are chosen and committed in a look of their own
    assert (job.runner, delay) == ({"gpus": []}, ssh_reconcile.AT_ONCE)
    job, _ = look(job)
    assert job.status == JobStatus.RUNNING
    pid = job.runner["pid"]
    Job.objects.filter(pk=job.pk).update(runner={"gpus": []}, status=JobStatus.QUEUED)  # the save was lost in a crash
    job, _ = look(Job.objects.get(pk=job.pk))
    assert (job.status, job.runner["pid"]) == (JobStatus.RUNNING, pid)
    assert "Adopted" in reasons(job)
    gate(sshd, settings, job)
    job = ended(job)
    assert job.status == JobStatus.COMPLETED and lines(job) == ["once"]
    assert on_host(sshd, f"cat {remote_dir(sshd, settings, job)}/count.txt") == "ran\n"


def test_a_cancel_after_a_lost_launch_stops_what_the_host_runs(owner_api, vm, sshd, owner):
    marker = f"{secrets.randbelow(10**6) + 10**6}"
    job = until(submit(owner_api, command=f"sleep {marker}"), lambda row: row.status == JobStatus.RUNNING)
    Job.objects.filter(pk=job.pk).update(runner={"gpus": []}, status=JobStatus.QUEUED)  # the launch's save was lost
    services.job_cancel(user=owner, job=Job.objects.get(pk=job.pk))
    job, _ = look(job)
    assert job.status == JobStatus.CANCELED
    assert on_host(sshd, f"pgrep -f 'slee[p] {marker}' | wc -l").strip() == "0"


def test_a_host_that_restarted_fails_the_job_saying_so(owner_api, vm, sshd, settings):
    job = submit(owner_api, command=WAIT_FOR_GATE)
    job = until(job, lambda row: row.status == JobStatus.RUNNING)
    on_host(sshd, f"echo another-boot > {remote_dir(sshd, settings, job)}/boot_id")  # as the host sees it after a boot
    job = ended(job)
    assert (job.status, job.status_reason) == (JobStatus.FAILED, RESTARTED)


def test_delete_stops_the_job_and_removes_its_folder_on_the_host(owner_api, vm, owner, sshd, settings):
    marker = f"{secrets.randbelow(10**6) + 10**6}"
    job = submit(owner_api, command=f"sleep {marker}")
    job = until(job, lambda row: row.status == JobStatus.RUNNING)
    folder = remote_dir(sshd, settings, job)
    assert on_host(sshd, f"test -d {folder} && echo there").strip() == "there"
    services.job_delete(user=owner, job=job)
    look(job)
    assert not Job.objects.filter(pk=job.pk).exists()
    assert on_host(sshd, f"test -d {folder} || echo gone").strip() == "gone"
    assert on_host(sshd, f"pgrep -f 'slee[p] {marker}' | wc -l").strip() == "0"


@pytest.mark.parametrize("change, reason", [
    ({"provisioning_state": ProvisioningState.CREATING}, "Waiting for vm gpubox to be attached"),
    ({"status": {"host_key_confirmed": False, "message": "Confirm the host key SHA256:x"}},
     "its host key is not confirmed yet (Confirm the host key SHA256:x)."),
    ({"provisioning_state": ProvisioningState.FAILED}, "Waiting for vm gpubox: it is not usable"),
])
def test_a_job_on_a_vm_not_ready_waits_queued_with_the_reason(owner_api, vm, change, reason):
    ComputeTarget.objects.filter(pk=vm.pk).update(**change)
    job, delay = look(submit(owner_api))
    assert job.status == JobStatus.QUEUED and reason in job.status_reason and delay
    ComputeTarget.objects.filter(pk=vm.pk).update(provisioning_state=ProvisioningState.SUCCEEDED,
                                                  status={"host_key_confirmed": True, "gpus": []})
    assert ended(job).status == JobStatus.COMPLETED


def test_a_host_that_does_not_answer_keeps_the_job_queued(owner_api, vm, sshd):
    ComputeTarget.objects.filter(pk=vm.pk).update(properties={**vm.properties, "ssh_port": 9})  # nothing listens
    job = until(submit(owner_api), lambda row: row.status == JobStatus.QUEUED)
    assert job.status_reason.startswith("Waiting for vm gpubox: The host at ")
    assert "pid" not in job.runner  # nothing launched (its GPUs, none here, were chosen before connecting)


def test_gpu_allotment_is_asked_and_a_refusal_waits(owner_api, vm, monkeypatch):
    monkeypatch.setattr(ssh_reconcile.gpus, "allot", lambda job: (None, "waiting for 1 GPU on vm gpubox"))
    job, _ = look(submit(owner_api))
    assert (job.status, job.status_reason) == (JobStatus.QUEUED, "waiting for 1 GPU on vm gpubox")
    monkeypatch.setattr(ssh_reconcile.gpus, "allot", lambda job: ([1, 3], ""))
    job = ended(submit(owner_api, command='echo "[$CUDA_VISIBLE_DEVICES]"'))
    assert lines(job) == ["[1,3]"] and job.runner["gpus"] == [1, 3]


def test_outputs_larger_than_a_snapshot_are_left_on_the_host_saying_so(owner_api, vm, settings):
    settings.DOCKYARD_SNAPSHOT_MAX_BYTES = 4096
    job = ended(submit(owner_api, command="head -c 100000 /dev/zero > outputs/big.bin"))
    assert job.status == JobStatus.COMPLETED and job.outputs_snapshot_id is None
    said = JobEvent.objects.get(job=job, reason="OutputsNotFetched").message
    assert "more than 4096 (DOCKYARD_SNAPSHOT_MAX_BYTES)" in said


def test_fetched_inputs_are_shipped_and_the_folder_is_the_users_own(owner_api, vm, sshd, settings):
    from jobs.tests.test_job_inputs import uploaded

    path = uploaded(owner_api, {"a.txt": b"alpha\n", "sub/b.txt": b"beta\n"})
    job = ended(submit(owner_api, command="cat ${{inputs.data}}/a.txt ${{inputs.data}}/sub/b.txt",
                       inputs={"data": {"type": "uri_folder", "path": path}}))
    assert (job.status, lines(job)) == (JobStatus.COMPLETED, ["alpha", "beta"])
    assert "InputsFetched" in reasons(job)
    assert on_host(sshd, f"stat -c %a {remote_dir(sshd, settings, job)}").strip() == "700"
