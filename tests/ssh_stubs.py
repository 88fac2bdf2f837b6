"""Stand-ins for a VM's `docker` and `nvidia-smi`, for tests: executables put in a folder that goes first on the remote
PATH (a test sshd restarted with `SetEnv=PATH=<folder>:/usr/local/bin:/usr/bin:/bin`, see `remote_path`).

There is no Docker engine and no GPU here. The fake `docker` records every call's argv (one JSON list per line, in
`docker.calls` next to it) and prints a line; with FAKE_DOCKER_RUN=1 in its environment (or `run=True`), `docker run`
runs the container's command (what follows `/bin/sh -c`) on the host, in the folder mounted at the `-w` directory,
so a job's output and ./outputs appear (nothing else is printed then). The command runs in a process group of its
own, as a container is outside the client's; the fake client forwards TERM/INT/HUP to it (docker run's signal proxy)
and exits with its code (128 + the signal's number when killed); `docker stop <name>` TERMs that group. The fake
`nvidia-smi` answers the probe's exact query with N CSV rows, as nvidia-smi prints them.

The folder and the record file are readable and writable by the sshd's test user (a root test's tmp folders are 0700).
"""
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

CALLS = "docker.calls"
SMI_QUERY = ["--query-gpu=index,name,memory.total,uuid,driver_version", "--format=csv,noheader,nounits"]
DOCKER_VERSION = "Docker version 24.0.7, build afdd53b"

DOCKER = r'''#!/usr/bin/python3
# A fake docker (tests/ssh_stubs.py): records its argv, then acts a little.
import json, os, signal, sys
HERE = os.path.dirname(os.path.abspath(__file__))
RUN = %(run)r or os.environ.get("FAKE_DOCKER_RUN") == "1"
argv = sys.argv[1:]
with open(os.path.join(HERE, %(calls)r), "a") as calls:
    calls.write(json.dumps(argv) + "\n")
if argv[:1] == ["--version"]:
    print(%(version)r)
    sys.exit(0)
if argv[:1] == ["stop"]:
    for name in argv[1:]:
        pidfile = os.path.join(HERE, "containers", name)
        try:
            os.killpg(int(open(pidfile).read()), signal.SIGTERM)
            os.unlink(pidfile)
        except (OSError, ValueError):
            pass
        print(name)
    sys.exit(0)
if argv[:1] == ["run"]:
    name = argv[argv.index("--name") + 1] if "--name" in argv else "container"
    if not RUN:
        print("fake docker: run " + name)
        sys.exit(0)
    inside = argv[argv.index("-w") + 1] if "-w" in argv else "/"
    cwd = "/"
    for at, piece in enumerate(argv[:-1]):
        source, target = (argv[at + 1].split(":") + [""])[:2]
        if piece == "-v" and target == inside:
            cwd = source
    shell = max(at for at in range(len(argv) - 1) if argv[at] == "/bin/sh" and argv[at + 1] == "-c")
    children, pending = [], []

    def forward(signum, frame):  # docker run proxies the signals it gets to the container (--sig-proxy)
        if not children:
            pending.append(signum)  # before the container is known: sent once it is
        for child in children:
            try:
                os.killpg(child, signum)
            except OSError:
                pass

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # before the fork: no signal is lost
        signal.signal(signum, forward)
    child = os.fork()
    if child == 0:  # the "container": a process group of its own, as a real one is outside the client's
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        os.setpgid(0, 0)
        os.chdir(cwd)
        os.execv("/bin/sh", ["/bin/sh", "-c", argv[shell + 2]])
    try:
        os.setpgid(child, child)
    except OSError:
        pass  # the child did it first
    children.append(child)
    for signum in pending:
        forward(signum, None)
    pidfile = os.path.join(HERE, "containers", name)
    with open(pidfile, "w") as written:
        written.write(str(child))
    _, status = os.waitpid(child, 0)
    try:
        os.unlink(pidfile)
    except OSError:
        pass
    code = os.waitstatus_to_exitcode(status)
    sys.exit(128 - code if code < 0 else code)  # killed by a signal: 128 + its number, as the container's init
print("fake docker: " + " ".join(argv[:1]))
'''

NVIDIA_SMI = '''#!/bin/sh
# A fake nvidia-smi (tests/ssh_stubs.py): answers the probe's query only.
if [ "$*" != "%(query)s" ]; then
  echo "fake nvidia-smi: unexpected arguments: $*" >&2
  exit 2
fi
cat <<'ROWS'
%(rows)sROWS
'''


def stub_folder() -> Path:
    """A new folder for stubs that the sshd's test user can read (the caller removes it)."""
    folder = Path(tempfile.mkdtemp(prefix="dy-stubs-"))
    folder.chmod(0o755)
    return folder


def remote_path(folder: Path) -> str:
    """The sshd option that puts the stubs first on the remote PATH: `sshd.start(SetEnv=remote_path(folder))`."""
    return f"PATH={folder}:/usr/local/bin:/usr/bin:/bin"


def _executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def fake_docker(folder: Path, *, run: bool = False) -> Path:
    """Put a fake `docker` into `folder`; returns its record file (created empty, writable by anyone)."""
    _executable(folder / "docker", DOCKER % {"run": run, "calls": CALLS, "version": DOCKER_VERSION})
    calls = folder / CALLS
    calls.write_text("")
    calls.chmod(0o666)
    containers = folder / "containers"
    containers.mkdir(exist_ok=True)
    containers.chmod(0o777)
    return calls


def docker_calls(folder: Path) -> list[list[str]]:
    """The fake docker's calls so far, oldest first."""
    return [json.loads(line) for line in (folder / CALLS).read_text().splitlines() if line]


def gpu_rows(count: int, name: str = "NVIDIA A100 80GB PCIe", memory_mb: int = 81920,
             driver_version: str = "535.104.05") -> list[str]:
    """`count` rows of the probe's query as nvidia-smi prints them (", " between fields, no units, no header)."""
    return [f"{index}, {name}, {memory_mb}, GPU-{index:08x}-1f69-c64e-cf85-44e9b07e7a2a, {driver_version}"
            for index in range(count)]


def fake_nvidia_smi(folder: Path, count: int, **row) -> Path:
    """Put a fake `nvidia-smi` that reports `count` GPUs into `folder`."""
    rows = "".join(line + "\n" for line in gpu_rows(count, **row))
    return _executable(folder / "nvidia-smi", NVIDIA_SMI % {"query": " ".join(SMI_QUERY), "rows": rows})


def environment(folder: Path, **extra: str) -> dict[str, str]:
    """os.environ with the stubs first on PATH, for running them locally."""
    return {**os.environ, "PATH": f"{folder}:{os.environ.get('PATH', '/usr/bin:/bin')}", **extra}


@contextmanager
def sshd_with_stubs(gpus: int | None = 0, *, run: bool = False):
    """A new test sshd whose logins find the fake docker (and, unless gpus is None, a fake nvidia-smi with that many
    GPUs) first on PATH: yields (sshd, stub folder); stopped and removed after."""
    from tests import sshd as server

    folder = stub_folder()
    fake_docker(folder, run=run)
    if gpus is not None:
        fake_nvidia_smi(folder, gpus)
    running = server.start_sshd()
    try:
        running.start(SetEnv=remote_path(folder))
        yield running, folder
    finally:
        running.stop()
        shutil.rmtree(running.folder, ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)
