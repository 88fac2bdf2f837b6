"""A local deployment's conda file: realised (or reused from the workspace's cache) before the server starts, with the
inference server's own interpreter, and put on the server's import path (its packages before the server's own)."""
import dataclasses
import os
import time
from pathlib import Path

from django.conf import settings

from compute.runners import environments
from compute.runners import local as runner
from compute.runners.sandbox import Sandbox

from ..models import OnlineDeployment


def conda_file(deployment: OnlineDeployment) -> dict | None:
    return (deployment.spec.get("environment") or {}).get("conda_file")


def spawn(deployment: OnlineDeployment, command: str, folder: Path, cwd: Path, box: Sandbox) -> runner.Process:
    """Start the server, after its conda file is realised when it has one."""
    conda = conda_file(deployment)
    if not conda:
        return runner.spawn(command, folder, cwd, {}, box)
    venv = Path(settings.DOCKYARD_INFERENCE_VENV)
    box = dataclasses.replace(box, env={**box.env, "PYTHONPATH": environments.site_packages(venv)})
    key = environments.workspace_key(deployment.endpoint.workspace)
    return environments.spawn(conda, key, command, folder, cwd, box, python_venv=venv)


def probe_clock(deployment: OnlineDeployment) -> float:
    """When the liveness grace starts: the server's start, or the realisation's end (now while it still runs)."""
    started = deployment.runner.get("started", 0)
    if not conda_file(deployment) or not deployment.runner.get("folder"):
        return started
    result = Path(deployment.runner["folder"]) / environments.FOLDER / environments.RESULT
    try:
        return max(started, os.stat(result).st_mtime)
    except FileNotFoundError:
        return time.time()  # still realising: the probe waits
