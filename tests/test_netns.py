"""The network-namespace test hosts themselves (tests/netns.py): made, dropped and restored, and always removed."""
import errno
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

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
    run = subprocess.Popen(
        [sys.executable, "-c", "import time\nfrom tests import netns\nwith netns.netns_host() as space:\n"
         "    print(space.name, space.host_veth, space.subnet, space.sshd.folder, space.sshd.process.pid, flush=True)\n"
         "    time.sleep(120)\n"],
        cwd=settings.BASE_DIR, stdout=subprocess.PIPE, text=True)
    name, host_veth, subnet, folder, sshd_pid = run.stdout.readline().split()
    run.kill()  # SIGKILL: no teardown runs
    run.wait()
    ours = netns.create()  # a live run's namespace stays
    try:
        assert name in namespaces() and Path(folder).exists()
        assert name in netns.clean_stale()
        assert name not in namespaces() and not link_exists(host_veth)
        assert not alive(int(sshd_pid)) and not Path(folder).exists()
        routes = subprocess.run(["ip", "route", "show", "type", "unreachable"], capture_output=True, text=True).stdout
        assert subnet not in routes and ours.subnet in routes
        assert ours.name in namespaces()
    finally:
        ours.remove()
