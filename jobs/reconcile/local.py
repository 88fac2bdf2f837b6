"""Local jobs: a process group on the worker's host, followed by short looks (the task asks to be called again)."""
import logging
import os
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from assets.specs.snapshots import upload_sha256
from compute.runners import local as runner
from compute.runners import sandbox
from workspaces.access import local_compute_refusal

from .. import staging
from ..choices import JobStatus
from ..files import FileRefused, claim_run_folder, prepare_workdir, run_folder  # noqa: F401 (run_folder: tests)
from ..models import Job
from ..spec import DATA_INPUT_TYPES, render_command
from . import environment
from .followed import collect_output
from .followed import end as _end
from .followed import exit_reason as _exit_reason
from .status import event, save, transition

logger = logging.getLogger(__name__)

LOOK_EVERY = 0.5  # seconds between looks at a running process


def _environment(job: Job, workdir: Path) -> dict[str, str]:
    """The job's own variables and PATH, HOME, LANG: nothing of the worker's environment (keys, database URLs)."""
    env = {"PATH": sandbox.DEFAULT_PATH, "HOME": str(workdir), "LANG": os.environ.get("LANG", "C.UTF-8")}
    venv = (job.spec.get("environment") or {}).get("venv")
    if venv:
        venv = os.path.realpath(venv)  # where the sandbox shows it
        env["VIRTUAL_ENV"] = venv
        env["PATH"] = f"{Path(venv) / 'bin'}{os.pathsep}{env['PATH']}"
    env.update(job.spec.get("environment_variables") or {})
    env.update(DOCKYARD_JOB_NAME=job.name, DOCKYARD_WORKSPACE=job.workspace.name, DOCKYARD_JOB_DIR=str(workdir))
    return {key: str(value) for key, value in env.items()}


def _sandbox(job: Job, workdir: Path) -> sandbox.Sandbox:
    """The job sees its working directory (read-write), its inputs and venv (read-only) and the system; no network
    unless allowed."""
    binds = [sandbox.Bind(workdir, writable=True), *_input_binds(job)]
    if job.resolved_inputs:
        binds.append(sandbox.Bind(staging.inputs_folder(workdir.parent)))
    venv = (job.spec.get("environment") or {}).get("venv")
    if venv:
        binds += sandbox.venv_binds(venv)
    network = settings.DOCKYARD_SANDBOX_NETWORK or getattr(job.workspace, "local_network_enabled", False)
    return sandbox.Sandbox(tuple(binds), network, _environment(job, workdir))


def _input_binds(job: Job) -> list[sandbox.Bind]:
    """Data inputs that are folders or files of this host under DOCKYARD_LOCAL_PATHS, shown read-only at their own path
    (ro_mount; a download would read the same files). Fetched inputs (resolved_inputs) are in the run folder."""
    binds = []
    for name, item in (job.spec.get("inputs") or {}).items():
        if name in job.resolved_inputs:
            continue
        path = item.get("path") if isinstance(item, dict) and item.get("type") in DATA_INPUT_TYPES else None
        if not isinstance(path, str) or not os.path.isabs(path) or not os.path.exists(path):
            continue
        try:
            binds.append(sandbox.local_path_bind(path, "input path"))
        except sandbox.Refused:
            continue  # not shared with local jobs: the sandbox does not show it
    return binds


def reconcile_local(job: Job) -> float | None:
    """Start, follow, time out or cancel a local job; returns seconds until the next look (None: done)."""
    if job.runner.get("pid"):
        return _follow(job)
    return _start(job)


def _start(job: Job) -> float | None:
    refusal = local_compute_refusal(job.workspace)  # staff may have turned local compute off since the job was made
    if refusal:
        save(job, transition(job, JobStatus.FAILED, f"The process was not started: {refusal}"))
        return None
    folder = claim_run_folder(job)
    workdir = folder / "workdir"
    fields = transition(job, JobStatus.STARTING, "Starting the process on the worker's host.")
    # A start that crashed before its record was saved left a pid behind (the folder is this record's: keyed by its id).
    process = runner.adopt(folder)
    if process is None:
        try:
            code = job.spec.get("code")
            if code and not upload_sha256(code):
                sandbox.local_path_bind(code, "code folder")  # still shared now? (checked when posted too)
            copied = prepare_workdir(job, workdir)
            arrived = staging.stage_inputs(job, folder)
            command = render_command(job.spec, inputs_dir=str(staging.inputs_folder(folder)), resolved=job.resolved_inputs)
            process = environment.spawn(job, command, folder, workdir, _sandbox(job, workdir))
        except (OSError, sandbox.Refused, FileRefused) as exc:
            save(job, fields + transition(job, JobStatus.FAILED, f"The process could not be started: {exc}"))
            return None
        if copied:
            event(job, "CodeCopied", copied + " into the working directory.")
        if arrived:
            event(job, "InputsFetched", f"Inputs in {staging.inputs_folder(folder)} (read-only): "
                                        + "; ".join(map(str, arrived)) + ".")
    job.runner = {**process.as_dict(), "log_offset": 0}
    event(job, "Started", f"Process {process.pid} on {process.host}, working directory {workdir}.")
    fields += transition(job, JobStatus.RUNNING, "") + ["runner"]
    save(job, fields)
    return LOOK_EVERY


def _follow(job: Job) -> float | None:
    process = runner.Process.from_dict(job.runner)
    if process.host != runner.host():
        logger.warning("Job %s runs on %s, not here: leaving it to that host's worker.", job.name, process.host)
        return LOOK_EVERY * 10
    running = runner.is_running(process)
    _collect_output(job, process, final=not running)
    environment.report(job)
    if job.status == JobStatus.CANCEL_REQUESTED:
        runner.kill_group(process)
        _collect_output(job, process, final=True)
        _end(job, JobStatus.CANCELED, "Canceled by request; the process group was stopped.")
        return None
    timeout = (job.spec.get("limits") or {}).get("timeout")
    if running and timeout and job.start_time and (timezone.now() - job.start_time).total_seconds() > timeout:
        runner.kill_group(process)
        _collect_output(job, process, final=True)
        _end(job, JobStatus.FAILED, f"The job timed out after {timeout} s (limits.timeout); its processes were stopped.")
        return None
    if running:
        return LOOK_EVERY
    return _finish(job, process)


def _finish(job: Job, process: runner.Process) -> None:
    code = runner.exit_code(process)
    if runner.group_alive(process.pid):
        runner.kill_group(process)  # the command exited but left children behind: they go with the job
    if code is None:
        reason = "The process disappeared without an exit code (was the worker's host restarted?)."
        _end(job, JobStatus.FAILED, reason)
    elif code == 0:
        _end(job, JobStatus.COMPLETED, "", exit_code=0)
    else:
        _end(job, JobStatus.FAILED, environment.failure(job) or _exit_reason(code), exit_code=code)
    return None


def _collect_output(job: Job, process: runner.Process, final: bool) -> None:
    """Store what the process printed since the last look (any bytes: see JobLogLine)."""
    collect_output(job, lambda offset, last: runner.read_lines(process, offset, last), final)


def stop_local(job: Job) -> None:
    """Stop a local job's processes (cancel, delete), keeping what they printed."""
    if job.runner.get("pid"):
        process = runner.Process.from_dict(job.runner)
        if process.host == runner.host():
            runner.kill_group(process)
            _collect_output(job, process, final=True)
