"""Local jobs: a process group on the worker's host, followed by short looks (the task asks to be called again)."""
import logging
import os
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from compute.runners import local as runner

from ..choices import JobStatus
from ..models import Job
from ..spec import render_command
from .status import append_lines, event, save, transition

logger = logging.getLogger(__name__)

LOOK_EVERY = 0.5  # seconds between looks at a running process
# What a job inherits from the worker's environment: never the worker's secrets (keys, database URLs).
INHERITED = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "USER", "LOGNAME", "SHELL", "TERM")


def run_folder(job: Job) -> Path:
    return Path(settings.DOCKYARD_JOB_DIR) / job.workspace.name / job.name


def _environment(job: Job, workdir: Path) -> dict[str, str]:
    env = {key: os.environ[key] for key in INHERITED if key in os.environ}
    venv = (job.spec.get("environment") or {}).get("venv")
    if venv:
        env["VIRTUAL_ENV"] = venv
        env["PATH"] = f"{Path(venv) / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env.update(job.spec.get("environment_variables") or {})
    env.update(DOCKYARD_JOB_NAME=job.name, DOCKYARD_WORKSPACE=job.workspace.name, DOCKYARD_JOB_DIR=str(workdir))
    return env


def reconcile_local(job: Job) -> float | None:
    """Start, follow, time out or cancel a local job; returns seconds until the next look (None: done)."""
    if job.runner.get("pid"):
        return _follow(job)
    return _start(job)


def _start(job: Job) -> float | None:
    folder = run_folder(job)
    workdir = folder / "workdir"
    fields = transition(job, JobStatus.STARTING, "Starting the process on the worker's host.")
    process = runner.adopt(folder)  # a start that crashed before its record was saved left a pid behind
    if process is None:
        for name in (job.spec.get("outputs") or {}):
            (workdir / "outputs" / name).mkdir(parents=True, exist_ok=True)
        try:
            process = runner.spawn(render_command(job.spec), folder, workdir, _environment(job, workdir))
        except OSError as exc:
            save(job, fields + transition(job, JobStatus.FAILED, f"The process could not be started: {exc}"))
            return None
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
    if job.status == JobStatus.CANCEL_REQUESTED:
        runner.kill_group(process)
        _collect_output(job, process, final=True)
        save(job, transition(job, JobStatus.CANCELED, "Canceled by request; the process group was stopped."))
        return None
    timeout = (job.spec.get("limits") or {}).get("timeout")
    if running and timeout and job.start_time and (timezone.now() - job.start_time).total_seconds() > timeout:
        runner.kill_group(process)
        _collect_output(job, process, final=True)
        save(job, transition(job, JobStatus.FAILED, f"The job timed out after {timeout} s (limits.timeout); its processes were stopped."))
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
        save(job, transition(job, JobStatus.FAILED, reason))
    elif code == 0:
        save(job, transition(job, JobStatus.COMPLETED, "", exit_code=0))
    else:
        save(job, transition(job, JobStatus.FAILED, _exit_reason(code), exit_code=code))
    return None


def _exit_reason(code: int) -> str:
    if code > 128:
        return f"The command was killed by signal {code - 128} (exit code {code})."
    return f"The command exited with code {code}."


def _collect_output(job: Job, process: runner.Process, final: bool) -> None:
    offset = job.runner.get("log_offset", 0)
    while True:
        lines, new_offset = runner.read_lines(process, offset, final)
        append_lines(job, [("", line) for line in lines])
        if new_offset == offset or not final:
            break
        offset = new_offset
    if new_offset != job.runner.get("log_offset", 0):
        job.runner = {**job.runner, "log_offset": new_offset}
        job.save(update_fields=["runner", "updated_at"])


def stop_local(job: Job) -> None:
    """Stop a local job's processes (cancel, delete), keeping what they printed."""
    if job.runner.get("pid"):
        process = runner.Process.from_dict(job.runner)
        if process.host == runner.host():
            runner.kill_group(process)
            _collect_output(job, process, final=True)
