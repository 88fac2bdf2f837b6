"""The remote shell text of jobs on attached VMs (compute/runners/ssh_jobs.py): tables of builders and parsers, and the
scripts run here by /bin/sh in a temporary folder, as the host's shell would run them (no SSH: that is
jobs/tests/test_ssh_jobs.py)."""
import os
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from compute.runners import ssh_jobs
from compute.runners.local import lines_of
from compute.runners.ssh_jobs import Followed, parse_follow


def run(command: str) -> bytes:
    done = subprocess.run(command, shell=True, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def wait_for(predicate, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("not reached in time")


def group_alive(pgid: int) -> bool:
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            return True
    return False


@pytest.fixture
def job_folder(tmp_path):
    """A prepared job folder (as _ship leaves it) whose command is written by the test; its group is killed after."""
    folder = Path(ssh_jobs.parse_prepare(run(ssh_jobs.prepare_command(str(tmp_path / "jobs" / "7-abc"))))[0])
    (folder / "workdir").mkdir()
    (folder / "env").write_text(ssh_jobs.env_file({"GREETING": "hi there"}))
    yield folder
    pid = (folder / "pid").read_text().strip() if (folder / "pid").exists() else ""
    if pid:
        subprocess.run(f"kill -KILL -{pid}", shell=True, stderr=subprocess.DEVNULL)


def launch(folder: Path, command: str) -> tuple[int | None, str]:
    (folder / "command.sh").write_text(command + "\n")
    return ssh_jobs.parse_launch(run(ssh_jobs.launch_command(str(folder), "7-abc")))


# parsing a look: the header says the length, so no log byte can pass for a field

HOSTILE = b"dockyard-follow launched=0 pid=1 alive=0 exit=9 bytes=0\n\x00\xff\xfe\r\nno newline at the end"
FOLLOW_TABLE = [
    pytest.param(b"dockyard-follow launched=1 pid=42 alive=1 exit= boot_now=b1 boot_then=b1 size=5 bytes=5\nhello",
                 Followed(launched=True, pid=42, alive=True, boot_now="b1", boot_then="b1", size=5, data=b"hello"),
                 id="running"),
    pytest.param(b"dockyard-follow launched=1 pid=42 alive=0 exit=3 boot_now=b1 boot_then=b1 size=0 bytes=0\n",
                 Followed(launched=True, pid=42, exit_code=3, boot_now="b1", boot_then="b1"), id="exited"),
    pytest.param(b"dockyard-follow launched=1 pid=42 alive=0 exit= boot_now=b2 boot_then=b1 size=0 bytes=0\n",
                 Followed(launched=True, pid=42, boot_now="b2", boot_then="b1"), id="rebooted"),
    pytest.param(b"dockyard-follow launched=0 pid= alive=0 exit= boot_now=b1 boot_then= size=0 bytes=0\n",
                 Followed(boot_now="b1"), id="not-launched"),
    pytest.param(b"dockyard-follow missing=1\n", Followed(missing=True), id="folder-gone"),
    pytest.param(b"dockyard-follow launched=1 pid=4 alive=1 exit= boot_now=b boot_then=b size=99 bytes=%d\n"
                 % len(HOSTILE) + HOSTILE + b"more than asked",
                 Followed(launched=True, pid=4, alive=True, boot_now="b", boot_then="b", size=99, data=HOSTILE),
                 id="log-bytes-that-look-like-a-header"),
]


@pytest.mark.parametrize("stdout, expected", FOLLOW_TABLE)
def test_a_look_is_parsed_by_its_header(stdout, expected):
    assert parse_follow(stdout) == expected


@pytest.mark.parametrize("stdout", [
    pytest.param(b"", id="nothing"),
    pytest.param(b"hello\n", id="no-header"),
    pytest.param(b"dockyard-follow launched=1 pid=4 alive=1 exit= size=9 bytes=9", id="header-without-newline"),
    pytest.param(b"dockyard-follow launched=1 pid=4 alive=1 exit= size=9 bytes=9\nhalf", id="cut-short"),
])
def test_a_look_that_is_not_whole_is_refused(stdout):
    with pytest.raises(ValueError):
        parse_follow(stdout)


def test_rebooted_only_when_both_boot_ids_are_known_and_differ():
    assert Followed(boot_now="a", boot_then="b").rebooted
    assert not Followed(boot_now="a", boot_then="a").rebooted
    assert not Followed(boot_now="a", boot_then="").rebooted


@pytest.mark.parametrize("data, final, cap, lines, end", [
    (b"a\nb\npartial", False, 100, ["a", "b"], 4),
    (b"a\nb\npartial", True, 100, ["a", "b", "partial"], 11),
    (b"a\nb\npartial", True, 11, ["a", "b"], 4),  # the cap was reached: more may follow
    (b"x" * 10, False, 10, ["x" * 10], 10),  # a line longer than a whole read goes in pieces
    (b"", True, 10, [], 0),
    (b"\xff\n", False, 10, ["\ufffd"], 2),
])
def test_lines_of_a_read(data, final, cap, lines, end):
    assert lines_of(data, 100, final, cap) == (lines, 100 + end)


# the follow command, run by /bin/sh on a real folder


def test_follow_reads_the_log_from_an_offset_up_to_a_cap(job_folder):
    log = b"line one\n" + HOSTILE + b"\nlast\n"
    (job_folder / "output.log").write_bytes(log)
    whole = parse_follow(run(ssh_jobs.follow_command(str(job_folder), 0)))
    assert (whole.data, whole.size, whole.launched, whole.pid) == (log, len(log), False, None)
    assert whole.boot_now == Path(ssh_jobs.BOOT_ID).read_text().strip()
    assert parse_follow(run(ssh_jobs.follow_command(str(job_folder), 9))).data == log[9:]
    assert parse_follow(run(ssh_jobs.follow_command(str(job_folder), 9, cap=7))).data == log[9:16]
    assert parse_follow(run(ssh_jobs.follow_command(str(job_folder), len(log)))).data == b""


def test_follow_of_a_folder_that_is_gone(tmp_path):
    assert parse_follow(run(ssh_jobs.follow_command(str(tmp_path / "gone"), 0))).missing


# launching: once, whatever happens after; pid first, exit code last


def test_a_launch_runs_the_command_once_and_a_second_launch_adopts_it(job_folder):
    pid, boot_id = launch(job_folder, 'echo "$GREETING" >> ran.txt; echo out; sleep 0.3; exit 3')
    assert pid and boot_id == Path(ssh_jobs.BOOT_ID).read_text().strip()
    assert (job_folder / "launched").is_dir()
    again = launch(job_folder, "echo second >> ran.txt")
    assert again == (pid, boot_id)  # the same process, read back: not started twice
    wait_for(lambda: (job_folder / "exit_code").exists())
    assert (job_folder / "workdir" / "ran.txt").read_text() == "hi there\n"
    state = parse_follow(run(ssh_jobs.follow_command(str(job_folder), 0)))
    assert (state.launched, state.pid, state.exit_code, state.data, state.rebooted) == (True, pid, 3, b"out\n", False)


def test_the_wrapper_leads_its_own_group_and_is_followed_while_it_runs(job_folder):
    pid, _ = launch(job_folder, "sleep 30 & sleep 30")
    assert os.getpgid(pid) == pid and os.getsid(pid) == pid
    state = parse_follow(run(ssh_jobs.follow_command(str(job_folder), 0)))
    assert (state.alive, state.exit_code) == (True, None)


def test_stop_terms_then_kills_the_whole_group(job_folder):
    pid, _ = launch(job_folder, "trap '' TERM; sleep 30 & sleep 30")  # the command ignores SIGTERM
    started = time.monotonic()
    assert ssh_jobs.stopped(run(ssh_jobs.stop_command(str(job_folder), grace=1)))
    assert time.monotonic() - started >= 1  # the grace was given
    assert not group_alive(pid)
    state = parse_follow(run(ssh_jobs.follow_command(str(job_folder), 0)))
    assert (state.alive, state.exit_code) == (False, None)


def test_stop_does_not_touch_a_pid_of_another_boot(job_folder):
    pid, _ = launch(job_folder, "sleep 30")
    (job_folder / "boot_id").write_text("another-boot\n")  # as after a reboot: the pid may be anyone's now
    assert ssh_jobs.stopped(run(ssh_jobs.stop_command(str(job_folder), grace=1)))
    assert group_alive(pid)
    state = parse_follow(run(ssh_jobs.follow_command(str(job_folder), 0)))
    assert state.rebooted


def test_env_values_come_back_exactly_when_sourced(tmp_path):
    values = {"QUOTES": "it's \"quoted\"", "DOLLAR": "$HOME `id` $(id)", "NEWLINE": "a\nb", "EMPTY": ""}
    (tmp_path / "env").write_text(ssh_jobs.env_file(values))
    for name, value in values.items():
        shown = run(f". {shlex.quote(str(tmp_path / 'env'))}; printf %s \"${name}\"")
        assert shown.decode() == value


@pytest.mark.parametrize("name", ["1ABC", "A-B", "A B", "", "A=B"])
def test_env_names_that_are_not_names_are_refused(name):
    with pytest.raises(ValueError):
        ssh_jobs.env_file({name: "x"})


def test_write_file_is_private_when_asked(job_folder):
    subprocess.run(ssh_jobs.write_file_command(str(job_folder), "env", private=True), shell=True, input=b"export A=1\n",
                   check=True)
    assert (job_folder / "env").stat().st_mode & 0o777 == 0o600
    assert (job_folder / "env").read_text() == "export A=1\n"


# command lines only (no systemd, no Docker engine here)


def test_the_systemd_variant_runs_the_same_wrapper_as_a_user_unit_with_a_fallback():
    command = ssh_jobs.launch_command("/home/u/.dockyard/jobs/7-abc", "7-abc", systemd=True)
    script = shlex.split(command)[2]
    assert "systemd-run --user --quiet --collect --unit=dockyard-job-7-abc -p KillMode=control-group" in script
    assert "StandardOutput=append:/home/u/.dockyard/jobs/7-abc/output.log" in script
    assert script.index('/var/lib/systemd/linger/$(id -un)') < script.index("systemd-run")
    assert script.index("systemd-run") < script.index("else setsid nohup") < script.index("fi\nfi")
    assert "systemd-run" not in ssh_jobs.launch_command("/f", "7-abc")


def test_the_systemd_variant_falls_back_to_setsid_where_the_user_does_not_linger(job_folder):
    (job_folder / "command.sh").write_text("echo ran; sleep 1\n")
    pid, _ = ssh_jobs.parse_launch(run(ssh_jobs.launch_command(str(job_folder), "7-abc", systemd=True)))
    assert pid and os.getsid(pid) == pid
    wait_for(lambda: (job_folder / "exit_code").exists())
    assert (job_folder / "output.log").read_text() == "ran\n"


def test_stop_stops_the_container_first():
    script = shlex.split(ssh_jobs.stop_command("/f", "dockyard-job-7-abc", grace=5))[2]
    assert script.index("docker stop -t 5 dockyard-job-7-abc") < script.index('kill -TERM -"$p"')
    assert "docker" not in ssh_jobs.stop_command("/f")


@pytest.mark.parametrize("key", ["", "..", ".", "a/b"])
def test_remove_names_one_folder(key):
    with pytest.raises(ValueError):
        ssh_jobs.remove_command(".dockyard/jobs", key)


def test_remove_removes_the_jobs_folder_under_the_home():
    assert ssh_jobs.remove_command(".dockyard/jobs/", "7-abc") == "/bin/sh -c 'cd && rm -rf -- .dockyard/jobs/7-abc'"


@pytest.mark.parametrize("stdout, expected", [
    (b"/home/u/.dockyard/jobs/7-abc\n", ("/home/u/.dockyard/jobs/7-abc", False)),
    (b"/home/u/.dockyard/jobs/7-abc\nlaunched\n", ("/home/u/.dockyard/jobs/7-abc", True)),
])
def test_prepare_is_parsed(stdout, expected):
    assert ssh_jobs.parse_prepare(stdout) == expected


def test_prepare_without_a_folder_is_refused():
    with pytest.raises(ValueError):
        ssh_jobs.parse_prepare(b"mkdir: cannot create directory\n")


@pytest.mark.parametrize("stdout, expected", [
    (b"pid=42 boot_id=b1\n", (42, "b1")),
    (b"pid= boot_id=b1\n", (None, "b1")),
    (b"", (None, "")),
])
def test_launch_output_is_parsed(stdout, expected):
    assert ssh_jobs.parse_launch(stdout) == expected


def test_the_size_of_outputs_is_read_before_they_are_fetched(job_folder):
    assert ssh_jobs.parse_outputs_size(run(ssh_jobs.outputs_size_command(str(job_folder)))) is None
    (job_folder / "workdir" / "outputs").mkdir()
    (job_folder / "workdir" / "outputs" / "big.bin").write_bytes(b"x" * 10_000)
    size = ssh_jobs.parse_outputs_size(run(ssh_jobs.outputs_size_command(str(job_folder))))
    assert 10_000 <= size <= 20_000
    (job_folder / "workdir" / "outputs").rename(job_folder / "elsewhere")
    (job_folder / "workdir" / "outputs").symlink_to(job_folder / "elsewhere")
    assert ssh_jobs.parse_outputs_size(run(ssh_jobs.outputs_size_command(str(job_folder)))) is None  # not followed
