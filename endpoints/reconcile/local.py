"""Local deployments: Azure ML's inference server as a process on the worker's host, probed, restarted on a crash."""
import logging
import os
import shlex
import shutil
import socket
import time
from pathlib import Path

import httpx
from django.conf import settings

from compute.choices import ProvisioningState
from compute.reconcile.status import problem, record_status
from compute.runners import local as runner

from ..models import OnlineDeployment

logger = logging.getLogger(__name__)

LOOK_EVERY = 2.0
MAX_BACKOFF = 60.0
CRASHES_BEFORE_FAILED = 5  # in a row
HEALTHY_RESETS_AFTER = 60.0  # seconds of health after which earlier crashes no longer count
SERVER_APP = "azureml_inference_server_http.server.entry:app"
# What the server inherits from the worker's environment: never the worker's secrets.
INHERITED = ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "USER", "LOGNAME")


def folder_of(deployment: OnlineDeployment) -> Path:
    return deployment.local_folder


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _server_command(deployment: OnlineDeployment, port: int) -> str:
    """gunicorn serving the inference server's app on loopback only (azmlinfsrv itself binds every interface)."""
    venv = Path((deployment.spec.get("environment") or {}).get("venv") or settings.DOCKYARD_INFERENCE_VENV)
    request = deployment.spec["request_settings"]
    timeout = max(1, request["request_timeout_ms"] // 1000 + 1)
    args = [str(venv / "bin" / "gunicorn"), "-b", f"127.0.0.1:{port}", "-w", str(request["max_concurrent_requests_per_instance"]),
            "--timeout", str(timeout), "--access-logfile", "-", "--no-control-socket", SERVER_APP]
    return "exec " + shlex.join(args)


def _environment(deployment: OnlineDeployment, folder: Path) -> dict[str, str]:
    spec = deployment.spec
    env = {key: os.environ[key] for key in INHERITED if key in os.environ}
    code = spec.get("code_configuration")
    env["HOME"] = str(folder)  # gunicorn keeps a control socket under $HOME: one per server
    if code:
        env["AZUREML_ENTRY_SCRIPT"] = str(Path(code["code"]).resolve() / code["scoring_script"])
    if spec.get("model"):
        env["AZUREML_MODEL_DIR"] = str(Path(spec["model"]["path"]).resolve())
    # The server's own limit on run(); its default is an hour.
    env["SCORING_TIMEOUT_MS"] = str(spec["request_settings"]["request_timeout_ms"])
    env.update(spec.get("environment_variables") or {})
    return env


def _healthy(port: int, timeout: float) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/", timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


def stop_local(deployment: OnlineDeployment) -> None:
    if deployment.runner.get("pid") and deployment.runner.get("host") == runner.host():
        runner.kill_group(runner.Process.from_dict(deployment.runner))


def delete_local(deployment: OnlineDeployment) -> None:
    stop_local(deployment)
    shutil.rmtree(folder_of(deployment), ignore_errors=True)


def reconcile_local_deployment(deployment: OnlineDeployment) -> float | None:
    """Keep one healthy server running the deployment's current spec; returns when to look again."""
    state = deployment.runner
    if state.get("pid") and state.get("host") != runner.host():
        return LOOK_EVERY * 5  # another host's worker runs it
    if state.get("pid") and state.get("generation") != deployment.generation:
        stop_local(deployment)  # the spec changed: start the new one
        state = deployment.runner = {"restarts": 0}
    process = runner.Process.from_dict(state) if state.get("pid") else None
    if process is not None and not runner.is_running(process):
        return _crashed(deployment, process)
    if process is None:
        return _start(deployment)
    return _probe(deployment, process)


def _start(deployment: OnlineDeployment) -> float:
    folder, port = folder_of(deployment), _free_port()
    code = deployment.spec.get("code_configuration")
    cwd = Path(code["code"]) if code else folder
    try:
        process = runner.spawn(_server_command(deployment, port), folder, cwd, _environment(deployment, folder))
    except OSError as exc:
        record_status(deployment, ProvisioningState.FAILED, [problem("StartFailed", f"The server could not be started: {exc}")])
        return MAX_BACKOFF
    deployment.runner = {**process.as_dict(), "port": port, "generation": deployment.generation,
                         "started": time.time(), "restarts": deployment.runner.get("restarts", 0)}
    deployment.save(update_fields=["runner", "updated_at"])
    if deployment.provisioning_state == ProvisioningState.FAILED:
        return 1.0  # crash-looping: stays Failed (with its reason) until a start succeeds
    state = ProvisioningState.UPDATING if deployment.observed_generation else ProvisioningState.CREATING
    record_status(deployment, state, [], status=_status(deployment, "Starting", 0))
    return 1.0


def _status(deployment: OnlineDeployment, state: str, ready: int, reason: str = "") -> dict:
    return {"state": state, "replicas": 1, "ready_replicas": ready, "restarts": deployment.runner.get("restarts", 0),
            "port": deployment.runner.get("port"), "reason": reason}


def _probe(deployment: OnlineDeployment, process: runner.Process) -> float:
    liveness = deployment.spec["liveness_probe"]
    if _healthy(deployment.runner["port"], liveness["timeout"]):
        if deployment.runner.get("restarts") and time.time() - deployment.runner.get("started", 0) > HEALTHY_RESETS_AFTER:
            deployment.runner = {**deployment.runner, "restarts": 0}  # crashes count "in a row": a healthy spell ends the row
            deployment.save(update_fields=["runner", "updated_at"])
        record_status(deployment, ProvisioningState.SUCCEEDED, [], status=_status(deployment, "Running", 1))
        return LOOK_EVERY
    grace = liveness["initial_delay"] + liveness["period"] * liveness["failure_threshold"]
    if time.time() - deployment.runner.get("started", 0) > grace:
        logger.warning("Deployment %s failed its liveness probe for %s s: restarting it", deployment.name, grace)
        runner.kill_group(process)
        return _crashed(deployment, process, "failed its liveness probe")
    return 1.0


def _crashed(deployment: OnlineDeployment, process: runner.Process, why: str = "") -> float:
    """Note the crash and start again, waiting longer after each crash in a row."""
    code = runner.exit_code(process)
    restarts = deployment.runner.get("restarts", 0) + 1
    why = why or (f"exited with code {code}" if code is not None else "stopped")
    last = _last_lines(process, 5)
    deployment.runner = {"restarts": restarts, "crashed_at": time.time()}
    deployment.save(update_fields=["runner", "updated_at"])
    reason = f"The server {why} and is restarted (restart {restarts})." + (f" Last output: {last}" if last else "")
    errors = [problem("CrashLoop", reason)] if restarts >= CRASHES_BEFORE_FAILED else []
    state = ProvisioningState.FAILED if errors else deployment.provisioning_state
    record_status(deployment, state, errors, status=_status(deployment, "Restarting", 0, reason))
    return min(2.0 ** (restarts - 1), MAX_BACKOFF)


def _last_lines(process: runner.Process, count: int) -> str:
    try:
        text = (Path(process.folder) / runner.LOG_FILE).read_text(errors="replace")
    except OSError:
        return ""
    return " | ".join(line for line in text.splitlines()[-count:] if line.strip())
