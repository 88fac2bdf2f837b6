"""The network of a sandbox that was allowed one: its own network namespace, given user-mode networking by slirp4netns.

Never the host's network namespace: there a tenant's process would reach every loopback service of the host (the
database, Redis, Dockyard's own). slirp4netns gives the sandbox a tap0 with a default route via 10.0.2.2 and connects
outward from the host as an ordinary unprivileged process; `--disable-host-loopback` keeps the host's 127.0.0.1 out of
reach through that gateway.

Run as a script (stdlib only) by the wrapper of a sandboxed run, outside the sandbox:

    network.py FOLDER nested|direct N DROP... BWRAP ARGS...

It starts bwrap, learns from bwrap's --info-fd which process holds the new network namespace (`nested`: the inner
bwrap of a root worker, whose pid it reads in the outer sandbox's pid namespace), starts slirp4netns for it as the
sandbox's own uid (the N DROP arguments: setpriv for a root worker, none otherwise; that uid owns the namespace, so it
needs no more privilege), and lets bwrap start the command (--block-fd) only once slirp4netns reports the network
configured. slirp4netns ends with the sandbox (--exit-fd: closed when this process ends, however it ends), and it is
in the run's process group, so a kill of the group ends it too. Exits with bwrap's exit code (the command's).
"""
import fcntl
import json
import os
import select
import signal
import subprocess
import sys
import time

SLIRP = "/usr/bin/slirp4netns"
OUTER_INFO_FD, INNER_INFO_FD, BLOCK_FD = 4, 5, 6  # the fds bwrap is told about (see sandbox.arguments)
LOG = "network.log"  # slirp4netns's own output, in the run folder (not in the job's log)
NS_GET_USERNS = 0xB701  # ioctl: the user namespace that owns a namespace
START_WAIT = 60.0  # seconds for bwrap to make its namespaces and for slirp4netns to configure the network
CANNOT_START = 125


def command(python: str, folder: str, nested: bool, drop: list[str]) -> list[str]:
    """What runs bwrap (the arguments that follow) with its own network."""
    return [python, "-I", os.path.abspath(__file__), folder, "nested" if nested else "direct", str(len(drop)), *drop]


class Failed(Exception):
    """The network could not be set up; the message says why, in a sentence."""


def main(argv: list[str]) -> int:
    folder, mode, count = argv[0], argv[1], int(argv[2])
    drop, bwrap_argv = argv[3:3 + count], argv[3 + count:]
    nested = mode == "nested"
    readers = _give_fds(nested)
    bwrap = subprocess.Popen(bwrap_argv, pass_fds=(3, OUTER_INFO_FD, BLOCK_FD) + ((INNER_INFO_FD,) if nested else ()))
    for fd in (3, OUTER_INFO_FD, INNER_INFO_FD if nested else None, BLOCK_FD):
        if fd is not None:
            os.close(fd)
    deadline = time.monotonic() + START_WAIT
    init = None
    try:
        init = _child_pid(readers["outer"], deadline)
        if init is None:
            return _code(bwrap.wait())  # bwrap ended before making the sandbox (it said why)
        holder = _host_pid(_child_pid(readers["inner"], deadline), init) if nested else init
        _wait_for_loopback(holder, deadline)
        slirp, exit_writer = _start_slirp(folder, drop, holder, deadline)
    except Failed as exc:
        print(f"The sandbox's network could not be set up: {exc}", file=sys.stderr, flush=True)
        if init is not None:
            _kill(init)  # pid 1 of the sandbox's pid namespace: everything in it ends
        bwrap.wait()
        return CANNOT_START
    os.write(readers["block"], b"1")  # the network is there: the command may start
    os.close(readers["block"])
    code = _code(bwrap.wait())
    os.close(exit_writer)  # slirp4netns ends with the sandbox
    try:
        slirp.wait(timeout=10)
    except subprocess.TimeoutExpired:
        slirp.kill()
        slirp.wait()
    return code


def _give_fds(nested: bool) -> dict[str, int]:
    """Pipes whose bwrap ends sit at the fds bwrap is told about; returns our ends (all close-on-exec)."""
    ours, theirs = {}, {}
    for name, target, bwrap_reads in (("outer", OUTER_INFO_FD, False), ("inner", INNER_INFO_FD, False),
                                      ("block", BLOCK_FD, True)):
        if name == "inner" and not nested:
            continue
        read, write = os.pipe()
        mine, given = (write, read) if bwrap_reads else (read, write)
        ours[name] = _high(mine)
        theirs[target] = _high(given)
    for target, fd in theirs.items():
        os.dup2(fd, target)  # (inheritable)
        os.close(fd)
    return ours


def _high(fd: int) -> int:
    """The same pipe end above the fds bwrap is told about, so placing one never closes another."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


def _read_until(fd: int, deadline: float, done) -> bytes:
    data = b""
    while not done(data):
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise Failed("bwrap or slirp4netns did not answer in time.")
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    return data


def _child_pid(fd: int, deadline: float) -> int | None:
    """bwrap's --info-fd: the pid of the sandbox's first process (None: bwrap ended without one)."""
    def parsed(data: bytes) -> bool:
        try:
            json.loads(data)
        except ValueError:
            return False
        return True

    data = _read_until(fd, deadline, parsed)
    os.close(fd)
    if not parsed(data):
        return None
    return int(json.loads(data)["child-pid"])


def _host_pid(inner: int | None, init: int) -> int:
    """The host pid of the process that is `inner` in the pid namespace whose first process is `init`."""
    if inner is None:
        raise Failed("the inner bwrap ended before making the network namespace.")
    namespace = os.readlink(f"/proc/{init}/ns/pid")
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{entry.name}/ns/pid") != namespace:
                continue
            with open(f"/proc/{entry.name}/status") as status:
                ids = next(line.split()[1:] for line in status if line.startswith("NSpid:"))
        except (OSError, StopIteration):
            continue
        if int(ids[-1]) == inner:
            return int(entry.name)
    raise Failed(f"no process {inner} in the sandbox.")


def _wait_for_loopback(holder: int, deadline: float) -> None:
    """bwrap has set up the namespace's loopback (it does so before waiting on --block-fd).

    bwrap reports the pid before its child configures `lo`; slirp4netns --configure brings `lo` up too, and the two
    racing made bwrap fail ("loopback: Failed RTM_NEWADDR") now and then.
    """
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{holder}/net/fib_trie") as trie:
                if "127.0.0.1" in trie.read():
                    return
        except OSError as exc:
            raise Failed(f"the sandbox ended before its network was made ({exc}).") from exc
        time.sleep(0.005)
    raise Failed("bwrap did not set up the sandbox's loopback in time.")


def _start_slirp(folder: str, drop: list[str], holder: int, deadline: float) -> tuple[subprocess.Popen, int]:
    """slirp4netns for the network namespace of `holder`, configured; returns it and the fd that keeps it running."""
    try:
        with open(f"/proc/{holder}/ns/net", "rb", buffering=0) as netns:
            owner = fcntl.ioctl(netns.fileno(), NS_GET_USERNS)  # the user namespace slirp4netns must enter first
    except OSError as exc:
        raise Failed(f"the sandbox's network namespace is not readable ({exc}).") from exc
    ready_read, ready_write = os.pipe()
    exit_read, exit_write = os.pipe()  # (both close-on-exec: only slirp4netns gets its end)
    argv = [*drop, SLIRP, "--configure", "--mtu=65520", "--disable-host-loopback", "--enable-seccomp",
            f"--userns-path=/proc/self/fd/{owner}", f"--ready-fd={ready_write}", f"--exit-fd={exit_read}", str(holder),
            "tap0"]
    with open(os.path.join(folder, LOG), "ab") as log:
        try:
            slirp = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                     pass_fds=(owner, ready_write, exit_read))
        except OSError as exc:
            raise Failed(f"slirp4netns did not start ({exc}).") from exc
    for fd in (owner, ready_write, exit_read):
        os.close(fd)
    try:
        answer = _read_until(ready_read, deadline, lambda data: len(data) > 0)
    finally:
        os.close(ready_read)
    if answer != b"1":
        os.close(exit_write)
        slirp.wait()
        raise Failed(f"slirp4netns ended ({_last_line(folder)}).")
    return slirp, exit_write


def _last_line(folder: str) -> str:
    try:
        with open(os.path.join(folder, LOG), errors="replace") as log:
            lines = [line.strip() for line in log if line.strip()]
    except OSError:
        lines = []
    return lines[-1] if lines else "it said nothing"


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
