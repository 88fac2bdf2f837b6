"""Attached VMs from attach to finished jobs, every part real but the GPUs and the Docker engine: the VM attached
through the API and the compute reconcile (host key pinned by the body's fingerprint, probes read), jobs submitted
through the API and followed look by look against a real sshd whose logins find a fake `nvidia-smi` and `docker`
first on PATH (tests/ssh_stubs.py; there is no GPU and no Docker engine here).
"""
import secrets
import shlex

import pytest

from compute import reconcile as compute_reconcile
from compute.choices import ComputeType
from compute.hostkeys import fingerprint
from compute.models import ComputeTarget
from controlplane.reconciling import ProvisioningState
from jobs.choices import JobStatus
from jobs.reconcile.ssh import job_key
from jobs.tests.test_ssh_jobs import look, submit, until
from tests import netns, ssh_stubs

COMPUTES = "/api/v1/workspaces/team-a/computes/"


@pytest.fixture
def jobs_dir(settings, tmp_path):
    settings.DOCKYARD_JOB_DIR = tmp_path / "jobs"
    settings.DOCKYARD_SSH_JOBS_DIR = f".dockyard/test-{secrets.token_hex(4)}"
    return settings.DOCKYARD_SSH_JOBS_DIR


def attach(api, server) -> ComputeTarget:
    """Attach `server` as vm 'gpubox' with its fingerprint given beforehand; one compute reconcile probes it."""
    body = {"name": "gpubox", "type": "virtualmachine", "address": server.address, "ssh_port": server.port,
            "admin_username": server.username, "ssh_private_key": server.private_key,
            "host_key_fingerprint": fingerprint(server.host_key)}
    response = api.post(COMPUTES, body, format="json")
    assert response.status_code == 201, response.json()
    compute_reconcile.reconcile_compute(ComputeTarget.objects.get(name="gpubox"))
    compute = ComputeTarget.objects.get(name="gpubox")
    assert compute.provisioning_state == ProvisioningState.SUCCEEDED, compute.provisioning_errors
    return compute


def clean(server, jobs_dir: str) -> None:
    folder = shlex.quote(jobs_dir)
    server.run_as_user(f"cd && for p in {folder}/*/pid; do [ -f \"$p\" ] && kill -KILL -$(cat \"$p\"); done; "
                       f"rm -rf -- {folder}")


def test_two_jobs_for_the_only_gpu_the_second_waits_saying_why_then_runs(owner_api, workspace, sshd, jobs_dir):
    with ssh_stubs.sshd_with_stubs(gpus=1) as (server, _stubs):
        try:
            vm = attach(owner_api, server)
            assert [gpu["index"] for gpu in vm.status["gpus"]] == [0]
            first = submit(owner_api, name="first", command="echo cuda=$CUDA_VISIBLE_DEVICES; sleep 2")
            second = submit(owner_api, name="second", command="echo cuda=$CUDA_VISIBLE_DEVICES")
            first = until(first, lambda job: job.status == JobStatus.RUNNING)
            assert first.runner["gpus"] == [0]
            second, _ = look(second)
            assert second.status == JobStatus.QUEUED
            assert "GPU 0 is used by job 'first'" in second.status_reason, second.status_reason
            first = until(first, lambda job: job.status == JobStatus.COMPLETED)
            second = until(second, lambda job: job.status == JobStatus.COMPLETED)
            assert second.runner["gpus"] == [0]
            for job in (first, second):
                assert [line.text for line in job.log_lines.order_by("seq")] == ["cuda=0"]
        finally:
            clean(server, jobs_dir)


def test_a_cpu_size_gets_no_gpu_and_does_not_wait_for_one(owner_api, workspace, sshd, jobs_dir):
    with ssh_stubs.sshd_with_stubs(gpus=1) as (server, _stubs):
        try:
            attach(owner_api, server)
            holder = submit(owner_api, name="holder", command="sleep 2")
            cpu = submit(owner_api, name="cpu", command="echo cuda=[$CUDA_VISIBLE_DEVICES]",
                         resources={"instance_type": "Standard_D4s_v3"})
            holder = until(holder, lambda job: job.status == JobStatus.RUNNING)
            assert holder.runner["gpus"] == [0]
            cpu = until(cpu, lambda job: job.status == JobStatus.COMPLETED)
            assert cpu.runner["gpus"] == []
            assert [line.text for line in cpu.log_lines.all()] == ["cuda=[]"]
        finally:
            clean(server, jobs_dir)


def test_an_image_job_runs_the_exact_docker_command_line(owner_api, workspace, sshd, jobs_dir):
    with ssh_stubs.sshd_with_stubs(gpus=2, run=True) as (server, stubs):
        try:
            attach(owner_api, server)
            job = submit(owner_api, name="boxed", command="echo in the container; pwd",
                         environment={"image": "python:3.11-slim"},
                         resources={"instance_type": "Standard_NC6s_v3", "shm_size": "4g"},
                         environment_variables={"EPOCHS": "3"})
            job = until(job, lambda job: job.status == JobStatus.COMPLETED)
            runs = [call for call in ssh_stubs.docker_calls(stubs) if call[:1] == ["run"]]
            assert len(runs) == 1
            argv, key, folder = runs[0], job_key(job), job.runner["dir"]
            assert argv[:8] == ["run", "--rm", "--name", f"dockyard-job-{key}", "--label", f"dockyard.dev/job={key}",
                                "--init", "-v"]
            assert f"{folder}/workdir:/workdir" in argv and ["-w", "/workdir"] == argv[argv.index("-w"):][:2]
            assert argv[argv.index("--gpus") + 1] == '"device=0"'  # one GPU of the two: Standard_NC6s_v3 has one
            assert argv[argv.index("--shm-size") + 1] == "4g"
            assert argv[argv.index("--cpus") + 1] == "6" and argv[argv.index("--memory") + 1] == f"{112 * 1024}m"
            names = [argv[at + 1] for at, piece in enumerate(argv) if piece == "-e"]
            assert "EPOCHS" in names and not any("=" in name for name in names)  # values stay off the command line
            assert argv[-4:-2] == ["python:3.11-slim", "/bin/sh"] and argv[-2:] == ["-c", argv[-1]]
            assert "echo in the container" in argv[-1]
            assert [line.text for line in job.log_lines.order_by("seq")][0] == "in the container"
        finally:
            clean(server, jobs_dir)


def test_a_job_asking_more_gpus_than_the_vm_has_fails_at_once(owner_api, workspace, sshd, jobs_dir):
    with ssh_stubs.sshd_with_stubs(gpus=1) as (server, _stubs):
        try:
            attach(owner_api, server)
            job = submit(owner_api, name="greedy", resources={"instance_type": "Standard_NC24s_v3"})
            job, _ = look(job)
            assert job.status == JobStatus.FAILED
            assert "has 1" in job.status_reason, job.status_reason
        finally:
            clean(server, jobs_dir)



def test_a_job_outlives_a_dropped_network_and_its_logs_resume_from_the_offset(owner_api, workspace, owner, netns_host,
                                                                             settings, tmp_path):
    """A host of its own network (tests/netns.py): the link goes down mid-job; the job keeps running there, looks
    meanwhile keep it Running (said once), and once the link is back every line arrives once, in order."""
    settings.DOCKYARD_JOB_DIR = tmp_path / "jobs"
    settings.DOCKYARD_SSH_JOBS_DIR = f".dockyard/test-{secrets.token_hex(4)}"
    properties, secret = netns_host.record()
    vm = ComputeTarget(workspace=workspace, name="gpubox", type=ComputeType.VIRTUALMACHINE, created_by=owner,
                       provisioning_state=ProvisioningState.SUCCEEDED, properties=properties,
                       status={"host_key_confirmed": True, "systemd": False, "gpus": []})
    vm.secrets = secret
    vm.save()
    try:
        job = submit(owner_api, name="across", command="for i in $(seq 1 40); do echo line $i; sleep 0.2; done")
        job = until(job, lambda job: job.status == JobStatus.RUNNING and job.log_line_count > 0)
        with netns.drop_link(netns_host):
            job, _ = look(job)  # the host does not answer: still Running, said once
            assert job.status == JobStatus.RUNNING
            job, _ = look(job)
            assert job.events.filter(reason="HostUnreachable").count() == 1
        job = until(job, lambda job: job.status == JobStatus.COMPLETED, timeout=60)
        assert [line.text for line in job.log_lines.order_by("seq")] == [f"line {i}" for i in range(1, 41)]
    finally:
        clean(netns_host.sshd, settings.DOCKYARD_SSH_JOBS_DIR)
