"""Real servers for compute-instance tests: a jupyter-server (kernels from ipykernel, terminals) under Dockyard's
base URL, on a loopback port or a Unix socket, as the proxy and the idle probes meet it."""
import os
import signal
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import uvicorn

from tests.e2e_support import wait_for

TOKEN = "tok-" + "x" * 39  # stands for the instance's 43-character secret
BASE = "/instances/ws/ci/jupyter"
NAMESPACE = "default"
ORIGIN = "http://testserver"
KERNEL_PROTOCOL = "v1.kernel.websocket.jupyter.org"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Jupyter:
    """A real jupyter-server (kernels from ipykernel, terminals) under Dockyard's base URL, on a port or a socket."""

    def __init__(self, folder: Path, sock: str | None = None, base: str = BASE, token: str = TOKEN):
        self.base, self.token = base, token
        self.port = None if sock else free_port()
        self.sock = sock
        self.root = folder / "home"
        self.root.mkdir(parents=True, exist_ok=True)
        (self.root / "hello.txt").write_text("hello from the instance\n")
        where = [f"--ServerApp.sock={sock}", "--ServerApp.sock_mode=0600"] if sock else [
            "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0"]
        env = {**os.environ, "JUPYTER_TOKEN": token, "JUPYTER_RUNTIME_DIR": str(folder / "runtime"),
               "JUPYTER_DATA_DIR": str(folder / "data"), "JUPYTER_CONFIG_DIR": str(folder / "config"),
               "HOME": str(self.root)}
        command = [sys.executable, "-m", "jupyter_server", "--no-browser", *where, f"--ServerApp.base_url={base}/",
                   f"--ServerApp.root_dir={self.root}", *(["--allow-root"] if os.geteuid() == 0 else [])]
        self.log = open(folder / "jupyter.log", "wb")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(command, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        wait_for(self.answers, 60, 0.2, "jupyter-server's start")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def answers(self) -> bool:
        assert self.process.poll() is None, Path(self.log.name).read_text()[-2000:]
        transport = httpx.HTTPTransport(uds=self.sock) if self.sock else None
        try:
            with httpx.Client(transport=transport, timeout=2) as client:
                origin = "http://localhost" if self.sock else self.url
                return client.get(f"{origin}{self.base}/api/status", params={"token": self.token}).status_code == 200
        except httpx.TransportError:
            return False

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
        self.log.close()




class CodeServerHealth(BaseHTTPRequestHandler):
    """A stand-in for code-server's /healthz (code-server does not install here): {status, lastHeartbeat}."""

    answer = b'{"status": "expired", "lastHeartbeat": 0}'

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(200 if self.path == "/healthz" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.answer)))
        self.end_headers()
        self.wfile.write(self.answer)

    def log_message(self, *args):
        pass


def code_server_health() -> ThreadingHTTPServer:
    """The stand-in, serving on a loopback port in a thread (shut it down after)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), CodeServerHealth)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class Web:
    """uvicorn serving controlplane.asgi's application on a free loopback port, in a thread."""

    def __init__(self):
        from controlplane.asgi import application

        self.port = free_port()
        config = uvicorn.Config(application, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        wait_for(lambda: self.server.started, 20, 0.05, "uvicorn's start")

    def stop(self):
        self.server.should_exit = True
        self.thread.join(20)
