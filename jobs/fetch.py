"""One https file fetched for a job by the worker: only from public addresses, within a size bound and a time limit.

The URL is the tenant's: Dockyard must not become its way to reach the host, the cluster's or the cloud's internal
services. Every address the name stands for must be public (no loopback, private, link-local, metadata, reserved);
the connection goes to the address checked (no second lookup: DNS rebinding finds nothing), the certificate is
checked against the name, and each redirect (at most MAX_REDIRECTS) is checked the same way.
"""
import http.client
import socket
import ssl
import time
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from controlplane import addresses

MAX_REDIRECTS = 5
CHUNK = 1024 * 1024
SOCKET_SECONDS = 30


class FetchRefused(ValueError):
    """The file was not fetched; the message says why, in a sentence."""


def public_addresses(host: str, port: int) -> list:
    """The addresses of `host`, all of them public; FetchRefused otherwise (tests widen this for a loopback server)."""
    try:
        found = addresses.checked_addresses(host, port)
    except addresses.AddressRefused as exc:
        raise FetchRefused(str(exc)) from None
    except (socket.gaierror, UnicodeError):
        raise FetchRefused(f"{host} does not resolve.") from None
    for address in found:
        if not addresses.embedded_ipv4(address).is_global:
            raise FetchRefused(f"{host} stands for {address}, which is not a public address: inputs are fetched from "
                               "the internet only, never from the host's or internal networks.")
    return found


def tls_context() -> ssl.SSLContext:
    return ssl.create_default_context()


class _Pinned(http.client.HTTPSConnection):
    """An https connection to the address that was checked, verifying the certificate for the name."""

    def __init__(self, host: str, port: int, address, timeout: float):
        super().__init__(host, port, timeout=timeout, context=tls_context())
        self.address = address

    def connect(self):
        sock = socket.create_connection((str(self.address), self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


def fetch(url: str, target: Path, max_bytes: int, seconds: float) -> int:
    """Write the file at `url` to `target`; returns its size. FetchRefused with the reason when it cannot be."""
    deadline = time.monotonic() + seconds
    for _ in range(MAX_REDIRECTS + 1):
        response, connection = _open(url, deadline)
        try:
            if response.status in (301, 302, 303, 307, 308) and response.getheader("Location"):
                url = urljoin(url, response.getheader("Location"))
                continue
            if response.status != 200:
                raise FetchRefused(f"{_shown(url)} answered {response.status} {response.reason}.")
            return _write(response, target, max_bytes, deadline, url)
        finally:
            connection.close()
    raise FetchRefused(f"More than {MAX_REDIRECTS} redirects from {_shown(url)}.")


def _open(url: str, deadline: float):
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port or 443
    except ValueError:
        host = port = parts = None
    if parts is None or parts.scheme != "https" or not host or parts.username or parts.password:
        raise FetchRefused(f"{_shown(url)} is not an https:// URL without credentials (redirects must stay on https).")
    _check_literal(host)
    address = public_addresses(host, port)[0]
    connection = _Pinned(host, port, address, min(SOCKET_SECONDS, max(1.0, deadline - time.monotonic())))
    path = parts.path or "/"
    try:
        connection.request("GET", path + (f"?{parts.query}" if parts.query else ""),
                           headers={"User-Agent": "dockyard-input-fetch", "Accept-Encoding": "identity"})
        return connection.getresponse(), connection
    except (OSError, http.client.HTTPException, ssl.SSLError) as exc:
        connection.close()
        raise FetchRefused(f"{_shown(url)} could not be fetched: {exc}.") from None


def _check_literal(host: str) -> None:
    try:
        addresses.check_host_syntax(host, "The URL's host")
    except addresses.AddressRefused as exc:
        raise FetchRefused(str(exc)) from None


def _write(response, target: Path, max_bytes: int, deadline: float, url: str) -> int:
    announced = response.getheader("Content-Length")
    if announced and announced.isdigit() and int(announced) > max_bytes:
        raise FetchRefused(f"{_shown(url)} is {announced} bytes, more than {max_bytes} (DOCKYARD_JOB_INPUT_URL_MAX_BYTES).")
    size = 0
    with open(target, "wb") as out:
        while True:
            if time.monotonic() > deadline:
                raise FetchRefused(f"{_shown(url)} took longer than the fetch time limit (DOCKYARD_JOB_INPUT_URL_SECONDS).")
            try:
                chunk = response.read(CHUNK)
            except (OSError, http.client.HTTPException) as exc:
                raise FetchRefused(f"{_shown(url)} broke off: {exc}.") from None
            if not chunk:
                return size
            size += len(chunk)
            if size > max_bytes:
                raise FetchRefused(f"{_shown(url)} holds more than {max_bytes} bytes (DOCKYARD_JOB_INPUT_URL_MAX_BYTES).")
            out.write(chunk)


def _shown(url: str) -> str:
    return url if len(url) <= 200 else url[:197] + "…"
