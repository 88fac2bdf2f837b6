"""The network-namespace test hosts themselves (tests/netns.py): made, dropped and restored, and always removed."""
import errno
import os
import socket
import subprocess

import pytest

from tests import netns


@pytest.fixture(autouse=True)
def namespaces_allowed():
    why = netns.available()
    if why:
        if os.environ.get("DOCKYARD_REQUIRE_SSHD") and netns.missing_package(why):
            pytest.fail(why)
        pytest.skip(why)


def namespaces() -> list[str]:
    return [line.split()[0] for line in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                                       text=True).stdout.splitlines() if line.strip()]


def link_exists(name: str) -> bool:
    return subprocess.run(["ip", "link", "show", name], capture_output=True).returncode == 0


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return not open(f"/proc/{pid}/stat").read().split(")")[1].split()[0] == "Z"
    except (ProcessLookupError, FileNotFoundError):
        return False


def test_a_failed_test_still_leaves_nothing_behind():
    with pytest.raises(ZeroDivisionError):
        with netns.netns_host() as space:
            sshd_pid, folder = space.sshd.process.pid, space.sshd.folder
            inside = subprocess.Popen([*space.exec_prefix(), "setsid", "sleep", "300"])
            assert space.name in namespaces() and link_exists(space.host_veth)
            raise ZeroDivisionError("the test failed")
    inside.wait(5)
    assert space.name not in namespaces()
    assert not link_exists(space.host_veth)
    assert not alive(sshd_pid)
    assert not folder.exists()


def reaches(space) -> bool:
    try:
        socket.create_connection((space.address, 22), timeout=2).close()
        return True
    except OSError:
        return False


def test_the_link_drops_and_comes_back():
    with netns.netns_host() as space:
        assert reaches(space)
        with pytest.raises(RuntimeError):
            with netns.drop_link(space):
                assert not reaches(space)  # silence: the connection attempt times out
                raise RuntimeError("the block failed")
        assert reaches(space)  # back up even though the block raised


def test_the_host_side_drop_refuses_at_once_and_leaks_nothing_to_the_default_gateway():
    with netns.netns_host() as space:
        with netns.drop_link(space, host_side=True):
            with pytest.raises(OSError) as refused:
                socket.create_connection((space.address, 22), timeout=2)
            # The fallback route answers, not whatever lies beyond the machine's default route.
            assert refused.value.errno == errno.EHOSTUNREACH
        assert reaches(space)


def test_the_namespaces_of_a_killed_run_are_removed_by_the_next():
    gone = subprocess.Popen(["true"])
    gone.wait()
    suffix = "5ca1ed"
    name, host_veth = f"dy-{gone.pid}-{suffix}", f"dy{suffix}h"
    subprocess.run(["ip", "netns", "add", name], check=True)
    subprocess.run(["ip", "link", "add", host_veth, "type", "veth", "peer", "name", f"dy{suffix}i", "netns", name],
                   check=True)
    left = subprocess.Popen(["ip", "netns", "exec", name, "sleep", "300"])
    subprocess.run(["ip", "route", "add", "unreachable", "10.207.255.252/30", "metric", netns.FALLBACK_METRIC],
                   check=True)
    ours = netns.create()  # a live run's namespace stays
    try:
        assert name in netns.clean_stale()
        left.wait(5)
        assert name not in namespaces() and not link_exists(host_veth)
        assert ours.name in namespaces()
        routes = subprocess.run(["ip", "route", "show", "type", "unreachable"], capture_output=True, text=True).stdout
        assert "10.207.255.252/30" not in routes and ours.subnet in routes
    finally:
        ours.remove()
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
        subprocess.run(["ip", "link", "del", host_veth], capture_output=True)
        subprocess.run(["ip", "route", "del", "unreachable", "10.207.255.252/30"], capture_output=True)
