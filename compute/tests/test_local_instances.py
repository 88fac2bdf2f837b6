"""Local compute instances end to end: a real JupyterLab in the bubblewrap sandbox, started and stopped by reconcile.

A real Celery worker (in a thread of the test process, on the configured broker) runs the reconciles; the beat's
observe task is called by the test. The server is jupyter-server (JupyterLab, ipykernel, terminals) from the notebook
virtualenv, on a Unix socket in the instance's folder under the test's folder; code runs in it through a real kernel
and a real terminal over WebSockets on that socket, as a person's browser would through Dockyard's proxy.
"""
import json
import secrets
import shutil
import signal
import socket
import tempfile
import uuid
from pathlib import Path

import pytest
import websocket
from django.conf import settings as django_settings
from django.utils import timezone

from compute import tasks
from compute.choices import DesiredState, InstanceState, StopCause
from compute.models import ComputeInstance, ComputeTarget
from compute.runners import local as runner
from compute.runners import notebooks, unix_http
from controlplane.reconciling import ProvisioningState
from tests.e2e_support import in_process_worker, wait_for

pytestmark = pytest.mark.usefixtures("local_compute")
START = 90.0  # seconds from create to Running (2–3 s alone; far more on a loaded 2-core host)


@pytest.fixture
def local_worker(transactional_db, settings):
    """A real worker; instances live under a short folder of this test (a socket address holds 108 bytes, and pytest's
    own folders are long); afterwards no server of the test is left."""
    folder = Path(tempfile.mkdtemp(prefix="dy-"))
    settings.DOCKYARD_INSTANCE_DIR = folder / "instances"
    settings.DOCKYARD_LOCAL_COMPUTE = True
    try:
        with in_process_worker():
            yield
    finally:
        for pid_file in Path(settings.DOCKYARD_INSTANCE_DIR).glob(f"*/run/{runner.PID_FILE}"):
            process = runner.adopt(pid_file.parent)
            if process and runner.group_alive(process.pid):
                runner.kill_group(process, grace=0.5)
        shutil.rmtree(folder, ignore_errors=True)


def create(workspace, owner, name: str = "nb", **properties) -> ComputeTarget:
    """A local compute instance as the create service makes it (record, run state, token), then reconciled."""
    compute = ComputeTarget(workspace=workspace, name=name, type="computeinstance", created_by=owner, properties={
        "kubernetes_compute": "local", "size": "Standard_DS3_v2", "idle_time_before_shutdown_minutes": None,
        "idle_time_before_shutdown": None, "schedules": {"compute_start_stop": []}, **properties})
    compute.secrets = {"token": secrets.token_urlsafe(32)}
    compute.save()
    ComputeInstance.objects.create(compute=compute, assigned_user=owner)
    tasks.reconcile_compute.delay(compute.pk)
    return compute


def act(compute: ComputeTarget, action: str) -> None:
    """start / stop / restart as the action service does: the desired state, a new generation, a reconcile."""
    instance = ComputeInstance.objects.get(compute=compute)
    if action == "stop":
        instance.desired_state, instance.stop_cause = DesiredState.STOPPED, StopCause.USER
    else:
        instance.desired_state = DesiredState.RUNNING
    if action == "restart":
        instance.restart_requested_at = timezone.now()
    instance.save()
    ComputeTarget.objects.filter(pk=compute.pk).update(generation=compute.generation + 1)
    compute.refresh_from_db()
    tasks.reconcile_compute.delay(compute.pk)


def state_of(compute: ComputeTarget) -> ComputeInstance:
    return ComputeInstance.objects.select_related("compute").get(compute_id=compute.pk)


def reached(compute: ComputeTarget, state: str, timeout: float = START) -> ComputeInstance:
    """Wait for the instance's state; an unexpected Failed fails at once with its reason."""
    def look():
        instance = state_of(compute)
        settled = instance.compute.observed_generation == instance.compute.generation
        assert not settled or state == InstanceState.FAILED or instance.state != InstanceState.FAILED, \
            instance.state_reason
        return instance if instance.state == state and settled else None

    return wait_for(look, timeout, 0.2, f"{compute.name} {state}")


def command_lines() -> dict[str, str]:
    lines = {}
    for entry in Path("/proc").iterdir():
        try:
            lines[entry.name] = (entry / "cmdline").read_bytes().decode(errors="replace") if entry.name.isdigit() else ""
        except OSError:
            continue
    return lines


def status(compute: ComputeTarget, headers: dict) -> int:
    path = notebooks.local_instance_socket(compute)
    return unix_http.request(path, "GET", f"{notebooks.base_url(compute)}api/status", None, headers, 10)[0]


def jupyter(compute: ComputeTarget, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    """A REST call to the instance's server over its socket, with its token."""
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": f"token {compute.secrets['token']}", "Content-Type": "application/json"}
    code, _, answer = unix_http.request(notebooks.local_instance_socket(compute), method,
                                        f"{notebooks.base_url(compute)}{path}", data, headers, 30)
    return code, json.loads(answer) if answer else {}


def websocket_to(compute: ComputeTarget, path: str) -> websocket.WebSocket:
    """A WebSocket to the server over its Unix socket (the token as a header, never in the URL)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(30)
    sock.connect(str(notebooks.local_instance_socket(compute)))
    return websocket.create_connection(f"ws://localhost{notebooks.base_url(compute)}{path}", socket=sock, timeout=30,
                                       header=[f"Authorization: token {compute.secrets['token']}"])


def run_in_kernel(compute: ComputeTarget, code: str) -> str:
    """Start a kernel, run one cell, return what it printed (stdout and any error), shut the kernel down."""
    created, kernel = jupyter(compute, "POST", "api/kernels", {"name": "python3"})
    assert created == 201, kernel
    ws = websocket_to(compute, f"api/kernels/{kernel['id']}/channels")
    msg_id = uuid.uuid4().hex
    ws.send(json.dumps({"header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test", "session":
                                   uuid.uuid4().hex, "version": "5.3", "date": ""},
                        "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
                        "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                                    "allow_stdin": False, "stop_on_error": True}}))
    printed, replied, idle = [], False, False
    while not (replied and idle):  # the reply (shell) and the output (iopub) come on two channels, in any order
        message = json.loads(ws.recv())
        if message.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind, content = message["msg_type"], message["content"]
        if kind == "stream":
            printed.append(content["text"])
        elif kind == "error":
            printed.append(f"{content['ename']}: {content['evalue']}")
        replied = replied or kind == "execute_reply"
        idle = idle or (kind == "status" and content["execution_state"] == "idle")
    ws.close()
    jupyter(compute, "DELETE", f"api/kernels/{kernel['id']}")
    return "".join(printed)


def run_in_terminal(compute: ComputeTarget, command: str, marker: str = "DONE-MARK") -> str:
    """Open a JupyterLab terminal (bash on a pty in the sandbox), type a command, return its screen output."""
    created, terminal = jupyter(compute, "POST", "api/terminals")
    assert created == 200, terminal
    ws = websocket_to(compute, f"terminals/websocket/{terminal['name']}")
    ws.send(json.dumps(["stdin", f"{command}; echo {marker[:4]}''{marker[4:]}\r"]))
    screen = ""
    while marker not in screen:
        message = json.loads(ws.recv())
        if message[0] == "stdout":
            screen += message[1]
    ws.close()
    jupyter(compute, "DELETE", f"api/terminals/{terminal['name']}")
    return screen


def test_create_stop_start_restart_delete_keeps_the_home_until_delete(local_worker, workspace, owner):
    compute = create(workspace, owner)
    instance = reached(compute, InstanceState.RUNNING)
    assert instance.compute.provisioning_state == ProvisioningState.SUCCEEDED
    token = compute.secrets["token"]
    socket_path = notebooks.local_instance_socket(compute)
    assert socket_path.is_socket() and socket_path.stat().st_mode & 0o777 == 0o600  # no TCP port; the owner's only
    assert status(compute, {"Authorization": f"token {token}"}) == 200
    assert status(compute, {}) == 403 and status(compute, {"Authorization": "token wrong"}) == 403
    # as Dockyard's proxy forwards a browser's request: under Dockyard's host name
    assert status(compute, {"Authorization": f"token {token}", "Host": "dockyard.example.com"}) == 200

    assert not [line for line in command_lines().values() if token in line]  # every user of the host reads those

    code, _ = jupyter(compute, "PUT", "api/contents/notes.txt", {"type": "file", "format": "text", "content": "kept"})
    assert code == 201
    home = notebooks.home_of(compute)
    assert (home / "notes.txt").read_text() == "kept"
    first = notebooks.running(compute)

    act(compute, "stop")
    instance = reached(compute, InstanceState.STOPPED)
    assert instance.state_reason == "Stopped on request." and instance.stop_cause == StopCause.USER
    assert notebooks.local_instance_socket(compute) is None and not runner.group_alive(first.pid)  # kernels too
    assert (home / "notes.txt").read_text() == "kept"

    act(compute, "start")
    wait_for(lambda: state_of(compute).state == InstanceState.STARTING, START, 0.1, "Starting shown")
    reached(compute, InstanceState.RUNNING)
    code, file = jupyter(compute, "GET", "api/contents/notes.txt")
    assert code == 200 and file["content"] == "kept"

    before = notebooks.running(compute)
    act(compute, "restart")
    wait_for(lambda: (notebooks.running(compute) or before).pid != before.pid, START, 0.2, "a new server")
    reached(compute, InstanceState.RUNNING)
    assert not runner.group_alive(before.pid)

    server = notebooks.running(compute)
    ComputeTarget.objects.filter(pk=compute.pk).update(provisioning_state=ProvisioningState.DELETING)
    tasks.reconcile_compute.delay(compute.pk)
    wait_for(lambda: not ComputeTarget.objects.filter(pk=compute.pk).exists(), START, 0.2, "the record gone")
    assert not notebooks.folder_of(compute).exists() and not runner.group_alive(server.pid)


SANDBOX_VIEW = """
import errno, json, os, socket
seen = {"uid": os.getuid(), "env": dict(os.environ), "environ": {}, "written": {}}
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    try:
        seen["environ"][pid] = open(f"/proc/{pid}/environ", "rb").read().decode(errors="replace")
    except OSError as exc:
        seen["environ"][pid] = errno.errorcode[exc.errno]
seen["repo"] = {path: os.path.exists(path) for path in REPO_FILES}
seen["repo_listing"] = os.listdir(REPO) if os.path.isdir(REPO) else None
for path in WRITES:
    try:
        open(path, "w").write("x")
        seen["written"][path] = "written"
    except OSError as exc:
        seen["written"][path] = errno.errorcode[exc.errno]
try:
    socket.create_connection(("127.0.0.1", 5432), timeout=3).close()
    seen["database"] = "reached"
except OSError as exc:
    seen["database"] = errno.errorcode.get(exc.errno, str(exc))
print(json.dumps(seen))
"""


def test_the_sandbox_shows_no_dockyard_files_environment_or_network(local_worker, workspace, owner, settings):
    compute = create(workspace, owner)
    reached(compute, InstanceState.RUNNING)
    repo, root = str(django_settings.BASE_DIR), runner.os.geteuid() == 0
    venv = str(settings.DOCKYARD_NOTEBOOK_VENV)
    writes = ["/home/azureuser/mine.txt", f"{repo}/written.txt", f"{venv}/written.txt", "/usr/written.txt",
              f"{settings.DOCKYARD_INSTANCE_DIR}/written.txt"]
    code = (f"REPO = {repo!r}\nREPO_FILES = {[f'{repo}/manage.py', f'{repo}/controlplane/settings.py', f'{repo}/var']!r}\n"
            f"WRITES = {writes!r}\n{SANDBOX_VIEW}")
    seen = json.loads(run_in_kernel(compute, code).strip().splitlines()[-1])

    secrets_of_dockyard = [django_settings.SECRET_KEY, *django_settings.DATABASES["default"].values(), "DATABASE_URL",
                           "FIELD_ENCRYPTION_KEYS", "CELERY_BROKER_URL"]
    everything = json.dumps(seen["env"]) + json.dumps(seen["environ"])
    assert not [value for value in secrets_of_dockyard if isinstance(value, str) and len(value) > 4 and value in everything]
    assert seen["env"]["HOME"] == "/home/azureuser"
    assert not any(seen["repo"].values()) and seen["repo_listing"] == [Path(venv).name]  # the venv alone, read-only
    assert seen["written"] == {"/home/azureuser/mine.txt": "written", writes[1]: seen["written"][writes[1]],
                               writes[2]: "EROFS", writes[3]: "EROFS", writes[4]: "ENOENT"}  # (var/ is not there)
    assert seen["written"][writes[1]] in ("EACCES", "EROFS")  # the repo's path: a bare folder, not the tree
    assert seen["database"] != "reached"  # a network namespace of its own: not the host's loopback
    if root:  # a root worker's sandbox runs as nobody, and the sandbox's own root processes are closed to it
        assert seen["uid"] == 65534 and seen["environ"]["1"] == "EACCES"

    screen = run_in_terminal(compute, f"id -u; cat /proc/1/environ | tr '\\0' '\\n' | grep -c SECRET; ls {repo}")
    assert "DONE-MARK" in screen and "manage.py" not in screen and "controlplane" not in screen


def test_local_compute_off_for_the_workspace_fails_with_the_reason(local_worker, workspace, owner):
    workspace.local_compute_enabled = False
    workspace.save(update_fields=["local_compute_enabled"])
    compute = create(workspace, owner)
    instance = reached(compute, InstanceState.FAILED)
    assert "Local compute is not enabled for workspace 'team-a'" in instance.state_reason
    assert instance.compute.provisioning_state == ProvisioningState.FAILED
    assert notebooks.running(compute) is None


def test_losing_local_compute_stops_a_running_instance(local_worker, workspace, owner):
    compute = create(workspace, owner)
    reached(compute, InstanceState.RUNNING)
    server = notebooks.running(compute)
    workspace.local_compute_enabled = False
    workspace.save(update_fields=["local_compute_enabled"])
    tasks.observe_local_compute_instances()
    instance = state_of(compute)
    assert instance.state == InstanceState.FAILED and "can enable it" in instance.state_reason
    assert not runner.group_alive(server.pid)


def test_a_server_that_exits_fails_with_the_reason_and_starts_again(local_worker, workspace, owner):
    compute = create(workspace, owner)
    reached(compute, InstanceState.RUNNING)
    server = notebooks.running(compute)
    runner.os.killpg(server.pid, signal.SIGKILL)
    wait_for(lambda: notebooks.running(compute) is None, 10, 0.1, "the server gone")
    tasks.observe_local_compute_instances()
    instance = state_of(compute)
    assert instance.state == InstanceState.FAILED
    assert instance.state_reason.startswith("The Jupyter server exited with code 137.") or \
        instance.state_reason.startswith("The Jupyter server ended"), instance.state_reason
    assert compute.secrets["token"] not in instance.state_reason

    act(compute, "start")
    reached(compute, InstanceState.RUNNING)


def test_a_worker_killed_mid_start_converges_on_one_server(local_worker, workspace, owner, settings):
    workspace.local_compute_enabled = False  # the first reconcile refuses: the test plays the worker that died
    workspace.save(update_fields=["local_compute_enabled"])
    compute = create(workspace, owner)
    reached(compute, InstanceState.FAILED)
    workspace.local_compute_enabled = True
    workspace.save(update_fields=["local_compute_enabled"])
    ComputeTarget.objects.filter(pk=compute.pk).update(generation=compute.generation + 1)
    compute.refresh_from_db()
    # A worker started the server, then died before it wrote anything: the record is behind its generation.
    started = notebooks.start(compute, compute.secrets["token"])
    assert tasks.resync() >= 1  # the safety net re-enqueues what is behind
    reached(compute, InstanceState.RUNNING)
    assert notebooks.running(compute).pid == started.pid  # the started server was adopted, not a second one


def test_idle_shutdown_stops_it_with_the_reason(local_worker, workspace, owner, settings):
    # the shortest threshold, 15 minutes, passes in 15 s: longer than a loaded machine takes to start the server
    settings.DOCKYARD_IDLE_SECONDS_PER_MINUTE = 1
    compute = create(workspace, owner, idle_time_before_shutdown_minutes=15, idle_time_before_shutdown="PT15M")
    reached(compute, InstanceState.RUNNING)
    server = notebooks.running(compute)
    tasks.observe_local_compute_instances()
    instance = state_of(compute)
    assert instance.state == InstanceState.RUNNING and instance.probed_at is not None  # not idle yet

    def stopped():
        tasks.observe_local_compute_instances()
        return state_of(compute).state == InstanceState.STOPPED

    wait_for(stopped, 60, 0.5, "the idle instance stopped")
    instance = state_of(compute)
    assert instance.stop_cause == StopCause.IDLE and instance.desired_state == DesiredState.STOPPED
    # nothing was opened: no kernel or terminal ever counted (the API calls of the probes themselves never do)
    assert instance.state_reason == "Stopped: idle for 15 s; no activity since it started." and instance.last_activity is None
    assert not runner.group_alive(server.pid) and notebooks.home_of(compute).is_dir()
