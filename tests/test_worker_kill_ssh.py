"""A job on an attached VM outlives a worker killed with SIGKILL: the next worker (its worker_ready resync, once the dead
chain's heartbeat is stale) adopts it from what is recorded and on the host, and follows it to its end: not started
again, no line lost or doubled. Real `celery -A controlplane worker` subprocesses (tests/test_worker_kill.py) and the
real test sshd.
"""
import secrets
import shlex

import pytest

from compute.choices import ComputeType
from compute.models import ComputeTarget
from controlplane.reconciling import ProvisioningState
from jobs.choices import ACTIVE
from jobs.models import Job
from jobs.reconcile.ssh import job_key
from tests.test_worker_kill import wait_for, worker_starter

STALE_SECONDS = 2


@pytest.fixture
def ssh_workers(transactional_db, settings, tmp_path, sshd, workspace, owner):
    """Workers that follow SSH jobs in a jobs folder of this test on the test sshd; the VM record points there."""
    jobs_dir = f".dockyard/test-{secrets.token_hex(4)}"
    settings.DOCKYARD_SSH_JOBS_DIR = jobs_dir
    compute = ComputeTarget(workspace=workspace, name="gpubox", type=ComputeType.VIRTUALMACHINE, created_by=owner,
                            provisioning_state=ProvisioningState.SUCCEEDED,
                            properties={"address": sshd.address, "ssh_port": sshd.port, "admin_username": sshd.username,
                                        "host_key": sshd.host_key},
                            status={"host_key_confirmed": True, "gpus": []})
    compute.secrets = {"ssh_private_key": sshd.private_key}
    compute.save()
    env = {"DOCKYARD_JOB_DIR": str(tmp_path / "jobs"), "DOCKYARD_JOB_STALE_SECONDS": str(STALE_SECONDS),
           "DOCKYARD_SSH_JOBS_DIR": jobs_dir, "DOCKYARD_SSH_LOOK_SECONDS": "0.5", "DOCKYARD_ALLOW_LOOPBACK": "1"}
    try:
        with worker_starter(tmp_path, env) as start:
            yield start
    finally:
        quoted = shlex.quote(jobs_dir)
        sshd.run_as_user(f"cd && for p in {quoted}/*/pid; do [ -f \"$p\" ] && kill -KILL -$(cat \"$p\"); done; "
                         f"rm -rf -- {quoted}")


def test_a_vm_job_outlives_a_killed_worker_and_the_next_one_adopts_it(ssh_workers, owner_api, sshd, settings):
    first = ssh_workers("first")
    command = "echo start; echo ran >> ../count.txt; while [ ! -e go ]; do sleep 0.1; done; echo done"
    response = owner_api.post("/api/v1/workspaces/team-a/jobs/", {"command": command, "compute": "gpubox"}, format="json")
    assert response.status_code == 201, response.json()
    name = response.json()["name"]
    job = wait_for(lambda: Job.objects.filter(name=name, status="Running", log_line_count=1).first(), 30,
                   what="the job running with its first line")
    pid = job.runner["pid"]

    first.kill_group()
    folder = f"{settings.DOCKYARD_SSH_JOBS_DIR}/{job_key(job)}"
    assert sshd.run_as_user(f"kill -0 -{pid} && echo alive").stdout.strip() == "alive"  # the host's, not the worker's
    sshd.run_as_user(f"touch {shlex.quote(folder)}/workdir/go")

    second = ssh_workers("second")
    job = wait_for(lambda: Job.objects.filter(name=name).exclude(status__in=ACTIVE).first(), 40, what="its end")
    assert (job.status, job.exit_code, job.status_reason) == ("Completed", 0, ""), job.status_reason
    assert [line.text for line in job.log_lines.order_by("seq")] == ["start", "done"]
    assert job.runner["pid"] == pid
    assert sshd.run_as_user(f"cat {shlex.quote(folder)}/count.txt").stdout == "ran\n"  # started once
    assert "jobs.tasks.resync_jobs" in second.output()
