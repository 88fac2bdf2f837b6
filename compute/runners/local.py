"""Processes on the worker's host, each in its own session and process group, findable again after a worker restart.

The command runs under a small shell wrapper that is detached from the worker (double fork: the worker never has
to reap it, so any worker process can follow it). The wrapper writes its pid first and the command's exit code
last, both into the run folder: a worker that restarts reads them back instead of depending on memory. Jobs and
deployments run their command in a sandbox (sandbox.py) that does not see the run folder, only what it was given.
"""
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .sandbox import Sandbox

PID_FILE, EXIT_FILE, LOG_FILE = "run.pid", "exit_code", "output.log"
MAX_LINE = 16 * 1024  # longer lines are cut: a runaway print must not fill the database
MAX_READ = 1024 * 1024  # bytes taken per look; the rest waits for the next one
# $1 = command, $2 = run folder. The wrapper is the group leader; its pid is the group's id.
WRAPPER = 'echo $$ > "$2/run.pid"; "$0" -c "$1"; code=$?; echo $code > "$2/exit_code.tmp" && mv "$2/exit_code.tmp" "$2/exit_code"'
SHELL = "/bin/bash" if Path("/bin/bash").exists() else "/bin/sh"


@dataclass(frozen=True)
class Process:
    """What identifies a started run: host, pid (= process group id), the kernel's start tick, run folder."""

    host: str
    pid: int
    start_ticks: int
    folder: str

    def as_dict(self) -> dict:
        return {"host": self.host, "pid": self.pid, "start_ticks": self.start_ticks, "folder": self.folder}

    @classmethod
    def from_dict(cls, data: dict) -> "Process":
        return cls(data["host"], int(data["pid"]), int(data["start_ticks"]), data["folder"])


def host() -> str:
    return socket.gethostname()


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat after the command name (state first), or None when there is no such process."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return raw[raw.rindex(")") + 2:].split()


def _start_ticks(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[19]) if fields else None  # field 22 of stat: start time in clock ticks since boot


def spawn(command: str, folder: Path, cwd: Path, env: dict[str, str], sandbox: Sandbox | None = None) -> Process:
    """Start `command` in a new session, output to the run folder's log; returns once the wrapper's pid is known.

    With a sandbox, the command runs inside it with the sandbox's environment (`env` is then not used): the wrapper
    stays outside, so the pid file, exit code and log are written where the command cannot reach them.
    """
    folder.mkdir(parents=True, exist_ok=True)
    cwd.mkdir(parents=True, exist_ok=True)
    for stale in (PID_FILE, EXIT_FILE):
        (folder / stale).unlink(missing_ok=True)
    if sandbox is not None:
        command, env = sandbox.launch(command, folder, cwd)
    with open(folder / LOG_FILE, "ab") as log:
        # `setsid` makes the wrapper a session and group leader; `&` detaches it from the outer shell, which exits.
        launcher = subprocess.Popen(
            ["/bin/sh", "-c", 'setsid "$0" -c "$1" "$2" "$3" "$4" < /dev/null &', SHELL, WRAPPER, SHELL, command, str(folder)],
            cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, close_fds=True,
        )
        launcher.wait()
    return adopt(folder, wait=5.0) or _fail_to_start(folder)


def _fail_to_start(folder: Path):
    raise OSError(f"The process did not start (no pid file in {folder}).")


def adopt(folder: Path, wait: float = 0.0) -> Process | None:
    """The run whose wrapper wrote its pid into `folder`, if there is one (after a crash between start and save)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            pid = int((folder / PID_FILE).read_text().strip())
        except (FileNotFoundError, ValueError):
            pid = None
        if pid:
            # Only the wrapper started for this folder counts: after the run ended (or a reboot) the pid may be another's.
            ticks = _start_ticks(pid) if _is_wrapper_of(pid, folder) else None
            return Process(host(), pid, ticks if ticks is not None else -1, str(folder))
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.01)


def _is_wrapper_of(pid: int, folder: Path) -> bool:
    """The process is a wrapper started for `folder` (the folder is its last argument)."""
    fields = _stat(pid)
    if fields and fields[0] == "Z":
        return int(fields[3]) == pid  # an ended session leader not reaped yet (a zombie shows no command line)
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False
    last = os.fsdecode(args[-2] if len(args) > 1 and args[-1] == b"" else args[-1])
    return last == str(folder) or os.path.realpath(last) == os.path.realpath(folder)


def _owns_group(process: Process) -> bool:
    """The group with the run's pid as id is still the run's.

    Its leader is the wrapper we started (alive or a zombie), or the leader is gone: a pid is not given out again while
    a group still uses it as id, so what is left in the group is what the run left behind. A leader with another start
    tick took over the pid after the whole group had ended: that group is someone else's.
    """
    ticks = _start_ticks(process.pid)
    return ticks is None or ticks == process.start_ticks


def is_running(process: Process) -> bool:
    """The wrapper is alive and is the process we started (not a recycled pid, not a zombie)."""
    fields = _stat(process.pid)
    return bool(fields) and fields[0] not in ("Z", "X") and int(fields[19]) == process.start_ticks


def group_alive(pgid: int) -> bool:
    """Any process left in the group (children the command left behind count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return any(_in_group(entry.name, pgid) for entry in Path("/proc").iterdir() if entry.name.isdigit())


def _in_group(pid: str, pgid: int) -> bool:
    fields = _stat(int(pid))
    return bool(fields) and fields[0] not in ("Z", "X") and int(fields[2]) == pgid


def exit_code(process: Process) -> int | None:
    """The command's exit code once the wrapper wrote it."""
    try:
        return int((Path(process.folder) / EXIT_FILE).read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def kill_group(process: Process, grace: float = 3.0) -> None:
    """SIGTERM the whole group, then SIGKILL whatever is still there after `grace` seconds."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 1.0)):
        if not _owns_group(process):
            return  # the run's group ended and its pid was given to another process since
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not group_alive(process.pid):
                return
            time.sleep(0.05)


def read_lines(process: Process, offset: int, final: bool) -> tuple[list[str], int]:
    """Complete lines written since `offset` (and the unfinished last one when `final`); returns them and the new offset."""
    path = Path(process.folder) / LOG_FILE
    try:
        with open(path, "rb") as log:
            log.seek(offset)
            data = log.read(MAX_READ)
    except FileNotFoundError:
        return [], offset
    return lines_of(data, offset, final, MAX_READ)


def lines_of(data: bytes, offset: int, final: bool, cap: int) -> tuple[list[str], int]:
    """The complete lines of `data` read from `offset` (at most `cap` bytes were asked for), and the unfinished last
    one when `final` and nothing more was left; returns them and the offset after them."""
    end = len(data) if final and len(data) < cap else data.rfind(b"\n") + 1
    if end <= 0 and len(data) >= cap:
        end = len(data)  # one line longer than a whole read: take it in pieces
    chunk = data[:end]
    lines = chunk.decode("utf-8", errors="replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:MAX_LINE] for line in lines], offset + end
