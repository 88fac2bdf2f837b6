"""HTTP to a local inference server, which listens on a Unix socket in its deployment's folder (no TCP port)."""
import http.client
import os
import socket
from pathlib import Path


class UnixHTTPConnection(http.client.HTTPConnection):
    """http.client over an AF_UNIX socket.

    The socket is reached through a descriptor of its folder (/proc/self/fd/N/name): a deep run folder's path can be
    longer than the 108 bytes a socket address holds.
    """

    def __init__(self, path: str | Path, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self.socket_path = Path(path)

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            folder = os.open(self.socket_path.parent, os.O_PATH | os.O_DIRECTORY)
            try:
                sock.connect(f"/proc/self/fd/{folder}/{self.socket_path.name}")
            finally:
                os.close(folder)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


def request(path: str | Path, method: str, url: str, body: bytes | None, headers: dict, timeout: float) -> tuple[int, str, bytes]:
    """One request on a new connection (gunicorn's sync workers close every connection): status, type, body."""
    connection = UnixHTTPConnection(path, timeout)
    try:
        connection.request(method, url, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.getheader("Content-Type", "application/json"), response.read()
    finally:
        connection.close()
