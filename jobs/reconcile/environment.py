"""A local job's conda file: realised (or reused) before its command, said in an event; a failure is the job's reason."""
from pathlib import Path

from compute.runners import environments
from compute.runners import local as runner
from compute.runners.sandbox import Sandbox

from ..models import Job
from .status import event

REPORTED = "environment_reported"  # runner key: the realisation's event is written


def conda_file(job: Job) -> dict | None:
    return (job.spec.get("environment") or {}).get("conda_file")


def spawn(job: Job, command: str, folder: Path, workdir: Path, box: Sandbox) -> runner.Process:
    """Start the job's command, after its conda file is realised in the workspace's cache when it has one."""
    key = environments.workspace_key(job.workspace)
    return environments.spawn(conda_file(job), key, command, folder, workdir, box)


def report(job: Job) -> None:
    """Once the realisation has ended: an event saying how long it took (or that it was reused, or failed)."""
    if not conda_file(job) or (job.runner or {}).get(REPORTED) or not job.runner.get("folder"):
        return
    outcome = environments.result(Path(job.runner["folder"]))
    if outcome is None:
        return
    if outcome.get("reused"):
        event(job, "EnvironmentReused", "The conda file was realised before in this workspace: its environment is "
                                        "reused.")
    elif outcome.get("realised"):
        event(job, "EnvironmentRealised", f"Environment realised in {outcome['seconds']} s and cached for the "
                                          "workspace.")
    else:
        event(job, "EnvironmentFailed", f"The conda file could not be realised ({outcome.get('seconds')} s).",
              "Warning")
    job.runner = {**job.runner, REPORTED: True}
    job.save(update_fields=["runner", "updated_at"])


def failure(job: Job) -> str | None:
    """The job's reason when its conda file could not be realised: what pip (or the conda tool) said last."""
    if not conda_file(job) or not (job.runner or {}).get("folder"):
        return None
    outcome = environments.result(Path(job.runner["folder"])) or {}
    if not outcome.get("failed"):
        return None
    tail = "\n".join(line for line in outcome.get("tail", []) if line.strip())
    return f"The environment could not be realised from the conda file; its last lines:\n{tail}"
