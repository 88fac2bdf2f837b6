"""A real OpenSSH server on a free loopback port, for tests: its own host key, client key and authorized_keys.

As root (CI) it logs in a test user of its own (created once with useradd; no root login); as another user it can
only log in that user. Nothing of the machine's own sshd configuration is read (-f /dev/null).
"""
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

SSHD = "/usr/sbin/sshd"  # the absolute path: sshd re-executes itself
TEST_USER = "dockyard-ssh"
TEST_PASSWORD = "dy-test-Passw0rd"


def available() -> str | None:
    """Why a real sshd cannot run here (None when it can)."""
    if not Path(SSHD).exists() or not shutil.which("ssh-keygen"):
        return "OpenSSH server is not installed (apt-get install -y openssh-server)."
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _keygen(path: Path, kind: str = "ed25519") -> tuple[str, str]:
    """(private key text, public key line) of a new key without a passphrase."""
    subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-C", "", "-f", str(path)], check=True)
    return path.read_text(), (path.parent / (path.name + ".pub")).read_text().strip()


def _test_user() -> tuple[str, Path]:
    """The user sshd logs in, and its home: a user of the tests' own when root, else the current one."""
    if os.geteuid() != 0:
        entry = pwd.getpwuid(os.geteuid())
        return entry.pw_name, Path(entry.pw_dir)
    try:
        entry = pwd.getpwnam(TEST_USER)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", TEST_USER], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        entry = pwd.getpwnam(TEST_USER)
    subprocess.run(["chpasswd"], input=f"{TEST_USER}:{TEST_PASSWORD}\n", text=True, check=True)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation folder
    return entry.pw_name, Path(entry.pw_dir)


@dataclass
class Sshd:
    """A running sshd: where it listens, who logs in, with which key; its host key line."""

    folder: Path
    port: int = 0
    username: str = ""
    home: Path = Path("/")
    private_key: str = ""
    host_key: str = ""
    password: str = TEST_PASSWORD
    process: subprocess.Popen | None = None
    options: dict = field(default_factory=dict)
    address: str = "127.0.0.1"
    prefix: tuple[str, ...] = ()  # run sshd under this command (e.g. `ip netns exec NAME`: a host of its own network)

    def start(self, **options: str) -> "Sshd":
        """Start (or restart with other options) on the same port and host key."""
        self.options = {**self.options, **options}
        self.stop()
        args = [*self.prefix, SSHD, "-D", "-e", "-f", "/dev/null"]
        settings = {
            "Port": str(self.port), "ListenAddress": self.address, "HostKey": str(self.folder / "host_key"),
            "PidFile": str(self.folder / "sshd.pid"), "AuthorizedKeysFile": str(self.folder / "authorized_keys"),
            "StrictModes": "no", "UsePAM": "no", "Subsystem": "sftp internal-sftp", "PasswordAuthentication": "yes",
            "KbdInteractiveAuthentication": "no", "PermitRootLogin": "no", "LogLevel": "ERROR", "MaxStartups": "100",
            "MaxSessions": "100", "AllowUsers": self.username, **self.options,
        }
        for key, value in settings.items():
            args += ["-o", f"{key}={value}"]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=open(self.folder / "sshd.log", "ab"))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"sshd exited: {(self.folder / 'sshd.log').read_text()[-2000:]}")
            try:
                socket.create_connection((self.address, self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("sshd did not start listening")

    def new_host_key(self) -> str:
        """Replace the host key (a reinstalled host) and restart; returns the new key line."""
        for name in ("host_key", "host_key.pub"):
            (self.folder / name).unlink()
        _, self.host_key = _keygen(self.folder / "host_key")
        self.start()
        return self.host_key

    def kill_connections(self) -> int:
        """SIGKILL every connection's sshd process (the network dropped); the listener stays. Returns how many."""
        killed = 0
        for pid in _children(self.process.pid):
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        return killed

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def close(self) -> None:
        """Stop for good and remove its folder (keys, log)."""
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def run_as_user(self, command: str) -> subprocess.CompletedProcess:
        """Run a shell command on the "remote" side as the test user (to look at what a job left there)."""
        prefix = [] if os.geteuid() != 0 else ["runuser", "-u", self.username, "--"]
        return subprocess.run([*prefix, "/bin/sh", "-c", command], capture_output=True, text=True, cwd=self.home)


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def start_sshd(address: str = "127.0.0.1", port: int = 0, prefix: tuple[str, ...] = ()) -> Sshd:
    """A new sshd with new host and client keys: on a free loopback port unless told where (and under which prefix
    command, e.g. inside a network namespace: tests/netns.py)."""
    folder = Path(tempfile.mkdtemp(prefix="dy-sshd-"))
    folder.chmod(0o755)  # sshd reads authorized_keys as the logged-in user
    username, home = _test_user()
    private_key, public_key = _keygen(folder / "client_key")
    (folder / "authorized_keys").write_text(public_key + "\n")
    (folder / "authorized_keys").chmod(0o644)
    _, host_key = _keygen(folder / "host_key")
    server = Sshd(folder, port or _free_port(), username, home, private_key, host_key, address=address,
                  prefix=tuple(prefix))
    return server.start()
