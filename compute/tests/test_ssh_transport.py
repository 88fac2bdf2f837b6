"""The SSH transport against a real sshd (tests/sshd.py): what a host sends back is bounded, whatever it is."""
import os

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


def test_a_copy_back_stops_past_its_limit_whatever_the_host_reports(host, sshd, tmp_path):
    folder = f"dy-get-{tmp_path.name}"
    sshd.run_as_user(f"mkdir -p {folder}/out && head -c 300000 /dev/zero > {folder}/out/a && "
                     f"head -c 300000 /dev/zero > {folder}/out/b && ln -s /etc/passwd {folder}/out/absolute && "
                     f"ln -s a {folder}/out/link")
    try:
        with ssh.session(host) as remote:
            with pytest.raises(ssh.Refused, match="sent more than 500000 bytes"):
                remote.get([f"{folder}/out"], str(tmp_path / "small"), max_bytes=500_000)
            (tmp_path / "whole").mkdir()
            assert remote.get([f"{folder}/out"], str(tmp_path / "whole"), max_bytes=600_000) == 1  # the absolute link

        assert (tmp_path / "whole" / "out" / "a").stat().st_size == 300_000
        assert os.readlink(tmp_path / "whole" / "out" / "link") == "a"  # a link, as on the host
        assert not (tmp_path / "whole" / "out" / "absolute").exists()  # /etc/passwd of this host is never named
    finally:
        sshd.run_as_user(f"rm -rf {folder}")
