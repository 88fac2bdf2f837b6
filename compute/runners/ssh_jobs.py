"""Jobs on an attached VM, as remote shell text (pure: builders and parsers, no connection, no Django).

A job lives in a folder of its own on the host (`~/<jobs dir>/<key>/`): `env` (0600), `command.sh`, `workdir/` (its
cwd, ./outputs under it), `inputs/`, `output.log`, `pid`, `exit_code`, `boot_id` and the `launched` marker. The
marker is made with mkdir (atomic): whoever makes it starts the job, anyone later only reads the pid, so a reconcile
that crashed after the launch adopts the process instead of starting a second one. Like compute/runners/local.py's
WRAPPER, a small wrapper is the process group's leader: it writes its pid first and the command's exit code last
(tmp + mv), and everything a follower needs is read back from the host, never kept in memory.

Every command is given to `/bin/sh -c` (the login shell may be anything) and every value in it is quoted.
"""
import re
import shlex
from dataclasses import dataclass

from .local import lines_of

FOLLOW_CAP = 256 * 1024  # log bytes taken per look; the rest comes at the next one
GRACE = 5  # seconds between SIGTERM and SIGKILL (and `docker stop`'s own timeout)
HEADER = "dockyard-follow"
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
BOOT_ID = "/proc/sys/kernel/random/boot_id"
# $1 = the job's folder. The wrapper is its session's and group's leader: its pid is the group's id.
WRAPPER = ('echo $$ > "$1/pid.tmp" && mv "$1/pid.tmp" "$1/pid"; . "$1/env"; '
           'if [ -x /bin/bash ]; then run=/bin/bash; else run=/bin/sh; fi; '
           'cd "$1/workdir" && "$run" "$1/command.sh"; code=$?; '
           'echo $code > "$1/exit_code.tmp" && mv "$1/exit_code.tmp" "$1/exit_code"')


def sh(script: str) -> str:
    """A script for `/bin/sh`, whatever the remote user's login shell is."""
    return "/bin/sh -c " + shlex.quote(script)


def unit_name(key: str) -> str:
    return f"dockyard-job-{key}"


def _cd(folder: str) -> str:
    """Into the job's folder: relative to the home folder unless absolute."""
    return f"cd && cd -- {shlex.quote(folder)}"


def prepare_command(folder: str) -> str:
    """Create the job's folder (the user's own: 0700); prints its absolute path, then `launched` when the job was
    started already."""
    quoted = shlex.quote(folder)
    return sh(f"cd && umask 077 && mkdir -p -- {quoted}/inputs && cd -- {quoted} && pwd && "
              "if [ -d launched ]; then echo launched; fi")


def parse_prepare(stdout: bytes) -> tuple[str, bool]:
    """(absolute folder, launched already) from prepare_command's output."""
    lines = stdout.decode("utf-8", errors="replace").splitlines()
    if not lines or not lines[0].startswith("/"):
        raise ValueError("The job's folder on the host could not be made.")
    return lines[0], "launched" in lines[1:]


def env_file(variables: dict[str, str]) -> str:
    """`export NAME='value'` lines, sourced by the wrapper (values never appear on a command line)."""
    for name in variables:
        if not ENV_NAME.match(name):
            raise ValueError(f"{name!r} is not a name an environment variable can have.")
    return "".join(f"export {name}={shlex.quote(str(value))}\n" for name, value in sorted(variables.items()))


def write_file_command(folder: str, name: str, private: bool = False) -> str:
    """Write stdin into the job's folder as `name` (0600 from the start when private), replacing it whole."""
    quoted = shlex.quote(name)
    umask = "umask 077; " if private else ""
    return sh(f"{_cd(folder)} && {umask}cat > {quoted}.tmp && mv -f {quoted}.tmp {quoted}")


def _detached(folder: str) -> str:
    """The wrapper in a new session, output appended to the log, detached from this shell (which exits)."""
    quoted = shlex.quote(folder)
    return (f"setsid nohup /bin/sh -c {shlex.quote(WRAPPER)} dockyard-job {quoted} "
            f"< /dev/null >> {quoted}/output.log 2>&1 &")


def _systemd(folder: str, key: str) -> str:
    """The same wrapper as a transient user unit (the host's systemd keeps it; gone from the list once it ended)."""
    quoted = shlex.quote(folder)
    log = shlex.quote(f"append:{folder}/output.log")
    return (f"systemd-run --user --quiet --collect --unit={shlex.quote(unit_name(key))} -p KillMode=control-group "
            f"-p StandardInput=null -p StandardOutput={log} -p StandardError={log} "
            f"/bin/sh -c {shlex.quote(WRAPPER)} dockyard-job {quoted} >/dev/null 2>&1")


def launch_command(folder: str, key: str, systemd: bool = False) -> str:
    """Start the job unless it was started already (`launched`), then print its pid and the boot id at launch.

    With `systemd`, the wrapper runs as a `systemd-run --user` unit when the user lingers (its manager outlives SSH
    sessions), falling back to setsid otherwise or when the manager does not answer; either way the wrapper writes the
    same files.
    """
    detached = _detached(folder)
    # Only with lingering on: without it the user's manager (and the unit) stops when the last SSH session ends.
    lingering = '[ -e "/var/lib/systemd/linger/$(id -un)" ]'
    start = f"if {lingering} && {_systemd(folder, key)}; then :; else {detached} fi" if systemd else detached
    return sh(
        f"{_cd(folder)} || exit 3\n"
        f"if mkdir launched 2>/dev/null; then\n"
        f"  cat {BOOT_ID} > boot_id 2>/dev/null || echo unknown > boot_id\n"
        f"  rm -f pid exit_code\n"
        f"  {start}\n"
        f"fi\n"
        f"i=0; while [ ! -s pid ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done\n"
        f'printf "pid=%s boot_id=%s\\n" "$(cat pid 2>/dev/null)" "$(cat boot_id 2>/dev/null)"\n'
    )


def parse_launch(stdout: bytes) -> tuple[int | None, str]:
    """(pid or None when the wrapper wrote none, boot id at launch) from launch_command's output."""
    fields = _fields(stdout.decode("utf-8", errors="replace").strip().splitlines()[-1:] or [""])
    pid = fields.get("pid", "")
    return (int(pid) if pid.isdigit() else None), fields.get("boot_id", "")


def _fields(lines: list[str]) -> dict[str, str]:
    return dict(part.split("=", 1) for part in lines[0].split() if "=" in part)


def follow_command(folder: str, offset: int, cap: int | None = None) -> str:
    """One look: a header line (launched, pid, alive, exit code, boot ids, log size, how many log bytes follow), then
    exactly that many bytes of the log from `offset`. The header comes first and says the length, so no byte the job
    printed can be taken for a field."""
    cap = cap or FOLLOW_CAP
    return sh(
        f"{_cd(folder)} 2>/dev/null || {{ echo '{HEADER} missing=1'; exit 0; }}\n"
        "l=0; [ -d launched ] && l=1\n"
        "p=$(cat pid 2>/dev/null); a=0\n"
        'case "$p" in ""|*[!0-9]*) p="";; *) kill -0 -"$p" 2>/dev/null && a=1;; esac\n'
        # the exit code is read after the liveness: the wrapper writes it before it exits
        'e=$(cat exit_code 2>/dev/null); case "$e" in ""|*[!0-9]*) e="";; esac\n'
        f"bn=$(cat {BOOT_ID} 2>/dev/null); bt=$(cat boot_id 2>/dev/null)\n"
        "s=$(wc -c < output.log 2>/dev/null); s=$((${s:-0} + 0))\n"
        f"n=$((s - {int(offset)})); [ $n -gt {int(cap)} ] && n={int(cap)}; [ $n -lt 0 ] && n=0\n"
        f'printf "{HEADER} launched=%s pid=%s alive=%s exit=%s boot_now=%s boot_then=%s size=%s bytes=%s\\n" '
        '"$l" "$p" "$a" "$e" "$bn" "$bt" "$s" "$n"\n'
        f'if [ $n -gt 0 ]; then tail -c +{int(offset) + 1} output.log | head -c "$n"; fi\n'
        "exit 0\n"
    )


@dataclass(frozen=True)
class Followed:
    """What one look found on the host."""

    missing: bool = False  # the job's folder is not there
    launched: bool = False
    pid: int | None = None
    alive: bool = False  # some process of the group is left
    exit_code: int | None = None
    boot_now: str = ""
    boot_then: str = ""
    size: int = 0
    data: bytes = b""

    @property
    def rebooted(self) -> bool:
        """The host booted again since the launch (its pid, if any, is another process's)."""
        return bool(self.boot_then and self.boot_now and self.boot_then != self.boot_now)


def parse_follow(stdout: bytes) -> Followed:
    """follow_command's output; ValueError when it is not whole (the connection dropped in the middle)."""
    header, newline, rest = stdout.partition(b"\n")
    words = header.decode("ascii", errors="replace").split()
    if not newline or not words or words[0] != HEADER:
        raise ValueError("The host's answer to a look has no header.")
    fields = dict(word.split("=", 1) for word in words[1:] if "=" in word)
    if fields.get("missing") == "1":
        return Followed(missing=True)
    count = _number(fields.get("bytes")) or 0
    if len(rest) < count:
        raise ValueError(f"The host's answer to a look was cut short ({len(rest)} of {count} log bytes).")
    return Followed(
        launched=fields.get("launched") == "1", pid=_number(fields.get("pid")), alive=fields.get("alive") == "1",
        exit_code=_number(fields.get("exit")), boot_now=fields.get("boot_now", ""), boot_then=fields.get("boot_then", ""),
        size=_number(fields.get("size")) or 0, data=rest[:count],
    )


def _number(text: str | None) -> int | None:
    return int(text) if text and text.lstrip("-").isdigit() else None


def log_lines(followed: Followed, offset: int, final: bool) -> tuple[list[str], int]:
    """The complete lines of a look's log bytes (and the unfinished last one when `final`), and the new offset."""
    return lines_of(followed.data, offset, final, FOLLOW_CAP)


def outputs_size_command(folder: str) -> str:
    """The size of the job's ./outputs in KiB (regular files and folders, links not followed), or `missing`."""
    return sh(f"{_cd(folder)}/workdir 2>/dev/null && [ -d outputs ] && [ ! -L outputs ] || {{ echo missing; exit 0; }}\n"
              "du -sk outputs 2>/dev/null | cut -f1")


def parse_outputs_size(stdout: bytes) -> int | None:
    """Bytes (rounded up to KiB) of ./outputs; None when there is none."""
    text = stdout.decode("utf-8", errors="replace").strip()
    return int(text) * 1024 if text.isdigit() else None


def stop_command(folder: str, container: str = "", grace: int = GRACE) -> str:
    """Stop what the job runs: `docker stop` its container, SIGTERM the process group, SIGKILL it after `grace`
    seconds. The pid comes from the host's own file and counts only in the boot that launched it. Prints `stopped`
    once nothing of the group is left."""
    docker = f"docker stop -t {int(grace)} {shlex.quote(container)} >/dev/null 2>&1\n" if container else ""
    wait = int(grace) * 10
    return sh(
        f"{_cd(folder)} 2>/dev/null || {{ echo stopped; exit 0; }}\n"
        'p=$(cat pid 2>/dev/null); case "$p" in ""|*[!0-9]*) echo stopped; exit 0;; esac\n'
        f'[ "$(cat {BOOT_ID} 2>/dev/null)" = "$(cat boot_id 2>/dev/null)" ] || {{ echo stopped; exit 0; }}\n'
        f"{docker}"
        'kill -TERM -"$p" 2>/dev/null\n'
        f'i=0; while kill -0 -"$p" 2>/dev/null && [ $i -lt {wait} ]; do sleep 0.1; i=$((i+1)); done\n'
        'kill -KILL -"$p" 2>/dev/null\n'
        'i=0; while kill -0 -"$p" 2>/dev/null && [ $i -lt 30 ]; do sleep 0.1; i=$((i+1)); done\n'
        'if kill -0 -"$p" 2>/dev/null; then echo running; else echo stopped; fi\n'
    )


def stopped(stdout: bytes) -> bool:
    return stdout.decode("utf-8", errors="replace").strip().splitlines()[-1:] == ["stopped"]


def remove_command(jobs_dir: str, key: str) -> str:
    """Remove the job's folder (only ever `<jobs dir>/<key>` under the home folder)."""
    if not key or "/" in key or key in (".", ".."):
        raise ValueError("A job's key names one folder.")
    return sh(f"cd && rm -rf -- {shlex.quote(jobs_dir.rstrip('/') + '/' + key)}")
