"""Test hosts of their own network: a network namespace joined to the root one by a veth pair, the real OpenSSH
server listening inside on a private 10.x address, port 22.

What crosses a network is tested across one: the link can be dropped (`drop_link`) and restored, and delayed or made
lossy with netem where the kernel has it. Needs root and `ip netns`; `available()` says why not otherwise.

Names carry the creating process's id (`dy-<pid>-<hex>`): a run that was killed leaves namespaces whose process is
gone, and the next run removes them (`clean_stale`) without touching those of runs still going.
"""
import ipaddress
import os
import random
import re
import secrets
import shutil
import signal
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests import sshd as sshd_module

PREFIX = "dy-"
NAME = re.compile(r"^dy-(\d+)-([0-9a-f]{6})$")
FALLBACK_METRIC = "4000000000"  # the metric of the fallback routes (`create`), which marks them as ours


class NetnsError(RuntimeError):
    """An `ip` or `tc` command failed; the message carries its output (test infrastructure, not Dockyard's words)."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise NetnsError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


def available() -> str | None:
    """Why a network namespace cannot be made here (None when it can)."""
    if not shutil.which("ip"):
        return "iproute2 is not installed (apt-get install -y iproute2)."
    if os.geteuid() != 0:
        return "Network namespaces need root (ip netns add); the tests run as another user."
    probe = f"{PREFIX}{os.getpid()}-{secrets.token_hex(3)}"
    done = _ip("netns", "add", probe, check=False)
    if done.returncode != 0:
        return f"This machine refuses `ip netns add` ({done.stderr.strip() or 'no reason given'})."
    _ip("netns", "del", probe, check=False)
    return None


def missing_package(reason: str) -> bool:
    """A reason that a package install fixes (CI must fail on it, not skip)."""
    return "is not installed" in reason


def _alive(pid: int) -> bool:
    """Whether the process runs (a zombie, killed but not yet reaped, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:].split()[0] != "Z"


def _kill_inside(name: str) -> None:
    """SIGKILL every process in the namespace (sshd, its sessions, what they left running): a namespace with live
    processes outlives `ip netns del`."""
    for _ in range(20):
        pids = [int(pid) for pid in _ip("netns", "pids", name, check=False).stdout.split()]
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)


def _sshd_folders(name: str) -> set[Path]:
    """The folders (keys, logs) of the test sshd running inside: a killed run left them behind."""
    folders = set()
    for pid in _ip("netns", "pids", name, check=False).stdout.split():
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        # sshd rewrites its process title into one line: "sshd: /usr/sbin/sshd … -o HostKey=/tmp/dy-sshd-…/host_key …"
        for folder in re.findall(r"HostKey=(\S*/dy-sshd-[^/\s]+)/host_key", command):
            folders.add(Path(folder))
    return folders


def _remove(name: str, host_veth: str, subnet: str = "") -> None:
    folders = _sshd_folders(name)
    _kill_inside(name)
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
    _ip("link", "del", host_veth, check=False)  # deleting one end deletes the pair
    _ip("netns", "del", name, check=False)
    if subnet:
        _ip("route", "del", "unreachable", subnet, "metric", FALLBACK_METRIC, check=False)


def _host_veth(suffix: str) -> str:
    return f"dy{suffix}h"  # 9 characters: interface names are at most 15


def clean_stale() -> list[str]:
    """Remove the namespaces (and veth pairs) of runs whose process is gone; returns their names."""
    removed = []
    for line in _ip("netns", "list", check=False).stdout.splitlines():
        match = NAME.match(line.split()[0]) if line.split() else None
        if match and not _alive(int(match.group(1))):
            _remove(match.group(0), _host_veth(match.group(2)))
            removed.append(match.group(0))
    _clean_stale_routes()
    return removed


def _clean_stale_routes() -> None:
    """The fallback routes of killed runs: a subnet of ours that no interface has any more."""
    used = _networks_in_use()
    for line in _ip("-4", "route", "show", "type", "unreachable", check=False).stdout.splitlines():
        words = line.split()  # "unreachable 10.x.y.z/30 metric 4000000000"
        if words[-2:] == ["metric", FALLBACK_METRIC] and ipaddress.ip_network(words[1]) not in used:
            _ip("route", "del", "unreachable", words[1], "metric", FALLBACK_METRIC, check=False)


def _networks_in_use() -> list[ipaddress.IPv4Network]:
    return [ipaddress.ip_interface(word).network for word in _ip("-4", "-o", "addr", "show").stdout.split()
            if re.match(r"^\d+\.\d+\.\d+\.\d+/\d+$", word)]


def _free_subnet() -> ipaddress.IPv4Network:
    """A /30 in 10.200.0.0/13 that no interface here uses (several runs may have namespaces at once)."""
    used = _networks_in_use() + [ipaddress.ip_network(line.split()[1]) for line in
                                 _ip("-4", "route", "show", "type", "unreachable").stdout.splitlines()]
    for _ in range(100):
        subnet = ipaddress.ip_network(f"10.{random.randint(200, 207)}.{random.randint(0, 255)}."
                                      f"{random.randint(0, 63) * 4}/30")
        if not any(subnet.overlaps(other) for other in used):
            return subnet
    raise NetnsError("no free 10.200.0.0/13 subnet")


@dataclass
class Netns:
    """A namespace, its veth pair (host end in the root namespace) and the addresses on each end."""

    name: str
    host_veth: str
    inner_veth: str
    host_address: str  # the root namespace's end: 10.x.y.1
    address: str  # the test host's address inside: 10.x.y.2
    sshd: sshd_module.Sshd | None = field(default=None, repr=False)
    subnet: str = ""
    qdisc: bool = False

    def exec_prefix(self) -> tuple[str, ...]:
        return ("ip", "netns", "exec", self.name)

    def run(self, *argv: str) -> subprocess.CompletedProcess:
        """Run a command inside the namespace (as root)."""
        return subprocess.run([*self.exec_prefix(), *argv], capture_output=True, text=True)

    def start_sshd(self) -> sshd_module.Sshd:
        """The real OpenSSH server inside, on the inner address, port 22 (tests/sshd.py's settings and test user)."""
        why = sshd_module.available()
        if why:
            raise NetnsError(why)
        self.sshd = sshd_module.start_sshd(address=self.address, port=22, prefix=self.exec_prefix())
        return self.sshd

    def record(self, pinned: bool = True) -> tuple[dict, dict]:
        """(properties, secrets) of a `virtualmachine` compute attached to this host, as compute/spec/attached.py
        keeps them; `pinned` puts the host key in properties["host_key"] (confirmed)."""
        properties = {"address": self.address, "ssh_port": 22, "admin_username": self.sshd.username}
        if pinned:
            properties["host_key"] = self.sshd.host_key
        return properties, {"ssh_private_key": self.sshd.private_key}

    def drop(self, host_side: bool = False) -> None:
        """The link goes down: nothing crosses in either direction until `restore`.

        By default the namespace's end goes down: the root namespace keeps its route (the carrier is lost), so packets
        vanish as on a real network that stopped answering (a new connection fails once ARP gives up, about 3 s).
        host_side=True takes the root namespace's end down instead: its route goes with it and connections are refused
        at once by the fallback route (`create` adds it so that nothing leaks to the machine's default gateway, which
        on some machines answers any TCP connection)."""
        if host_side:
            _ip("link", "set", self.host_veth, "down")
        else:
            _ip("-n", self.name, "link", "set", self.inner_veth, "down")

    def restore(self) -> None:
        """The link comes back (both ends up; the route to the namespace with it)."""
        _ip("-n", self.name, "link", "set", self.inner_veth, "up")
        _ip("link", "set", self.host_veth, "up")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # the carrier comes back a moment after `up`
            if "LOWER_UP" in _ip("link", "show", self.host_veth).stdout:
                return
            time.sleep(0.02)
        raise NetnsError(f"{self.host_veth} did not come back up")

    def netem(self, delay_ms: int = 0, loss_percent: float = 0.0) -> None:
        """Delay and/or lose packets leaving the root namespace's end (tc netem); raises NetnsError where the kernel
        has no netem (netem_unavailable() says so before)."""
        args = ["tc", "qdisc", "replace", "dev", self.host_veth, "root", "netem"]
        if delay_ms:
            args += ["delay", f"{delay_ms}ms"]
        if loss_percent:
            args += ["loss", f"{loss_percent}%"]
        done = subprocess.run(args, capture_output=True, text=True)
        if done.returncode != 0:
            raise NetnsError(f"tc netem: {done.stderr.strip()}")
        self.qdisc = True

    def clear_netem(self) -> None:
        if self.qdisc:
            subprocess.run(["tc", "qdisc", "del", "dev", self.host_veth, "root"], capture_output=True)
            self.qdisc = False

    def remove(self) -> None:
        """Stop sshd, kill what runs inside, remove the veth pair and the namespace (safe to call twice)."""
        if self.sshd:
            self.sshd.stop()
            shutil.rmtree(self.sshd.folder, ignore_errors=True)
            self.sshd = None
        _remove(self.name, self.host_veth, self.subnet)


def create() -> Netns:
    """A new namespace with lo up and a veth pair: host end 10.x.y.1/30 here, inner end 10.x.y.2/30 inside."""
    suffix = secrets.token_hex(3)
    name = f"{PREFIX}{os.getpid()}-{suffix}"
    subnet = _free_subnet()
    outer, inner = (str(address) for address in list(subnet.hosts())[:2])
    host_veth, inner_veth = _host_veth(suffix), f"dy{suffix}i"
    space = Netns(name, host_veth, inner_veth, outer, inner, subnet=str(subnet))
    try:
        _ip("netns", "add", name)
        _ip("link", "add", host_veth, "type", "veth", "peer", "name", inner_veth)
        _ip("link", "set", inner_veth, "netns", name)
        _ip("addr", "add", f"{outer}/30", "dev", host_veth)
        _ip("link", "set", host_veth, "up")
        _ip("-n", name, "addr", "add", f"{inner}/30", "dev", inner_veth)
        _ip("-n", name, "link", "set", inner_veth, "up")
        _ip("-n", name, "link", "set", "lo", "up")
        # With the root end down its connected route goes, and the 10.x address would be sent to the default gateway.
        _ip("route", "add", "unreachable", str(subnet), "metric", FALLBACK_METRIC)
    except BaseException:
        space.remove()
        raise
    return space


def netem_unavailable(space: Netns) -> str | None:
    """Why packets cannot be delayed or lost here (None when tc netem works)."""
    if not shutil.which("tc"):
        return "tc is not installed (apt-get install -y iproute2)."
    done = subprocess.run(["tc", "qdisc", "add", "dev", space.host_veth, "root", "netem", "delay", "1ms"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return f"This kernel has no netem queueing discipline (tc: {done.stderr.strip()})."
    subprocess.run(["tc", "qdisc", "del", "dev", space.host_veth, "root"], capture_output=True)
    return None


@contextmanager
def drop_link(space: Netns, host_side: bool = False):
    """The link is down inside the block and back up after it (also when the block raises); see Netns.drop."""
    space.drop(host_side)
    try:
        yield space
    finally:
        space.restore()


@contextmanager
def netns_host(with_sshd: bool = True):
    """A namespace (with sshd inside unless told not to), removed on exit whatever happened; stale ones of killed
    runs are removed first."""
    clean_stale()
    space = create()
    try:
        if with_sshd:
            space.start_sshd()
        yield space
    finally:
        space.remove()
