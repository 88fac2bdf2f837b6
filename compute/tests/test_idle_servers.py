"""Idle probes against a real jupyter-server, read as production reads it: through the (fake) API server's service
proxy with the real client, the token as `?token=`. Kernels, cells and terminals move the last activity; a tab's
polling of the API does not; a probe that fails is never idle."""
import json
import time
import uuid
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import websockets.sync.client

from compute.idle import verdict
from compute.reconcile.probes import probe_kubernetes, probe_local
from controlplane.kube.connection import connection
from tests.e2e_support import wait_for

from .servers import BASE, TOKEN, CodeServerHealth, Jupyter, code_server_health

NAMESPACE = "default"
LABELS = {"dockyard.dev/compute-instance": "ci"}
LONG_AGO = datetime(2020, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def jupyter(tmp_path_factory):
    server = Jupyter(tmp_path_factory.mktemp("jupyter"))
    yield server
    server.stop()


@pytest.fixture
def vscode():
    server = code_server_health()
    yield server
    server.shutdown()
    CodeServerHealth.answer = b'{"status": "expired", "lastHeartbeat": 0}'


@pytest.fixture
def cluster(fake_kube, jupyter, vscode):
    """Service ci-ci with a ready pod ci-ci-0: port jupyter → the real Jupyter, port vscode → the heartbeat stand-in."""
    fake_kube.create({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ci-ci-0", "namespace": NAMESPACE, "labels": LABELS},
        "spec": {"containers": [{"name": "jupyter", "image": "jupyter:1", "ports": [
            {"name": "jupyter", "containerPort": 8888}, {"name": "vscode", "containerPort": 8080}]}]}})
    fake_kube.create({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "ci-ci", "namespace": NAMESPACE},
        "spec": {"clusterIP": "None", "selector": LABELS, "ports": [
            {"name": "jupyter", "port": 8888, "targetPort": "jupyter"},
            {"name": "vscode", "port": 8080, "targetPort": "vscode"}]}})
    fake_kube.advance(5)
    fake_kube.serve_pod(NAMESPACE, "ci-ci-0", jupyter.url, port=8888)
    fake_kube.serve_pod(NAMESPACE, "ci-ci-0", f"http://127.0.0.1:{vscode.server_port}", port=8080)
    return fake_kube


def probe(kube):
    return probe_kubernetes(connection(kube.url, kube.kubeconfig_yaml(), None), NAMESPACE, "ci", "ws", TOKEN)


def api(jupyter, method: str, path: str, **kwargs) -> httpx.Response:
    """A user's own call to the server (not a probe)."""
    return httpx.request(method, f"{jupyter.url}{BASE}/{path}", params={"token": TOKEN}, timeout=10, **kwargs)


def run_cell(jupyter, kernel_id: str, code: str) -> None:
    """Execute `code` on the kernel over its WebSocket channel and wait for its idle status."""
    url = f"ws://127.0.0.1:{jupyter.port}{BASE}/api/kernels/{kernel_id}/channels?token={TOKEN}"
    msg_id = uuid.uuid4().hex
    message = {"header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "t", "session": "s",
                          "version": "5.3", "date": datetime.now(UTC).isoformat()},
               "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
               "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                           "allow_stdin": False, "stop_on_error": True}}
    with websockets.sync.client.connect(url, open_timeout=10) as ws:
        ws.send(json.dumps(message))
        while True:
            reply = json.loads(ws.recv(timeout=30))
            if (reply.get("parent_header", {}).get("msg_id") == msg_id and reply["msg_type"] == "status"
                    and reply["content"]["execution_state"] == "idle"):
                return


def newest(kube):
    return verdict(probe(kube), timedelta(hours=1), datetime.now(UTC), LONG_AGO)


def cleanup(jupyter):
    for kernel in api(jupyter, "GET", "api/kernels").json():
        api(jupyter, "DELETE", f"api/kernels/{kernel['id']}")
    for terminal in api(jupyter, "GET", "api/terminals").json():
        api(jupyter, "DELETE", f"api/terminals/{terminal['name']}")


def test_nothing_open_is_idle_once_the_threshold_passed(cluster, jupyter):
    cleanup(jupyter)
    probes = probe(cluster)
    assert [(item.name, item.ok) for item in probes] == [("jupyter", True), ("vscode", True)], probes
    assert verdict(probes, timedelta(seconds=1), datetime.now(UTC), LONG_AGO).idle
    # a shortened threshold not yet passed since it started: not idle
    assert not verdict(probes, timedelta(minutes=15), datetime.now(UTC), datetime.now(UTC)).idle
    # the token went as ?token= through the proxy; without it Jupyter refuses (and the probe says so)
    refused = probe_kubernetes(connection(cluster.url, cluster.kubeconfig_yaml(), None), NAMESPACE, "ci", "ws", "wrong")
    assert not refused[0].ok and "HTTP 403" in refused[0].error and TOKEN not in refused[0].error


def test_a_kernel_a_cell_and_a_terminal_move_the_last_activity(cluster, jupyter):
    cleanup(jupyter)
    kernel = api(jupyter, "POST", "api/kernels", json={"name": "python3"}).json()
    wait_for(lambda: newest(cluster).source.startswith("python3 kernel"), 30, 0.3, "the kernel's first signal")
    started = newest(cluster).last_activity
    run_cell(jupyter, kernel["id"], "import time; time.sleep(0.2); 6 * 7")
    after_cell = newest(cluster)
    assert after_cell.last_activity > started and after_cell.source == "python3 kernel idle"
    api(jupyter, "POST", "api/terminals")
    after_terminal = newest(cluster)
    assert after_terminal.last_activity >= after_cell.last_activity and after_terminal.source == "terminal"
    cleanup(jupyter)


def test_a_tabs_polling_moves_status_but_not_the_kernels(cluster, jupyter):
    """What an open, unused JupyterLab tab does (it polls kernels, sessions, terminals and contents): /api/status's
    last_activity follows the polls, the kernel's does not, so only the kernels and terminals are counted."""
    cleanup(jupyter)
    api(jupyter, "POST", "api/kernels", json={"name": "python3"})
    wait_for(lambda: newest(cluster).source.startswith("python3 kernel"), 30, 0.3, "the kernel's first signal")

    def settled():  # a starting kernel talks for a moment; measure once its own activity stands still
        first = newest(cluster).last_activity
        time.sleep(1)
        return first if newest(cluster).last_activity == first else None

    kernel_before = wait_for(settled, 30, 0.1, "the kernel to settle")
    status_before = api(jupyter, "GET", "api/status").json()["last_activity"]
    for path in ("api/kernels", "api/sessions", "api/terminals", "api/contents", "api/kernelspecs"):
        api(jupyter, "GET", path)
    assert api(jupyter, "GET", "api/status").json()["last_activity"] > status_before
    assert newest(cluster).last_activity == kernel_before
    cleanup(jupyter)


def test_vscode_heartbeat_counts(cluster, jupyter):
    cleanup(jupyter)
    beat = datetime.now(UTC).replace(microsecond=0)
    CodeServerHealth.answer = json.dumps({"status": "alive", "lastHeartbeat": int(beat.timestamp() * 1000)}).encode()
    result = newest(cluster)
    assert (result.last_activity, result.source) == (beat, "VS Code")


@pytest.mark.parametrize("breakage", ["server gone", "no ready pod", "garbage"])
def test_a_failing_probe_is_never_idle(cluster, jupyter, breakage):
    cleanup(jupyter)
    if breakage == "server gone":
        cluster.serve_pod(NAMESPACE, "ci-ci-0", None, port=8888)
    elif breakage == "no ready pod":
        cluster.delete("pods", "ci-ci-0", NAMESPACE)
    else:
        CodeServerHealth.answer = b"<html>not json</html>"
    probes = probe(cluster)
    assert not all(item.ok for item in probes)
    result = verdict(probes, timedelta(seconds=1), datetime.now(UTC), LONG_AGO)
    assert not result.idle and result.reason.startswith("Not idle: a probe failed")
    assert "not json" not in result.reason  # Dockyard's words, never the server's body


def test_local_probes_over_the_unix_socket(tmp_path_factory):
    import shutil
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.mkdtemp(prefix="dy-"))
    server = Jupyter(folder, sock=str(folder / "j.sock"))
    try:
        probes = probe_local(folder / "j.sock", f"{BASE}/", TOKEN)
        assert [(item.name, item.ok) for item in probes] == [("jupyter", True)]
        assert not probe_local(folder / "j.sock", f"{BASE}/", "wrong")[0].ok
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
    gone = probe_local(folder / "j.sock", f"{BASE}/", TOKEN)
    assert not gone[0].ok and "could not be reached" in gone[0].error
