"""SSH to attached hosts, for synchronous callers (Celery tasks): asyncssh on an event loop of the session's own.

Why asyncssh: one dependency beyond `cryptography` (already ours), host keys given as data (no known_hosts file on
the worker), no reading of the worker's ~/.ssh (config, agent, default keys are all turned off here), keepalives,
SFTP and timeouts on every call. Every connection checks the address first (controlplane.addresses: no loopback
unless allowed, no link-local or metadata addresses) and connects to the address it checked; the host key is pinned
once recorded. Errors are Dockyard's own sentences: nothing the remote side says is repeated in them.
"""
import asyncio
import errno
import socket
from contextlib import contextmanager
from dataclasses import dataclass

import asyncssh

from compute.hostkeys import fingerprint
from controlplane import addresses

CONNECT_TIMEOUT = 10.0  # seconds to reach the host and log in
COMMAND_TIMEOUT = 60.0  # seconds any one remote command may take unless the caller says otherwise
# Seconds of silence before a keepalive; three unanswered ones end the connection. A dropped link is thus noticed
# within 4 x this (20 s; at 15 s it was a minute: tests/test_ssh_network.py measures it across a real veth link).
MAX_OUTPUT = 4 * 1024 * 1024  # bytes of a command's output read at most (a look asks 256 KiB of log)
MAX_STDERR = 64 * 1024
KEEPALIVE = 5.0


@dataclass(frozen=True)
class SshHost:
    """Where and as whom to connect; `host_key` is the pinned OpenSSH public key line ("" before first contact)."""

    address: str
    port: int
    username: str
    password: str = ""  # used only when the admin gave one (password auth is their choice)
    private_key: str = ""
    host_key: str = ""

    @classmethod
    def of_record(cls, properties: dict, secrets: dict) -> "SshHost":
        """From an attached VM's (or HDInsight's) properties and decrypted secrets, as compute/spec/attached.py keeps
        them; the pinned key is properties["host_key"]."""
        return cls(
            address=properties.get("address", ""), port=int(properties.get("ssh_port") or 22),
            username=properties.get("admin_username", ""), password=secrets.get("admin_password", ""),
            private_key=secrets.get("ssh_private_key", ""), host_key=properties.get("host_key", ""),
        )

    @property
    def where(self) -> str:
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"{host}:{self.port}"


class SshError(Exception):
    """A failure said in Dockyard's words; `transient` ones are retried (the host may come back)."""

    code = "SshError"
    transient = True


class Unreachable(SshError):
    code = "Unreachable"


class Refused(SshError):
    """The address, the credentials or the key material are not usable: retrying will not help."""

    code = "Refused"
    transient = False


class AuthRefused(Refused):
    code = "AuthenticationFailed"


class HostKeyChanged(Refused):
    """The host presented a key other than the pinned one: never accepted silently."""

    code = "HostKeyChanged"

    def __init__(self, message: str, presented: str = ""):
        super().__init__(message)
        self.presented = presented


@dataclass(frozen=True)
class Result:
    """A remote command's exit status and output (bytes)."""

    exit_status: int | None
    stdout: bytes
    stderr: bytes

    @property
    def ok(self) -> bool:
        return self.exit_status == 0

    def text(self) -> str:
        return self.stdout.decode("utf-8", errors="replace")


def _target(host: SshHost) -> str:
    """The checked address to connect to (the name is not looked up again: DNS rebinding)."""
    try:
        return str(addresses.checked_addresses(host.address, host.port)[0])
    except addresses.AddressRefused as exc:
        raise Refused(str(exc)) from None
    except (socket.gaierror, UnicodeError):
        raise Unreachable(f"The host name {host.address} does not resolve.") from None


def _key_line(key: asyncssh.SSHKey) -> str:
    return key.export_public_key("openssh").decode().split("\n")[0].strip()


def _client_keys(host: SshHost) -> list:
    if not host.private_key:
        return []
    try:
        return [asyncssh.import_private_key(host.private_key)]
    except asyncssh.KeyImportError:
        raise Refused("The private key could not be read (is it passphrase-protected? Dockyard needs a key without "
                      "a passphrase).") from None


def _known_hosts(host: SshHost):
    try:
        return ([asyncssh.import_public_key(host.host_key)], [], [])
    except (asyncssh.KeyImportError, ValueError):
        raise Refused("The recorded host key cannot be read; record it again.") from None


def _options(host: SshHost) -> dict:
    keys = _client_keys(host)
    auth = ["publickey"] if keys else []
    if host.password:
        auth += ["keyboard-interactive", "password"]
    return dict(
        port=host.port, username=host.username, client_keys=keys, password=host.password or None,
        preferred_auth=auth or ["none"], known_hosts=_known_hosts(host), agent_path=None, config=[],
        connect_timeout=CONNECT_TIMEOUT, login_timeout=CONNECT_TIMEOUT, keepalive_interval=KEEPALIVE,
        keepalive_count_max=3, ignore_encrypted=True, x509_trusted_certs=None, kbdint_auth=bool(host.password),
    )


async def _scan(address: str, port: int, algorithms: tuple[str, ...] = ()) -> str:
    asked = {"server_host_key_algs": list(algorithms)} if algorithms else {}
    key = await asyncio.wait_for(asyncssh.get_server_host_key(address, port, config=[], **asked), CONNECT_TIMEOUT)
    if key is None:
        raise Unreachable("The host did not present a host key.")
    return _key_line(key)


def _said(exc: BaseException, host: SshHost) -> SshError:
    """A connection failure in Dockyard's words (the remote side's own text is never repeated)."""
    if isinstance(exc, SshError):
        return exc
    if isinstance(exc, asyncssh.PermissionDenied):
        how = "password" if host.password and not host.private_key else "key"
        return AuthRefused(f"The host at {host.where} refused user '{host.username}' with the {how} given.")
    if isinstance(exc, TimeoutError):
        return Unreachable(f"The host at {host.where} did not answer in time.")
    if isinstance(exc, OSError) and exc.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
        return Unreachable(f"There is no route to the host at {host.where} (is it up, and on a network this worker "
                           "reaches?).")
    if isinstance(exc, ConnectionRefusedError):
        return Unreachable(f"The host at {host.where} refused the connection (is sshd running on that port?).")
    return Unreachable(f"The connection to {host.where} failed ({type(exc).__name__}).")


CONNECTION_ERRORS = (OSError, asyncssh.Error, TimeoutError, SshError)


def scan_host_key(address: str, port: int) -> str:
    """The host key the SSH server at `address:port` presents now, as an OpenSSH public key line."""
    host = SshHost(address, port, "")
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(_scan(_target(host), port))
    except CONNECTION_ERRORS as exc:
        raise _said(exc, host) from None
    finally:
        loop.close()


class Session:
    """One logged-in connection; every call blocks until done (or its timeout)."""

    def __init__(self, host: SshHost, loop: asyncio.AbstractEventLoop, connection: asyncssh.SSHClientConnection):
        self.host, self._loop, self._connection = host, loop, connection

    def _call(self, coroutine, timeout: float):
        try:
            return self._loop.run_until_complete(asyncio.wait_for(coroutine, timeout))
        except TimeoutError:
            raise Unreachable(f"A command on {self.host.where} did not finish within {timeout:.0f} s.") from None
        except (OSError, asyncssh.Error) as exc:
            raise Unreachable(f"The connection to {self.host.where} was lost ({type(exc).__name__}).") from None

    def run(self, command: str, stdin: bytes | str | None = None, timeout: float = COMMAND_TIMEOUT,
            max_output: int = MAX_OUTPUT) -> Result:
        """Run `command` by the remote user's shell; stdin as given (bytes or text). A host that sends more than
        `max_output` bytes (the remote side may be anything) is refused, not read into memory."""
        data = stdin.encode() if isinstance(stdin, str) else stdin
        return self._call(self._capped(command, data, max_output), timeout)

    async def _capped(self, command: str, data: bytes | None, cap: int) -> Result:
        async with self._connection.create_process(command, encoding=None) as process:
            if data:
                process.stdin.write(data)
            process.stdin.write_eof()
            # Both streams at once: one left unread would fill the channel's window and stall the other.
            stdout, stderr = await asyncio.gather(_read_capped(process.stdout, cap, self.host),
                                                  _read_capped(process.stderr, MAX_STDERR, self.host))
            await process.wait_closed()
            return Result(process.exit_status, stdout, stderr)

    def put(self, local_paths: list[str], remote_dir: str, timeout: float = 600.0) -> None:
        """Copy files and folders (recursively) into an existing remote folder over SFTP."""
        async def put():
            async with self._connection.start_sftp_client() as sftp:
                await sftp.put(local_paths, remote_dir, recurse=True, preserve=False)
        self._call(put(), timeout)

    def get(self, remote_paths: list[str], local_dir: str, timeout: float = 600.0, max_bytes: int | None = None) -> int:
        """Copy remote files and folders (recursively) into an existing local folder over SFTP, at most `max_bytes`
        in all: the sizes a host reports may be anything, so the copy itself is counted and stopped past the limit.
        Remote symbolic links arrive as links (never followed here: readers of the folder refuse them); one asyncssh
        will not make (an absolute target, one out of the tree) is left out, not the whole copy. Returns how many
        entries were left out."""
        copied: dict[bytes, int] = {}
        left_out: list[Exception] = []

        def skip(exc: Exception) -> None:
            if not isinstance(exc, asyncssh.SFTPError):
                raise exc
            left_out.append(exc)

        def count(source: bytes, _target: bytes, done: int, _total: int) -> None:
            copied[source] = done
            if max_bytes is not None and sum(copied.values()) > max_bytes:
                raise Refused(f"The host at {self.host.where} sent more than {max_bytes} bytes; the copy was stopped.")

        async def get():
            async with self._connection.start_sftp_client() as sftp:
                await sftp.get(remote_paths, local_dir, recurse=True, preserve=False, progress_handler=count,
                               error_handler=skip)
        self._call(get(), timeout)
        return len(left_out)

    def close(self) -> None:
        self._connection.close()
        try:
            self._loop.run_until_complete(asyncio.wait_for(self._connection.wait_closed(), 5))
        except (TimeoutError, OSError, asyncssh.Error):
            pass


def _host_key_check(host: SshHost, target: str, loop: asyncio.AbstractEventLoop) -> None:
    """After a refused key: say which key the host presents now (the pinned one was not it)."""
    pinned = host.host_key.split()[0]
    try:
        presented = loop.run_until_complete(_scan(target, host.port, (pinned,)))
    except CONNECTION_ERRORS:
        presented = ""
    if presented and fingerprint(presented) == fingerprint(host.host_key):
        return
    shown = f"{fingerprint(presented)}" if presented else "another key"
    raise HostKeyChanged(f"The host at {host.where} presented host key {shown}, not the recorded "
                         f"{fingerprint(host.host_key)}. Dockyard does not connect until an admin records the new key "
                         "(if the host was reinstalled, confirm its new fingerprint).", presented)


async def _read_capped(stream, cap: int, host: SshHost) -> bytes:
    chunks, size = [], 0
    while chunk := await stream.read(65536):
        size += len(chunk)
        if size > cap:
            raise Refused(f"The host at {host.where} sent more than {cap} bytes for one command; Dockyard stopped "
                          "reading it.")
        chunks.append(chunk)
    return b"".join(chunks)


@contextmanager
def session(host: SshHost):
    """A logged-in Session to `host` (address checked, host key pinned); closed on exit."""
    if not host.host_key:
        raise Refused("No host key is recorded for this host yet; it is recorded on first contact.")
    options = _options(host)
    target = _target(host)
    loop = asyncio.new_event_loop()
    try:
        try:
            connection = loop.run_until_complete(asyncssh.connect(target, **options))
        except asyncssh.HostKeyNotVerifiable:
            _host_key_check(host, target, loop)
            raise Unreachable(f"The host at {host.where} could not be verified.") from None
        except CONNECTION_ERRORS as exc:
            raise _said(exc, host) from None
        live = Session(host, loop, connection)
        try:
            yield live
        finally:
            live.close()
    finally:
        loop.close()
