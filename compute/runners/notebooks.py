"""Local compute instances: JupyterLab (kernels, terminals) in the bubblewrap sandbox on the worker's host.

One folder per instance under DOCKYARD_INSTANCE_DIR, named by the record's id and creation time (a compute made later
under a freed name never finds another's home):

    <dir>/<id>-<created>/run      the wrapper's pid, exit code, log and the sandbox's arguments (never shown inside)
    <dir>/<id>-<created>/server   the server's Unix socket and Jupyter's runtime files, shown at /run/dockyard
    <dir>/<id>-<created>/home     the owner's files, shown at /home/azureuser: kept across stops, removed on delete

The server listens on a Unix socket, not a TCP port: only what reaches the folder (the worker, Dockyard's proxy) can
call it. The interpreter is the notebook virtualenv (DOCKYARD_NOTEBOOK_VENV), shown read-only: none of Dockyard's own
packages, files, settings or environment. A worker that restarts finds a running server again from its run folder
(local.adopt), so nothing about the process is kept in the database.
"""
import os
import shlex
import shutil
from pathlib import Path

from django.conf import settings

from . import local as runner
from .sandbox import DEFAULT_PATH, Bind, Sandbox, venv_binds

HOME_INSIDE = Path("/home/azureuser")  # Azure ML's compute instance user
SERVER_INSIDE = Path("/run/dockyard")  # short: a socket address holds 108 bytes
SOCKET = "jupyter.sock"
RUN, SERVER, HOME = "run", "server", "home"


def folder_of(compute) -> Path:
    return Path(settings.DOCKYARD_INSTANCE_DIR) / f"{compute.pk}-{int(compute.created_at.timestamp())}"


def home_of(compute) -> Path:
    return folder_of(compute) / HOME


def base_url(compute) -> str:
    """The path JupyterLab serves under: the same as Dockyard's proxy route, so links it writes stay true."""
    return f"/instances/{compute.workspace.name}/{compute.name}/jupyter/"


def running(compute) -> runner.Process | None:
    """The instance's server process when it is alive (found from its run folder, also after a worker restart)."""
    process = runner.adopt(folder_of(compute) / RUN)
    return process if process is not None and runner.is_running(process) else None


def local_instance_socket(compute) -> Path | None:
    """The running server's Unix socket as the worker and the proxy reach it; None while there is no server."""
    path = folder_of(compute) / SERVER / SOCKET
    return path if running(compute) is not None and path.is_socket() else None


def _command(compute) -> str:
    """jupyter-lab on the Unix socket under the instance's base URL; the token comes from JUPYTER_TOKEN."""
    venv = Path(os.path.realpath(settings.DOCKYARD_NOTEBOOK_VENV))
    args = [str(venv / "bin" / "jupyter-lab"), "--no-browser", f"--ServerApp.sock={SERVER_INSIDE / SOCKET}",
            "--ServerApp.sock_mode=0600", f"--ServerApp.base_url={base_url(compute)}",
            f"--ServerApp.root_dir={HOME_INSIDE}",
            # Browsers reach it through Dockyard's proxy under Dockyard's own host name; only the worker and the proxy
            # reach the socket at all, and every request still needs the token.
            "--ServerApp.allow_remote_access=True",
            # no network by default: no update or news checks that would only fail
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.news_url=None"]
    return "exec " + shlex.join(args)


def _sandbox(compute, token: str, network: bool) -> Sandbox:
    """Its home and server folders read-write, the notebook venv read-only; no network unless allowed."""
    folder = folder_of(compute)
    venv = settings.DOCKYARD_NOTEBOOK_VENV
    binds = (Bind(folder / SERVER, SERVER_INSIDE, writable=True), Bind(folder / HOME, HOME_INSIDE, writable=True),
             *venv_binds(venv, (venv,)))
    env = {"PATH": f"{Path(os.path.realpath(venv)) / 'bin'}{os.pathsep}{DEFAULT_PATH}", "HOME": str(HOME_INSIDE),
           "USER": "azureuser", "SHELL": "/bin/bash" if Path("/bin/bash").exists() else "/bin/sh",
           "LANG": "C.UTF-8", "TERM": "xterm-256color", "JUPYTER_TOKEN": token,
           "JUPYTER_RUNTIME_DIR": str(SERVER_INSIDE / "runtime")}
    return Sandbox(binds, network, env)


def start(compute, token: str, network: bool = False) -> runner.Process:
    """Start the server (the caller made sure none runs); returns once its wrapper runs, before it answers."""
    folder = folder_of(compute)
    if not (Path(settings.DOCKYARD_NOTEBOOK_VENV) / "bin" / "jupyter-lab").exists():
        raise OSError(f"JupyterLab is not installed in {settings.DOCKYARD_NOTEBOOK_VENV} (bin/setup installs it from "
                      "requirements-notebook.txt).")
    (folder / SERVER / SOCKET).unlink(missing_ok=True)  # an ended server's socket: jupyter would not bind over it
    for part in (RUN, HOME):
        (folder / part).mkdir(parents=True, exist_ok=True)
    command, env = _sandbox(compute, token, network).launch(_command(compute), folder / RUN, HOME_INSIDE)
    return runner.spawn(command, folder / RUN, folder / HOME, env)


def stop(compute) -> None:
    """End the server and everything it started (kernels, terminals); the home stays."""
    process = runner.adopt(folder_of(compute) / RUN)
    if process is not None and process.start_ticks >= 0:
        runner.kill_group(process)


def delete(compute) -> None:
    """Stop the server and remove the instance's folder, its home with it."""
    stop(compute)
    shutil.rmtree(folder_of(compute), ignore_errors=True)


def ended(compute, token: str) -> str | None:
    """Why the server is not running although it was started: its exit code and last output; None if it never ran."""
    process = runner.adopt(folder_of(compute) / RUN)
    if process is None:
        return None
    code = runner.exit_code(process)
    try:
        lines = (folder_of(compute) / RUN / runner.LOG_FILE).read_text(errors="replace").splitlines()
    except OSError:
        lines = []
    # Jupyter prints its URL with the token: never shown on (the reason is read by every member of the workspace)
    last = " | ".join(line.strip().replace(token, "…")[:300] for line in lines[-3:] if line.strip())
    said = f"exited with code {code}" if code is not None else "ended"
    return f"The Jupyter server {said}." + (f" Last output: {last}" if last else "")
