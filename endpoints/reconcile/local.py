"""Local deployments: Azure ML's inference server in a sandbox on the worker's host, probed, restarted on a crash.

The server listens on a Unix socket in its deployment's folder, not a TCP port: only what can reach the folder (the
worker and the data plane) can call it; a sandboxed job does not see the folder, so it cannot.
"""
import http.client
import logging
import os
import re
import shlex
import shutil
import time
from pathlib import Path

from django.conf import settings

from assets import delivery
from assets.specs.snapshots import upload_sha256
from compute.runners import local as runner
from compute.runners import sandbox, unix_http
from controlplane.reconciling import ProvisioningState, problem, record_status
from workspaces.access import local_compute_refusal

from ..model_spec import bounds_problems, is_stored, model_dir
from ..models import OnlineDeployment
from . import environment

logger = logging.getLogger(__name__)

LOOK_EVERY = 2.0
MAX_BACKOFF = 60.0
CRASHES_BEFORE_FAILED = 5  # in a row
HEALTHY_RESETS_AFTER = 60.0  # seconds of health after which earlier crashes no longer count
SERVER_APP = "azureml_inference_server_http.server.entry:app"
# The server's own folder (read-write; its socket and HOME) inside the run folder, and where its sandbox shows it: a
# short path, as a socket address holds 108 bytes. The run folder itself (pid, exit code, log) stays outside.
SERVER_DIR, INSIDE, SOCKET = "server", Path("/run/dockyard"), "server.sock"
# Azure ML's model layout: AZUREML_MODEL_DIR is <models>/<name>/<version>, holding the model file or folder by its own
# name. The inference server reads it so: a folder not ending in a version it lists as <name>/<version> folders, and a
# model folder (or file) there made it log a NotADirectoryError at every start. A host folder is shown as the model
# "model", version 1; a registered or uploaded one at its own name and version (endpoints.model_spec.model_dir).
MODEL_DIR = Path("/var/azureml-app/azureml-models/model/1")
CODE_INSIDE = Path("/var/azureml-app/code")  # where uploaded code is shown to the server (read-only)


def folder_of(deployment: OnlineDeployment) -> Path:
    return deployment.local_folder


def socket_of(deployment: OnlineDeployment) -> Path:
    """The server's Unix socket as the worker and the data plane reach it."""
    return folder_of(deployment) / SERVER_DIR / SOCKET


def _venv(deployment: OnlineDeployment) -> Path:
    return Path((deployment.spec.get("environment") or {}).get("venv") or settings.DOCKYARD_INFERENCE_VENV)


def _server_command(deployment: OnlineDeployment) -> str:
    """gunicorn serving the inference server's app on a Unix socket (azmlinfsrv itself binds every interface)."""
    request = deployment.spec["request_settings"]
    timeout = max(1, request["request_timeout_ms"] // 1000 + 1)
    # umask 0177: the socket is 0600, its owner's (the sandbox uid) and the worker's (root, or the same uid) only.
    args = [str(Path(os.path.realpath(_venv(deployment))) / "bin" / "gunicorn"), "-b", f"unix:{INSIDE / SOCKET}",
            "--umask", "0o177", "-w", str(request["max_concurrent_requests_per_instance"]), "--timeout", str(timeout),
            "--access-logfile", "-", "--no-control-socket", SERVER_APP]
    return "exec " + shlex.join(args)


def _paths(deployment: OnlineDeployment) -> tuple[list[sandbox.Bind], dict[str, str], Path | None]:
    """Read-only binds of the code and model (uploads, or folders from DOCKYARD_LOCAL_PATHS), their variables, the code
    folder."""
    spec, binds, env, code_folder = deployment.spec, [], {}, None
    code = spec.get("code_configuration")
    if code and upload_sha256(code["code"]):
        bind = sandbox.Bind(_written_out(deployment, "code", code["code"]), CODE_INSIDE)
    elif code:
        bind = sandbox.local_path_bind(code["code"], "code folder")
    if code:
        binds.append(bind)
        code_folder = bind.inside
        env["AZUREML_ENTRY_SCRIPT"] = str(code_folder / code["scoring_script"])
    model = spec.get("model")
    if is_stored(model):
        inside = Path(model_dir(model))
        binds.append(sandbox.Bind(_written_out(deployment, "model", model["path"]), inside))
        env["AZUREML_MODEL_DIR"] = str(inside)
    elif model:
        bind = sandbox.local_path_bind(model["path"], "model path")
        binds.append(sandbox.Bind(bind.source, MODEL_DIR / Path(model["path"]).name))
        env["AZUREML_MODEL_DIR"] = str(MODEL_DIR)
    return binds, env, code_folder


def _written_out(deployment: OnlineDeployment, kind: str, reference: str) -> Path:
    """An uploaded snapshot (the code, or the model) written out once under the deployment's folder, a folder per
    snapshot: written beside its place and renamed into it, so a crash leaves no half folder that looks whole."""
    sha256 = upload_sha256(reference)
    folder = folder_of(deployment) / kind / sha256
    if folder.is_dir():
        return folder
    snapshot = delivery.snapshot_named(deployment.endpoint.workspace, reference)
    if snapshot is None:
        raise sandbox.Refused(f"The uploaded {kind} {reference} is no longer stored in the workspace.")
    if kind == "model":
        limits = (settings.DOCKYARD_DEPLOYMENT_MODEL_MAX_FILES, settings.DOCKYARD_DEPLOYMENT_MODEL_MAX_BYTES)
        problems = bounds_problems(snapshot.file_count, snapshot.size, *limits)
        if problems:
            raise sandbox.Refused(problems[0][1])
    else:
        limits = (settings.DOCKYARD_JOB_CODE_MAX_FILES, settings.DOCKYARD_JOB_CODE_MAX_BYTES)
    partial = folder.with_name(f"{sha256}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.rmtree(folder.parent, ignore_errors=True)  # an earlier version's goes with the change
    try:
        delivery.materialise(snapshot, partial, *limits)
    except delivery.DeliveryRefused as exc:
        raise sandbox.Refused(str(exc)) from None
    partial.rename(folder)
    return folder


def _sandbox(deployment: OnlineDeployment, server: Path) -> tuple[sandbox.Sandbox, Path]:
    """The server's sandbox (its folder, venv, code and model; no network unless allowed) and its working directory."""
    venv = _venv(deployment)
    binds, env, code_folder = _paths(deployment)
    binds = [sandbox.Bind(server, INSIDE, writable=True), *sandbox.venv_binds(venv, (settings.DOCKYARD_INFERENCE_VENV,)),
             *binds]
    env = {"PATH": f"{Path(os.path.realpath(venv)) / 'bin'}{os.pathsep}{sandbox.DEFAULT_PATH}",
           "LANG": os.environ.get("LANG", "C.UTF-8"), "HOME": str(INSIDE), **env,
           # The server's own limit on run(); its default is an hour.
           "SCORING_TIMEOUT_MS": str(deployment.spec["request_settings"]["request_timeout_ms"])}
    env.update({key: str(value) for key, value in (deployment.spec.get("environment_variables") or {}).items()})
    workspace = deployment.endpoint.workspace
    network = settings.DOCKYARD_SANDBOX_NETWORK or getattr(workspace, "local_network_enabled", False)
    return sandbox.Sandbox(tuple(binds), network, env), code_folder or INSIDE


def _healthy(path: Path, timeout: float) -> bool:
    try:
        return unix_http.request(path, "GET", "/", None, {}, timeout)[0] == 200
    except (OSError, http.client.HTTPException):
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
    if state.get("stopped") and state.get("generation") == deployment.generation:
        return None  # crash-looped and stopped: it stays stopped until the deployment changes
    if state.get("stopped"):
        state = deployment.runner = {"restarts": 0}
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
    refusal = local_compute_refusal(deployment.endpoint.workspace)  # turned off since the deployment was made
    if refusal:
        record_status(deployment, ProvisioningState.FAILED, [problem("LocalComputeOff", f"The server was not started: {refusal}")])
        return MAX_BACKOFF
    folder = folder_of(deployment)
    server = folder / SERVER_DIR
    try:
        box, cwd = _sandbox(deployment, server)
        (server / SOCKET).unlink(missing_ok=True)  # a crashed server's socket: gunicorn would not bind over it
        process = environment.spawn(deployment, _server_command(deployment), folder, cwd, box)
    except (OSError, sandbox.Refused) as exc:
        record_status(deployment, ProvisioningState.FAILED, [problem("StartFailed", f"The server could not be started: {exc}")])
        return MAX_BACKOFF
    deployment.runner = {**process.as_dict(), "socket": str(server / SOCKET), "generation": deployment.generation,
                         "started": time.time(), "restarts": deployment.runner.get("restarts", 0)}
    deployment.save(update_fields=["runner", "updated_at"])
    if deployment.provisioning_state == ProvisioningState.FAILED:
        return 1.0  # crash-looping: stays Failed (with its reason) until a start succeeds
    state = ProvisioningState.UPDATING if deployment.observed_generation else ProvisioningState.CREATING
    record_status(deployment, state, [], status=_status(deployment, "Starting", 0))
    return 1.0


def _status(deployment: OnlineDeployment, state: str, ready: int, reason: str = "") -> dict:
    return {"state": state, "replicas": 1, "ready_replicas": ready, "restarts": deployment.runner.get("restarts", 0),
            "reason": reason}


def _probe(deployment: OnlineDeployment, process: runner.Process) -> float:
    liveness = deployment.spec["liveness_probe"]
    if _healthy(socket_of(deployment), liveness["timeout"]):
        if deployment.runner.get("restarts") and time.time() - deployment.runner.get("started", 0) > HEALTHY_RESETS_AFTER:
            deployment.runner = {**deployment.runner, "restarts": 0}  # crashes count "in a row": a healthy spell ends the row
            deployment.save(update_fields=["runner", "updated_at"])
        record_status(deployment, ProvisioningState.SUCCEEDED, [], status=_status(deployment, "Running", 1))
        return LOOK_EVERY
    grace = liveness["initial_delay"] + liveness["period"] * liveness["failure_threshold"]
    if time.time() - environment.probe_clock(deployment) > grace:
        logger.warning("Deployment %s failed its liveness probe for %s s: restarting it", deployment.name, grace)
        runner.kill_group(process)
        return _crashed(deployment, process, "failed its liveness probe")
    return 1.0


def _crashed(deployment: OnlineDeployment, process: runner.Process, why: str = "") -> float | None:
    """Note the crash and start again, waiting longer after each crash in a row; after CRASHES_BEFORE_FAILED, stop.

    A stopped server stays stopped (Failed) until the deployment changes: restarting a script that cannot start only
    fills its log and hides the first error.
    """
    code = runner.exit_code(process)
    restarts = deployment.runner.get("restarts", 0) + 1
    why = why or (f"exited with code {code}" if code is not None else "stopped")
    detail = _crash_detail(process)
    if restarts >= CRASHES_BEFORE_FAILED:
        deployment.runner = {"restarts": restarts, "crashed_at": time.time(), "stopped": True, "generation": deployment.generation}
        deployment.heartbeat_at = None  # no chain watches it now: the change that ends the stop starts a new one
        deployment.save(update_fields=["runner", "heartbeat_at", "updated_at"])
        reason = f"The server {why} ({restarts} times in a row) and was stopped until the deployment changes.{detail}"
        record_status(deployment, ProvisioningState.FAILED, [problem("CrashLoop", reason)],
                      status=_status(deployment, "Failed", 0, reason))
        return None
    deployment.runner = {"restarts": restarts, "crashed_at": time.time()}
    deployment.save(update_fields=["runner", "updated_at"])
    reason = f"The server {why} and is restarted (restart {restarts}).{detail}"
    record_status(deployment, deployment.provisioning_state, [], status=_status(deployment, "Restarting", 0, reason))
    return min(2.0 ** (restarts - 1), MAX_BACKOFF)


def _crash_detail(process: runner.Process) -> str:
    """The scoring script's exception when the log holds one, else the log's last lines."""
    try:
        text = (Path(process.folder) / runner.LOG_FILE).read_text(errors="replace")
    except OSError:
        return ""
    error = script_error(text)
    if error:
        return f" The scoring script failed: {error}"
    last = " | ".join(line for line in text.splitlines()[-5:] if line.strip())
    return f" Last output: {last}" if last else ""


TRACEBACK_START = "Traceback (most recent call last):"
FRAME = re.compile(r'^\s+File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>.+)$')


def _tracebacks(lines: list[str]) -> list[tuple[list[re.Match], str]]:
    """Each traceback in a log: its frames and the exception line that ends it."""
    found, frames, inside = [], [], False
    for line in lines:
        if line.rstrip().endswith(TRACEBACK_START):
            frames, inside = [], True
        elif inside and (match := FRAME.match(line)):
            frames.append(match)
        elif inside and line.strip() and not line.startswith((" ", "\t")):
            found.append((frames, line.strip()))
            inside = False
    return found


def script_error(log: str) -> str:
    """The scoring script's exception and where it was raised, e.g. "RuntimeError: bad (score.py, line 2, in init)".

    gunicorn's own last lines ("Worker exiting", "Shutting down") say only that it stopped; the server wraps the
    script's exception in its own, so the last traceback with a frame outside site-packages is the script's.
    """
    for frames, exception in reversed(_tracebacks(log.splitlines())):
        own = [frame for frame in frames if "site-packages" not in frame["file"] and "/lib/python" not in frame["file"]]
        if own:
            where = own[-1]
            return f"{exception} ({where['file']}, line {where['line']}, in {where['function']})"
    return ""
