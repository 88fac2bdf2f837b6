"""The fake `docker` and `nvidia-smi` of tests/ssh_stubs.py, run as processes here and over a real sshd."""
import shutil
import signal
import subprocess
import time

import pytest

from compute.runners import ssh
from compute.runners.docker_run import docker_run_argv, docker_stop_argv, shell_join
from tests import sshd as server
from tests.ssh_stubs import (
    DOCKER_VERSION,
    SMI_QUERY,
    docker_calls,
    environment,
    fake_docker,
    fake_nvidia_smi,
    remote_path,
    sshd_with_stubs,
    stub_folder,
)


@pytest.fixture
def stubs():
    folder = stub_folder()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def job_argv(folder, command: str, **changes) -> list[str]:
    given = dict(key="7-abc", folder=str(folder / "job"), image="ubuntu@sha256:" + "ab" * 32, command=command,
                 env_names=["GREETING"], gpus=[0, 1], shm_size=None, cpus=None, memory_mb=None)
    return docker_run_argv(**{**given, **changes})


def run(argv: list[str], folder, **env) -> subprocess.CompletedProcess:
    return subprocess.run(argv, env=environment(folder, **env), capture_output=True, text=True, timeout=30)


def test_fake_docker_records_each_call_and_prints_a_line(stubs):
    calls = fake_docker(stubs)
    argv = job_argv(stubs, "echo \"it's\"\nexit 3")
    done = run(argv, stubs)
    assert (done.returncode, done.stdout) == (0, "fake docker: run dockyard-job-7-abc\n")
    assert run(docker_stop_argv("7-abc"), stubs).stdout == "dockyard-job-7-abc\n"
    assert run(["docker", "--version"], stubs).stdout == DOCKER_VERSION + "\n"
    assert docker_calls(stubs) == [argv[1:], ["stop", "dockyard-job-7-abc"], ["--version"]]
    assert calls.read_text().count("\n") == 3  # one JSON list a line


def test_fake_docker_runs_the_command_in_the_workdir_when_asked(stubs):
    fake_docker(stubs)
    (stubs / "job" / "workdir").mkdir(parents=True)
    command = 'echo "$GREETING from $(pwd)"; mkdir -p outputs && echo 1 > outputs/model.txt; exit 3'
    done = run(job_argv(stubs, command), stubs, FAKE_DOCKER_RUN="1", GREETING="hello")
    assert (done.returncode, done.stdout) == (3, f"hello from {stubs}/job/workdir\n")
    assert (stubs / "job" / "workdir" / "outputs" / "model.txt").read_text() == "1\n"


@pytest.mark.parametrize("how", ["docker stop", "TERM to the client"])
def test_a_running_fake_container_ends_by_docker_stop_or_a_signal_to_the_client(stubs, how):
    fake_docker(stubs, run=True)
    (stubs / "job" / "workdir").mkdir(parents=True)
    container = subprocess.Popen(job_argv(stubs, "echo started; sleep 30"), env=environment(stubs),
                                 stdout=subprocess.PIPE, text=True)
    try:
        assert container.stdout.readline() == "started\n"
        began = time.monotonic()
        if how == "docker stop":
            assert run(docker_stop_argv("7-abc"), stubs).returncode == 0
        else:
            container.send_signal(signal.SIGTERM)
        assert container.wait(10) == 128 + signal.SIGTERM and time.monotonic() - began < 5
        assert not (stubs / "containers" / "dockyard-job-7-abc").exists()
    finally:
        container.kill()
        container.wait()


def test_fake_nvidia_smi_answers_the_probe_query_only(stubs):
    fake_nvidia_smi(stubs, 2)
    done = run(["nvidia-smi", *SMI_QUERY], stubs)
    assert done.returncode == 0
    rows = [line.split(", ") for line in done.stdout.splitlines()]
    assert [(row[0], row[1], row[2], row[4]) for row in rows] == [
        ("0", "NVIDIA A100 80GB PCIe", "81920", "535.104.05"), ("1", "NVIDIA A100 80GB PCIe", "81920", "535.104.05")]
    assert rows[0][3].startswith("GPU-") and rows[0][3] != rows[1][3]
    assert run(["nvidia-smi", "--query-gpu=index", "--format=csv"], stubs).returncode == 2
    fake_nvidia_smi(stubs, 0)
    assert run(["nvidia-smi", *SMI_QUERY], stubs).stdout == ""


def test_the_stubs_are_first_on_the_remote_path_of_a_restarted_sshd(stubs):
    """As the SSH job runner's tests do it: the sshd's SetEnv puts the stub folder first on PATH; a `docker run`
    sent over a Session (shell-quoted by shell_join) arrives at the fake docker as the exact argv."""
    if server.available():
        pytest.skip(server.available())
    fake_docker(stubs)
    fake_nvidia_smi(stubs, 1)
    sshd = server.start_sshd()
    try:
        sshd.start(SetEnv=remote_path(stubs))
        host = ssh.SshHost(sshd.address, sshd.port, sshd.username, private_key=sshd.private_key,
                           host_key=sshd.host_key)
        argv = job_argv(stubs, "echo \"it's\" $HOME\nprintf '%s\\n' done")
        with ssh.session(host) as session:
            started = session.run(shell_join(argv))
            smi = session.run(shell_join(["nvidia-smi", *SMI_QUERY]))
            stopped = session.run(shell_join(docker_stop_argv("7-abc")))
    finally:
        sshd.stop()
        shutil.rmtree(sshd.folder, ignore_errors=True)
    assert (started.exit_status, started.text()) == (0, "fake docker: run dockyard-job-7-abc\n")
    assert smi.ok and smi.text().startswith("0, NVIDIA A100 80GB PCIe, 81920, GPU-")
    assert stopped.ok
    assert docker_calls(stubs) == [argv[1:], ["stop", "dockyard-job-7-abc"]]
    assert argv[argv.index("--gpus") + 1] == '"device=0,1"'


def test_a_fake_container_started_over_ssh_writes_into_the_job_folder():
    """With run=True the command itself runs on the "VM" as the SSH user, in the job's workdir."""
    if server.available():
        pytest.skip(server.available())
    with sshd_with_stubs(gpus=None, run=True) as (sshd, stubs):
        workdir = stubs / "job" / "workdir"
        workdir.mkdir(parents=True)
        for made in (stubs / "job", workdir):
            shutil.chown(made, sshd.username)
        host = ssh.SshHost(sshd.address, sshd.port, sshd.username, private_key=sshd.private_key,
                           host_key=sshd.host_key)
        command = "echo \"$GREETING as $(id -un)\"; mkdir outputs && echo 1 > outputs/model.txt; exit 3"
        with ssh.session(host) as session:
            done = session.run(f"GREETING=hello {shell_join(job_argv(stubs, command))}")
            smi = session.run("command -v nvidia-smi || echo none")
        assert (done.exit_status, done.text()) == (3, f"hello as {sshd.username}\n")
        assert (workdir / "outputs" / "model.txt").read_text() == "1\n"
        assert smi.text() == "none\n"  # gpus=None: a VM without the NVIDIA driver
