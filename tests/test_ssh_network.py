"""The SSH transport across a real network link: a test host in a network namespace (tests/netns.py) at a private
10.x address, reached with loopback refused, and the link dropped under an open session and a detached process.

Times are measured and printed (run with -s to see them); the bounds asserted are the transport's own: keepalives
(compute.runners.ssh.KEEPALIVE, 4 intervals) and a command's timeout.
"""
import threading
import time
import uuid

import pytest

from compute.runners import ssh
from tests.netns import drop_link, netem_unavailable

pytestmark = pytest.mark.usefixtures("no_loopback")

# A dropped link must be noticed within half a minute (keepalives end a silent connection after 4 intervals: 20 s).
DETECTION_BOUND = 30.0


@pytest.fixture
def no_loopback(settings):
    """As in production: private addresses are reached, loopback is not."""
    settings.DOCKYARD_ALLOW_LOOPBACK = False


def host_of(space) -> ssh.SshHost:
    return ssh.SshHost.of_record(*space.record())


def lines_of(space, name: str) -> int:
    """Lines written so far to a file in the test user's home, read through the filesystem the namespace shares
    (not over the network, which may be down)."""
    path = space.sshd.home / name
    return len(path.read_text().splitlines()) if path.exists() else 0


def login(host: ssh.SshHost) -> None:
    with ssh.session(host):
        pass


def timed(call):
    """(result or exception, seconds taken)."""
    started = time.monotonic()
    try:
        outcome = call()
    except ssh.SshError as exc:
        outcome = exc
    return outcome, time.monotonic() - started


def test_a_host_at_a_private_address_is_reached_with_loopback_refused(netns_host):
    assert netns_host.address.startswith("10.")
    line = ssh.scan_host_key(netns_host.address, 22)
    assert ssh.fingerprint(line) == ssh.fingerprint(netns_host.sshd.host_key)

    with ssh.session(host_of(netns_host)) as remote:
        done = remote.run("echo $SSH_CONNECTION; id -un")
    assert done.ok
    client, _, server, port = done.text().splitlines()[0].split()
    # Across the veth pair: from the root namespace's end to the namespace's own address.
    assert (client, server, port) == (netns_host.host_address, netns_host.address, "22")
    assert done.text().splitlines()[1] == netns_host.sshd.username


def test_loopback_is_refused_with_dockyards_sentence(netns_host):
    sentence = "127.0.0.1 is a loopback address; Dockyard does not connect to it."
    with pytest.raises(ssh.Refused) as scanned:
        ssh.scan_host_key("127.0.0.1", 22)
    assert str(scanned.value) == sentence
    loopback = ssh.SshHost("127.0.0.1", 22, netns_host.sshd.username, private_key=netns_host.sshd.private_key,
                           host_key=netns_host.sshd.host_key)
    with pytest.raises(ssh.Refused) as connected:
        with ssh.session(loopback):
            pass
    assert str(connected.value) == sentence


def test_a_detached_process_outlives_a_dropped_link_and_is_read_after(netns_host):
    name = f"count-{uuid.uuid4().hex[:8]}"
    host = host_of(netns_host)
    with ssh.session(host) as remote:
        started = remote.run(f"setsid nohup sh -c 'for i in $(seq 1 200); do echo $i >> {name}; sleep 0.05; done' "
                             ">/dev/null 2>&1 &", timeout=10)
        assert started.ok
        deadline = time.monotonic() + 5
        while lines_of(netns_host, name) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)

        with drop_link(netns_host):
            at_drop = lines_of(netns_host, name)
            assert 0 < at_drop < 200

            # The open session: the keepalives notice the silence (the command's own timeout is longer).
            failed, took = timed(lambda: remote.run("echo still here"))
            print(f"\nrun on an open session over a dropped link: {type(failed).__name__} after {took:.1f} s")
            assert isinstance(failed, ssh.Unreachable), failed
            assert took < DETECTION_BOUND
            assert lines_of(netns_host, name) > at_drop  # it kept writing while nothing crossed the link

            # A new session: the route is gone with the link, refused at once.
            refused, took = timed(lambda: login(host))
            print(f"new session over a dropped link: {type(refused).__name__} after {took:.1f} s ({refused})")
            assert isinstance(refused, ssh.Unreachable), refused
            assert took < ssh.CONNECT_TIMEOUT + 5
            if took < ssh.CONNECT_TIMEOUT:  # ARP gave up first (else the connect timeout ended it)
                assert str(refused) == (f"There is no route to the host at {netns_host.address}:22 (is it up, and on "
                                        "a network this worker reaches?).")

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with ssh.session(host) as remote:
            counted = remote.run(f"wc -l < {name}; tail -n 1 {name}").text().split()
        if counted == ["200", "200"]:
            break
        time.sleep(0.5)
    assert counted == ["200", "200"]  # every line, in order, with nobody connected for part of it
    with ssh.session(host) as remote:
        remote.run(f"rm -f {name}")


def test_no_route_is_said_at_once(netns_host):
    """The worker's own end of the link is down (its route gone): refused at once, in Dockyard's sentence."""
    with drop_link(netns_host, host_side=True):
        refused, took = timed(lambda: login(host_of(netns_host)))
    assert isinstance(refused, ssh.Unreachable)
    assert str(refused) == (f"There is no route to the host at {netns_host.address}:22 (is it up, and on a network "
                            "this worker reaches?).")
    assert took < 2


def test_a_command_on_a_dropped_link_ends_at_its_own_timeout(netns_host):
    with ssh.session(host_of(netns_host)) as remote:
        with drop_link(netns_host):
            failed, took = timed(lambda: remote.run("echo hi", timeout=3))
    print(f"\nrun with a 3 s timeout over a dropped link: {type(failed).__name__} after {took:.1f} s")
    assert isinstance(failed, ssh.Unreachable)
    assert str(failed) == f"A command on {netns_host.address}:22 did not finish within 3 s."
    assert 2.5 < took < 6


def test_a_short_drop_under_an_open_session_is_ridden_out(netns_host):
    """The link goes down for 2 s while a command is on its way, then comes back: TCP resends, the command
    completes; no hang and no spurious failure."""
    with ssh.session(host_of(netns_host)) as remote:
        netns_host.drop()
        threading.Timer(2.0, netns_host.restore).start()
        done, took = timed(lambda: remote.run("echo back"))
    print(f"\nrun across a 2 s drop: {type(done).__name__} after {took:.1f} s")
    assert isinstance(done, ssh.Result) and done.text() == "back\n"
    assert 2 <= took < DETECTION_BOUND


def test_a_half_open_connection_is_detected_not_waited_on(netns_host):
    """The host's side of the connection goes away while the link is down (the host restarted sshd, or rebooted), then
    the link comes back: the client's connection is half-open. The next command fails in bounded time."""
    with ssh.session(host_of(netns_host)) as remote:
        with drop_link(netns_host):
            assert netns_host.sshd.kill_connections() >= 1
            time.sleep(1)
        failed, took = timed(lambda: remote.run("echo hi"))
    print(f"\nrun on a half-open connection: {type(failed).__name__} after {took:.1f} s")
    assert isinstance(failed, ssh.Unreachable), failed
    assert took < DETECTION_BOUND


def test_netem_delay_is_felt_where_the_kernel_has_it(netns_host):
    why = netem_unavailable(netns_host)
    if why:
        pytest.skip(why)
    netns_host.netem(delay_ms=200)
    try:
        with ssh.session(host_of(netns_host)) as remote:
            done, took = timed(lambda: remote.run("true"))
    finally:
        netns_host.clear_netem()
    assert isinstance(done, ssh.Result) and done.ok
    assert took >= 0.2  # one round trip at least
