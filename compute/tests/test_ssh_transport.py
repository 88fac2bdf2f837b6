"""The SSH transport against a real sshd (tests/sshd.py): what a host sends back is bounded, whatever it is."""
import pytest

from compute.runners import ssh


@pytest.fixture
def host(sshd):
    return ssh.SshHost(sshd.address, sshd.port, sshd.username, private_key=sshd.private_key, host_key=sshd.host_key)


def test_stdin_goes_in_and_both_streams_come_back(host):
    with ssh.session(host) as remote:
        result = remote.run("cat; echo to-stderr >&2; exit 3", stdin=b"\x00binary\xff\n")
    assert (result.exit_status, result.stdout, result.stderr) == (3, b"\x00binary\xff\n", b"to-stderr\n")


@pytest.mark.parametrize("command", ["head -c 10000000 /dev/zero", "head -c 1000000 /dev/zero >&2"])
def test_a_host_that_sends_too_much_is_refused_not_read_into_memory(host, command):
    with ssh.session(host) as remote:
        with pytest.raises(ssh.Refused, match="sent more than"):
            remote.run(command)
        assert remote.run("echo still here").stdout == b"still here\n"  # the connection stays usable


def test_a_cap_of_the_callers_own(host):
    with ssh.session(host) as remote:
        assert remote.run("head -c 1000 /dev/zero", max_output=1000).stdout == b"\x00" * 1000
        with pytest.raises(ssh.Refused):
            remote.run("head -c 1001 /dev/zero", max_output=1000)
