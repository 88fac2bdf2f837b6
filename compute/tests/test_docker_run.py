"""The `docker run` / `docker stop` command lines of a container job on an attached VM (pure), and what the real Docker
CLI makes of them where one is installed."""
import http.server
import json
import os
import shlex
import shutil
import socketserver
import subprocess
import tempfile
import threading

import pytest

from compute.runners.docker_run import docker_run_argv, docker_stop_argv, shell_join

DIR = "/home/azureuser/.dockyard/jobs/7-5f1a2b3c4d5e6"
IMAGE = "mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu20.04:latest"
DIGEST = "mcr.microsoft.com/azureml/curated/acpt@sha256:" + "0123456789abcdef" * 4
HEAD = ["docker", "run", "--rm", "--name", "dockyard-job-7-5f1a2b3c4d5e6", "--label", "dockyard.dev/job=7-5f1a2b3c4d5e6",
        "--init", "-v", f"{DIR}/workdir:/workdir", "-v", f"{DIR}/inputs:{DIR}/inputs:ro", "-w", "/workdir",
        "-e", "AZUREML_RUN_ID", "-e", "CUDA_VISIBLE_DEVICES"]
TRICKY = "echo \"it's done\"\nprintf '%s\\n' $HOME; python -c 'print(1)'"


def argv(**changes) -> list[str]:
    given = dict(key="7-5f1a2b3c4d5e6", folder=DIR, image=IMAGE, command="python train.py",
                 env_names=["AZUREML_RUN_ID", "CUDA_VISIBLE_DEVICES"], gpus=[], shm_size=None, cpus=None, memory_mb=None)
    return docker_run_argv(**{**given, **changes})


@pytest.mark.parametrize("changes, middle, tail", [
    pytest.param({}, [], [IMAGE, "/bin/sh", "-c", "python train.py"], id="no GPUs"),
    pytest.param({"gpus": [1]}, ["--gpus", '"device=1"'], [IMAGE, "/bin/sh", "-c", "python train.py"], id="one GPU"),
    pytest.param({"gpus": [0, 1]}, ["--gpus", '"device=0,1"'], [IMAGE, "/bin/sh", "-c", "python train.py"],
                 id="two GPUs"),
    pytest.param({"shm_size": "8g"}, ["--shm-size", "8g"], [IMAGE, "/bin/sh", "-c", "python train.py"], id="shm size"),
    pytest.param({"cpus": 4, "memory_mb": 14336}, ["--cpus", "4", "--memory", "14336m"],
                 [IMAGE, "/bin/sh", "-c", "python train.py"], id="cpus and memory"),
    pytest.param({"cpus": 1.5}, ["--cpus", "1.5"], [IMAGE, "/bin/sh", "-c", "python train.py"], id="fractional cpus"),
    pytest.param({"gpus": [2, 3], "shm_size": "2g", "cpus": 12, "memory_mb": 114688},
                 ["--gpus", '"device=2,3"', "--shm-size", "2g", "--cpus", "12", "--memory", "114688m"],
                 [IMAGE, "/bin/sh", "-c", "python train.py"], id="everything, in order"),
    pytest.param({"image": DIGEST}, [], [DIGEST, "/bin/sh", "-c", "python train.py"], id="image by digest"),
    pytest.param({"command": TRICKY}, [], [IMAGE, "/bin/sh", "-c", TRICKY], id="quotes and newlines"),
])
def test_docker_run_argv(changes, middle, tail):
    assert argv(**changes) == HEAD + middle + tail


def test_no_environment_values_on_the_command_line():
    line = argv(env_names=["DOCKYARD_TOKEN"])
    assert line[line.index("DOCKYARD_TOKEN") - 1] == "-e" and not any("=" in piece and "TOKEN" in piece for piece in line)


def test_a_folder_given_with_a_trailing_slash_mounts_the_same_paths():
    assert argv(folder=DIR + "/") == argv()


@pytest.mark.parametrize("field, value", [("image", "--privileged"), ("image", ""), ("key", "-x")])
def test_values_read_as_options_are_refused(field, value):
    with pytest.raises(ValueError, match=field):
        argv(**{field: value})


def test_docker_stop_argv():
    assert docker_stop_argv("7-5f1a2b3c4d5e6") == ["docker", "stop", "dockyard-job-7-5f1a2b3c4d5e6"]


def test_the_shell_line_is_docker_documented_form_and_splits_back_to_the_argv():
    line = argv(gpus=[0, 2], command=TRICKY)
    joined = shell_join(line)
    assert "--gpus '\"device=0,2\"'" in joined  # as Docker's "GPU access" page writes several devices
    assert shlex.split(joined) == line


# The real Docker CLI, where one is installed, reads the argv as meant: it parses every flag before it talks to the
# daemon, so a stand-in daemon on a unix socket sees the container it was asked to create (no Docker engine here).


class _Daemon(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str):
        self.created: list[dict] = []
        super().__init__(path, _DaemonHandler)

    def handle_error(self, request, client_address):
        pass  # the CLI may hang up after a ping's headers


class _DaemonHandler(http.server.BaseHTTPRequestHandler):
    """Answers pings; records a container create's body and refuses it (so the CLI stops there)."""

    def address_string(self):
        return "unix"

    def _send(self, code: int, body: bytes = b"") -> None:
        self.send_response(code)
        self.send_header("Api-Version", "1.41")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_HEAD(self):
        self._send(200)

    def do_GET(self):
        self._send(200, b"OK")

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.split("?")[0].endswith("/containers/create"):
            self.server.created.append(json.loads(body))
        self._send(500, json.dumps({"message": "no engine here"}).encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def docker_cli():
    """(run an argv with the real docker CLI against a stand-in daemon, the bodies of the creates it sent)."""
    if not shutil.which("docker"):
        pytest.skip("No docker CLI is installed here.")
    folder = tempfile.mkdtemp(prefix="dy-docker-")  # short: a unix socket path has a length limit
    daemon = _Daemon(f"{folder}/docker.sock")
    threading.Thread(target=daemon.serve_forever, daemon=True).start()
    env = {"PATH": os.environ["PATH"], "HOME": folder, "DOCKER_CONFIG": folder, "DOCKER_HOST": f"unix://{folder}/docker.sock",
           "AZUREML_RUN_ID": "run-1", "CUDA_VISIBLE_DEVICES": ""}

    def run(line: list[str]) -> dict:
        before = len(daemon.created)
        done = subprocess.run(line, env=env, capture_output=True, text=True, timeout=30)
        assert len(daemon.created) == before + 1, f"the docker CLI did not ask to create a container: {done.stderr}"
        return daemon.created[-1]

    yield run
    daemon.shutdown()
    daemon.server_close()
    shutil.rmtree(folder, ignore_errors=True)


def test_the_docker_cli_creates_the_container_meant(docker_cli):
    created = docker_cli(argv(gpus=[0, 1], shm_size="2g", cpus=1.5, memory_mb=1024, image=DIGEST, command=TRICKY))
    host = created["HostConfig"]
    assert [request["DeviceIDs"] for request in host["DeviceRequests"]] == [["0", "1"]]
    assert host["DeviceRequests"][0]["Count"] == 0 and host["DeviceRequests"][0]["Capabilities"] == [["gpu"]]
    assert (host["ShmSize"], host["NanoCpus"], host["Memory"]) == (2 * 1024**3, 1_500_000_000, 1024 * 1024**2)
    assert host["AutoRemove"] is True and host["Init"] is True
    assert sorted(host["Binds"]) == [f"{DIR}/inputs:{DIR}/inputs:ro", f"{DIR}/workdir:/workdir"]  # (in any order)
    # by name: the values (an empty one too) come from the CLI's environment, none from its command line
    assert sorted(created["Env"]) == ["AZUREML_RUN_ID=run-1", "CUDA_VISIBLE_DEVICES="]
    assert (created["Image"], created["Cmd"], created["WorkingDir"]) == (DIGEST, ["/bin/sh", "-c", TRICKY], "/workdir")
    assert created["Labels"] == {"dockyard.dev/job": "7-5f1a2b3c4d5e6"}


def test_the_docker_cli_reads_an_unquoted_device_list_as_one_gpu(docker_cli):
    """Why the value carries quotes: unquoted, the CLI's CSV reading takes `1` for a count and exposes GPU 0 only."""
    unquoted = argv(gpus=[0, 1])
    unquoted[unquoted.index("--gpus") + 1] = "device=0,1"
    requests = docker_cli(unquoted)["HostConfig"]["DeviceRequests"]
    assert [(request["DeviceIDs"], request["Count"]) for request in requests] == [(["0"], 1)]
    assert docker_cli(argv(gpus=[1]))["HostConfig"]["DeviceRequests"][0]["DeviceIDs"] == ["1"]
