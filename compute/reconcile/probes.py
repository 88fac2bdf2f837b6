"""Reading a compute instance's servers for idle shutdown: JupyterLab's kernels and terminals, VS Code's heartbeat.

On a cluster through the API server's service proxy (no route to pod addresses needed). The API server drops the
caller's Authorization header, so Jupyter's token goes as `?token=` on these plain GETs (a WebSocket upgrade would
lose its query, kubernetes#77142; no probe needs one). Locally over the server's Unix socket, with the token in a
header. A probe that cannot be read says why in Dockyard's words, never with the server's body.
"""
import json
from pathlib import Path

from controlplane.kube import client as kube
from controlplane.kube.connection import Connection

from .. import idle
from ..manifests.instances import instance_names
from ..runners import unix_http

JUPYTER_CALLS = ("api/status", "api/kernels", "api/terminals")
PROBE_SECONDS = 5.0


def _decoded(status: int, body: bytes, what: str) -> object:
    """The JSON a server answered with 200; 404 for terminals means the terminals extension is absent (none open)."""
    if status == 404 and what == "api/terminals":
        return []
    if status != 200:
        raise idle.BadAnswer(f"{what} answered HTTP {status}")
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise idle.BadAnswer(f"{what} did not answer JSON") from None


def _jupyter_probe(answers: dict[str, tuple[int, bytes]]) -> idle.Probe:
    try:
        values = [_decoded(*answers[call], call) for call in JUPYTER_CALLS]
        return idle.Probe("jupyter", True, idle.jupyter_signals(*values))
    except idle.BadAnswer as exc:
        return idle.Probe("jupyter", False, error=f"JupyterLab's answer was not usable: {exc}")


def _code_server_probe(status: int, body: bytes) -> idle.Probe:
    try:
        return idle.Probe("vscode", True, idle.code_server_signals(_decoded(status, body, "healthz")))
    except idle.BadAnswer as exc:
        return idle.Probe("vscode", False, error=f"VS Code's answer was not usable: {exc}")


def probe_kubernetes(conn: Connection, namespace: str, compute_name: str, workspace_name: str,
                     token: str) -> list[idle.Probe]:
    """JupyterLab's status, kernels and terminals and code-server's heartbeat, through the service proxy."""
    service = instance_names(compute_name).service
    base = f"instances/{workspace_name}/{compute_name}/jupyter"
    try:
        answers = {call: _get(conn, namespace, f"{service}:jupyter", f"{base}/{call}", [("token", token)])
                   for call in JUPYTER_CALLS}
        jupyter = _jupyter_probe(answers)
    except kube.KubeError as exc:
        jupyter = idle.Probe("jupyter", False, error=f"JupyterLab could not be reached: {exc}")
    try:
        vscode = _code_server_probe(*_get(conn, namespace, f"{service}:vscode", "healthz", []))
    except kube.KubeError as exc:
        vscode = idle.Probe("vscode", False, error=f"VS Code could not be reached: {exc}")
    return [jupyter, vscode]


def _get(conn: Connection, namespace: str, service_port: str, path: str, query: list) -> tuple[int, bytes]:
    status, _, body = kube.proxy_get(conn, namespace, "services", service_port, path, query)
    return status, body


def probe_local(socket_path: str | Path, base_url: str, token: str) -> list[idle.Probe]:
    """JupyterLab's status, kernels and terminals over the local server's Unix socket (a local instance has no VS Code)."""
    headers = {"Authorization": f"token {token}", "Host": "localhost"}
    try:
        answers = {}
        for call in JUPYTER_CALLS:
            status, _, body = unix_http.request(socket_path, "GET", f"{base_url.rstrip('/')}/{call}", None, headers,
                                                PROBE_SECONDS)
            answers[call] = (status, body)
    except OSError as exc:
        reason = "it did not answer in time" if isinstance(exc, TimeoutError) else "its socket refused the connection"
        return [idle.Probe("jupyter", False, error=f"JupyterLab could not be reached: {reason}.")]
    return [_jupyter_probe(answers)]
