"""The local runner on this host: real processes in their own session, found again from their run folder, killed as a group.

No database: each test starts (and, in the fixture's teardown, kills) its own process groups. A killed wrapper is
reparented to PID 1, which reaps it a moment later: until then it is a zombie, and "gone" means "no live process".
"""
import os
import signal
import time
from pathlib import Path

import pytest

from compute.runners import local as runner

BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin:/opt/dockyard/bin", "LANG": "C.UTF-8"}


def wait_for(predicate, timeout: float = 10.0, what: str = "the condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"{what} was not reached within {timeout} s")


def stat(pid: int) -> list[str] | None:
    """/proc/<pid>/stat after the command name: [state, ppid, pgrp, session, ...]."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return raw[raw.rindex(")") + 2:].split()


def live_members(pgid: int) -> list[int]:
    """Processes of the group that are alive (zombies waiting for PID 1 to reap them are not)."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = stat(int(entry.name))
            if fields and fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
                members.append(int(entry.name))
    return members


@pytest.fixture
def started(tmp_path):
    """spawn(command, ...) that remembers the groups it started; whatever is left of them is SIGKILLed afterwards."""
    groups: list[int] = []
    counter = iter(range(1000))

    def start(command: str, env: dict | None = None, cwd: Path | None = None) -> runner.Process:
        folder = tmp_path / f"run{next(counter)}"
        process = runner.spawn(command, folder, cwd or folder / "workdir", env if env is not None else dict(BASE_ENV))
        groups.append(process.pid)
        return process

    yield start
    for pgid in groups:
        if live_members(pgid):
            os.killpg(pgid, signal.SIGKILL)


def finished(process: runner.Process, timeout: float = 10.0) -> int:
    """The run's exit code, once the wrapper has written it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        code = runner.exit_code(process)
        if code is not None:
            return code
        time.sleep(0.02)
    raise AssertionError("the run wrote no exit code")


def log_text(process: runner.Process) -> str:
    return (Path(process.folder) / runner.LOG_FILE).read_text()


# spawn: session, working directory, environment, output


def test_spawn_runs_in_a_new_session_and_process_group(started):
    process = started("sleep 30")
    fields = stat(process.pid)
    assert fields is not None and runner.is_running(process)
    pgrp, session = int(fields[2]), int(fields[3])
    assert pgrp == process.pid and session == process.pid  # the wrapper leads its own session and group
    assert process.pid != os.getpgid(0) and session != os.getsid(0)
    assert process.host == runner.host() and process.start_ticks == int(fields[19]) > 0
    assert (Path(process.folder) / runner.PID_FILE).read_text().strip() == str(process.pid)


def test_the_command_gets_the_given_working_directory_and_only_the_given_environment(started, tmp_path, monkeypatch):
    monkeypatch.setenv("SECRET_KEY", "worker-secret")  # in the spawning process's environment, not in the given one
    cwd = tmp_path / "somewhere" / "else"
    process = started('pwd; echo "FOO=$FOO"; env', env={**BASE_ENV, "FOO": "bar baz"}, cwd=cwd)
    assert finished(process) == 0
    lines = log_text(process).splitlines()
    assert lines[0] == str(cwd) and cwd.is_dir()
    assert lines[1] == "FOO=bar baz"
    names = {line.split("=", 1)[0] for line in lines[2:] if "=" in line}
    assert "SECRET_KEY" not in names and "worker-secret" not in log_text(process)
    # What bash adds on its own (PWD, SHLVL, _) is all there is besides the given variables.
    assert names - set(BASE_ENV) - {"FOO"} <= {"PWD", "OLDPWD", "SHLVL", "_"}


def test_stdout_and_stderr_both_land_in_the_log_in_order(started):
    process = started("echo to-stdout; echo to-stderr >&2; echo again")
    assert finished(process) == 0
    assert log_text(process).splitlines() == ["to-stdout", "to-stderr", "again"]


def test_the_command_inherits_no_descriptor_of_the_worker_and_reads_end_of_file(started):
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)  # a socket or pipe of the worker that would otherwise leak into the job
    try:
        process = started("ls /proc/$$/fd; cat; echo read-eof")
        assert finished(process) == 0
    finally:
        os.close(read_end)
        os.close(write_end)
    assert log_text(process).split() == ["0", "1", "2", "read-eof"]


@pytest.mark.parametrize(("command", "code"), [
    ("true", 0),
    ("echo failing; exit 3", 3),
    ("kill -KILL $$", 128 + signal.SIGKILL),
    ("kill -TERM $$", 128 + signal.SIGTERM),
])
def test_exit_codes(started, command, code):
    assert finished(started(command)) == code


def test_a_new_spawn_in_the_same_folder_forgets_the_previous_run(started, tmp_path):
    folder = tmp_path / "again"
    first = runner.spawn("exit 7", folder, folder / "workdir", dict(BASE_ENV))
    assert finished(first) == 7
    second = runner.spawn("sleep 30", folder, folder / "workdir", dict(BASE_ENV))
    try:
        assert runner.exit_code(second) is None and second.pid != first.pid and runner.is_running(second)
    finally:
        os.killpg(second.pid, signal.SIGKILL)


# adopt, is_running: finding a run again without the worker's memory


def test_adopt_finds_a_started_run_from_its_folder(started, tmp_path):
    """A worker that crashed between spawn and saving the pid finds the run from the folder alone."""
    process = started("sleep 30")
    assert runner.adopt(Path(process.folder)) == process
    assert runner.adopt(tmp_path / "never-started") is None
    assert runner.adopt(tmp_path / "never-started", wait=0.2) is None


def test_adopt_of_a_run_that_already_ended_does_not_look_running(started):
    process = started("echo quick")
    assert finished(process) == 0
    wait_for(lambda: not runner.is_running(process), 5, "the wrapper's end")
    adopted = runner.adopt(Path(process.folder))
    assert adopted is not None and adopted.pid == process.pid
    assert not runner.is_running(adopted) and runner.exit_code(adopted) == 0


def test_is_running_is_false_for_a_finished_run(started):
    process = started("sleep 0.2")
    assert runner.is_running(process)
    assert finished(process) == 0
    # The wrapper is a zombie until PID 1 reaps it, then gone: neither counts as running.
    wait_for(lambda: not runner.is_running(process), 5, "the wrapper's end")
    assert not runner.group_alive(process.pid)


def test_adopt_does_not_take_a_recycled_pid_for_the_run(started, tmp_path):
    """The run ended (or the host restarted) and its pid now belongs to another process: that one is not the run."""
    other = started("sleep 30")  # a live session leader, like the wrapper of another run
    folder = tmp_path / "crashed"
    folder.mkdir()
    (folder / runner.PID_FILE).write_text(f"{other.pid}\n")
    adopted = runner.adopt(folder)
    assert adopted is not None and adopted.pid == other.pid
    assert not runner.is_running(adopted)
    runner.kill_group(adopted, grace=0.5)
    assert runner.is_running(other)  # not killed in the run's name
    (folder / runner.PID_FILE).write_text(f"{os.getpid()}\n")
    assert not runner.is_running(runner.adopt(folder))


def test_what_an_adopted_run_left_behind_is_still_killed(started):
    """The command put a child in the background and exited: adopted while its wrapper waits to be reaped (a zombie
    with no command line), the run still owns its group."""
    process = started("sleep 600 & exit 0")
    assert finished(process) == 0
    wait_for(lambda: not runner.is_running(process), 5, "the wrapper's end")  # (it writes its exit code, then ends)
    adopted = runner.adopt(Path(process.folder))
    assert adopted == process and not runner.is_running(adopted)
    assert runner.group_alive(process.pid)  # the background sleep
    runner.kill_group(adopted, grace=1.0)
    assert live_members(process.pid) == [] and not runner.group_alive(process.pid)


def test_kill_group_leaves_a_group_that_took_over_the_pid_alone(started):
    """A job that ended long ago is deleted: its recorded pid may lead another group now (another job, say)."""
    ended = started("true")
    assert finished(ended) == 0
    other = started("sleep 30")
    recycled = runner.Process(ended.host, other.pid, other.start_ticks + 1, ended.folder)  # what the old record says
    runner.kill_group(recycled, grace=0.5)
    assert runner.is_running(other) and len(live_members(other.pid)) >= 1


def test_is_running_is_false_for_a_recycled_pid(started):
    process = started("sleep 30")
    assert runner.is_running(process)
    recycled = runner.Process(process.host, process.pid, process.start_ticks + 1, process.folder)
    assert not runner.is_running(recycled)  # same pid, another process: its start tick differs
    me = runner.Process(process.host, os.getpid(), 1, process.folder)
    assert not runner.is_running(me)
    assert not runner.is_running(runner.Process(process.host, 2**22 + 1, 1, process.folder))  # above pid_max


# kill_group


def test_kill_group_kills_background_children_too(started):
    process = started("sleep 600 & sleep 600 & wait")
    wait_for(lambda: len(live_members(process.pid)) >= 3, 5, "the two background sleeps")
    members = live_members(process.pid)
    runner.kill_group(process, grace=3.0)
    assert live_members(process.pid) == [] and not runner.group_alive(process.pid)
    assert all(stat(pid) is None or stat(pid)[0] == "Z" for pid in members)
    assert runner.exit_code(process) is None  # the wrapper was killed too: no exit code, nothing running
    assert not runner.is_running(process)


def test_kill_group_sigkills_what_ignores_sigterm(started):
    process = started("trap '' TERM; sleep 600")
    wait_for(lambda: len(live_members(process.pid)) >= 2, 5, "the sleep")
    begun = time.monotonic()
    runner.kill_group(process, grace=0.5)
    took = time.monotonic() - begun
    assert live_members(process.pid) == [] and not runner.group_alive(process.pid)
    assert took >= 0.5  # the SIGTERM was ignored: the SIGKILL step ended it


def test_kill_group_of_a_group_that_is_gone_returns_at_once(started):
    process = started("true")
    assert finished(process) == 0
    wait_for(lambda: not runner.group_alive(process.pid), 5, "the end of the group")
    begun = time.monotonic()
    runner.kill_group(process, grace=3.0)
    assert time.monotonic() - begun < 1.0


# read_lines


def log_process(tmp_path: Path, data: bytes) -> runner.Process:
    folder = tmp_path / "log"
    folder.mkdir(exist_ok=True)
    (folder / runner.LOG_FILE).write_bytes(data)
    return runner.Process(runner.host(), 1, 1, str(folder))


def read_all(process: runner.Process, final: bool) -> tuple[list[list[str]], int]:
    """Read until nothing moves, as reconcile does: the lines of each read, and the final offset."""
    offset, reads = 0, []
    while True:
        lines, new_offset = runner.read_lines(process, offset, final)
        assert new_offset - offset <= runner.MAX_READ
        if new_offset == offset:
            return reads, offset
        reads.append(lines)
        offset = new_offset


def test_read_lines_keeps_a_partial_last_line_until_final(tmp_path):
    process = log_process(tmp_path, b"one\ntwo\nthr")
    assert runner.read_lines(process, 0, final=False) == (["one", "two"], 8)
    assert runner.read_lines(process, 8, final=False) == ([], 8)  # not returned until the line is complete...
    with open(Path(process.folder) / runner.LOG_FILE, "ab") as log:
        log.write(b"ee\nfou")
    assert runner.read_lines(process, 8, final=False) == (["three"], 14)
    assert runner.read_lines(process, 14, final=True) == (["fou"], 17)  # ...or the run has ended
    assert runner.read_lines(process, 17, final=True) == ([], 17)


def test_read_lines_of_an_empty_or_missing_log(tmp_path):
    process = log_process(tmp_path, b"")
    assert runner.read_lines(process, 0, final=True) == ([], 0)
    missing = runner.Process(runner.host(), 1, 1, str(tmp_path / "nowhere"))
    assert runner.read_lines(missing, 0, final=True) == ([], 0)
    blank = log_process(tmp_path, b"\n\nx\n")
    assert runner.read_lines(blank, 0, final=False) == (["", "", "x"], 4)


def test_read_lines_cuts_long_lines_at_max_line(tmp_path):
    long = "é" * (runner.MAX_LINE + 10)  # characters, not bytes: two bytes each
    process = log_process(tmp_path, f"{long}\nnext\n".encode())
    lines, offset = runner.read_lines(process, 0, final=False)
    assert lines == ["é" * runner.MAX_LINE, "next"] and offset == len(long.encode()) + 6


def test_read_lines_reads_more_than_max_read_in_pieces(tmp_path):
    line = "x" * 99
    count = (runner.MAX_READ * 5 // 2) // 100  # 2.5 reads' worth of 100-byte lines
    process = log_process(tmp_path, f"{line}\n".encode() * count + b"tail")
    reads, offset = read_all(process, final=False)
    assert len(reads) == 3 and [len(lines) for lines in reads][:2] == [runner.MAX_READ // 100] * 2
    assert sum(reads, []) == [line] * count and offset == count * 100  # the unfinished "tail" waits
    reads, offset = read_all(process, final=True)
    assert sum(reads, []) == [line] * count + ["tail"] and offset == count * 100 + 4


def test_read_lines_takes_a_line_longer_than_a_read_in_pieces(tmp_path):
    process = log_process(tmp_path, b"y" * (runner.MAX_READ + 5) + b"\nafter\n")
    lines, offset = runner.read_lines(process, 0, final=False)
    assert lines == ["y" * runner.MAX_LINE] and offset == runner.MAX_READ  # no newline in a whole read: no deadlock
    lines, offset = runner.read_lines(process, offset, final=False)
    assert lines == ["yyyyy", "after"] and offset == runner.MAX_READ + 12


def test_read_lines_replaces_invalid_utf8(tmp_path):
    process = log_process(tmp_path, b"ok \xff\xfe bad\n\xc3\n\xe2\x82\xac\n")
    lines, offset = runner.read_lines(process, 0, final=False)
    assert lines == ["ok \ufffd\ufffd bad", "\ufffd", "€"] and offset == 16
    truncated = log_process(tmp_path, b"half \xe2\x82")
    assert runner.read_lines(truncated, 0, final=True) == (["half \ufffd"], 7)
