"""Conda files of local runs: realised in a sandbox of their own with the network, cached per workspace and hash, and
shown read-only to the run, first on its PATH.

The cache lives under DOCKYARD_ENVIRONMENT_DIR (var/environments by default), one folder per workspace (its id and
creation time: a workspace made later under a freed name never finds another's environments), then per conda file
hash, then per runtime (the host python3 that makes the venv, and the conda tool if the host has one):

    <dir>/<workspace>/<sha256>/<runtime>/env       a realised environment (its ready mark holds the hash)
    <dir>/<workspace>/<sha256>/<runtime>.partial   a realisation in progress, shown to its sandbox at /opt/dockyard
    <dir>/<workspace>/<sha256>/<runtime>.lock      held while realising: one realisation per entry at a time

The run's command starts only after realiser.py (stdlib only, outside the sandbox) has the entry ready: both are one
process group under the run's wrapper, so a cancel stops a realisation too, and the realisation's output (and the
time it took) is the first part of the run's log. The environment is built at /opt/dockyard/env inside its sandbox
and shown at the same path to the run: the absolute paths a venv writes into itself stay true.
"""
import dataclasses
import hashlib
import json
import os
import shlex
import shutil
import sys
from pathlib import Path

from django.conf import settings

from assets.specs.conda import conda_hash
from assets.specs.realise import ENV_DIR, ROOT, active_variables, conda_variables, realise_script, realise_variables

from . import local as runner
from . import realiser
from .sandbox import DEFAULT_PATH, Bind, Sandbox, sandbox_uid, venv_binds

FOLDER = "environment"  # in the run folder: the realisation's sandbox arguments, its plan and its result
PLAN, RESULT = "plan.json", "result.json"
TOOLS = ("micromamba", "mamba", "conda")


@dataclasses.dataclass(frozen=True)
class Entry:
    """One cache entry: a conda file realised for one workspace on one runtime."""

    folder: Path
    runtime: str

    @property
    def final(self) -> Path:
        return self.folder / self.runtime

    @property
    def partial(self) -> Path:
        return self.folder / f"{self.runtime}.partial"

    @property
    def lock(self) -> Path:
        return self.folder / f"{self.runtime}.lock"


def workspace_key(workspace) -> str:
    """The workspace's cache folder name: its id and creation time (ids may come back after a database restore)."""
    return f"{workspace.pk}-{int(workspace.created_at.timestamp())}"


def runtime(path: str = DEFAULT_PATH) -> str:
    """What makes the environment: the python3 its sandbox finds on `path` (its name and where it is), and a conda tool
    if there is one."""
    python = shutil.which("python3", path=path)
    tool = next((name for name in TOOLS if shutil.which(name, path=path)), "")
    real = os.path.realpath(python) if python else ""
    where = hashlib.sha256(real.encode()).hexdigest()[:8] if real else ""
    return "-".join(part for part in (Path(real).name if real else "no-python3", where, tool) if part)


def entry(workspace: str, conda: dict, python_venv: Path | None = None) -> Entry:
    return Entry(Path(settings.DOCKYARD_ENVIRONMENT_DIR) / workspace / conda_hash(conda), runtime(_path(python_venv)))


def _path(python_venv: Path | None) -> str:
    """The realisation's PATH: the venv's interpreter first when one is given (a deployment's inference server's)."""
    return f"{Path(os.path.realpath(python_venv)) / 'bin'}{os.pathsep}{DEFAULT_PATH}" if python_venv else DEFAULT_PATH


def site_packages(python_venv: Path) -> str:
    """Where the realised environment's packages are when it is made with `python_venv`'s interpreter."""
    version = next((line.partition("=")[2].strip() for line in (Path(python_venv) / "pyvenv.cfg").read_text().splitlines()
                    if line.partition("=")[0].strip() in ("version", "version_info")), "")
    return f"{ENV_DIR}/lib/python{'.'.join(version.split('.')[:2])}/site-packages"


def spawn(conda: dict | None, workspace: str, command: str, folder: Path, cwd: Path, box: Sandbox,
          python_venv: Path | None = None) -> runner.Process:
    """Start `command` in `box`; with a conda file, after realising it (or finding it realised) in the cache.

    `python_venv`: the environment is made with that venv's interpreter (a local deployment's inference server, which
    then imports the environment's packages), not the host's python3.
    """
    if not conda:
        return runner.spawn(command, folder, cwd, {}, box)
    cache = entry(workspace, conda, python_venv)
    own = folder / FOLDER
    own.mkdir(parents=True, exist_ok=True)
    (own / RESULT).unlink(missing_ok=True)
    realise_command, realise_env = _realisation(conda, cache, python_venv, box.network).launch(realise_script(ROOT, system_site_packages=False), own,
                                                              Path("/tmp"))
    plan = {"hash": conda_hash(conda), "final": str(cache.final), "partial": str(cache.partial),
            "lock": str(cache.lock), "command": realise_command, "env": realise_env, "uid": sandbox_uid(),
            "result": str(own / RESULT)}
    descriptor = os.open(own / PLAN, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # it holds the sandbox's variables
    with os.fdopen(descriptor, "w") as handle:
        json.dump(plan, handle)
    run_command, run_env = _in_environment(box, conda, cache).launch(command, folder, cwd)
    first = shlex.join([sys.executable, "-I", os.path.abspath(realiser.__file__), str(own / PLAN)])
    return runner.spawn(f"{first} && {run_command}", folder, cwd, run_env)


def _realisation(conda: dict, cache: Entry, python_venv: Path | None, run_network: bool) -> Sandbox:
    """The realisation's sandbox: the scratch folder at /opt/dockyard (read-write), pip's settings, and a network
    only where the run itself may have one (staff allowed the workspace) or DOCKYARD_ENVIRONMENT_NETWORK says so: pip
    fetches URLs the tenant chose, so it gets no more reach than the tenant's own job would."""
    wheels = [Bind(Path(path)) for path in _local_find_links()]
    if python_venv:
        wheels += venv_binds(python_venv, (python_venv,))
    env = {"PATH": _path(python_venv), "HOME": "/tmp", "LANG": "C.UTF-8", **realise_variables(conda),
           **{key: str(value) for key, value in settings.DOCKYARD_ENVIRONMENT_PIP.items() if key.startswith("PIP_")}}
    return Sandbox((Bind(cache.partial, Path(ROOT), writable=True), *wheels),
                   run_network or settings.DOCKYARD_ENVIRONMENT_NETWORK, env)


def _local_find_links() -> list[str]:
    """A wheel folder of this host named in PIP_FIND_LINKS (a mirror without an index), shown read-only."""
    links = str(settings.DOCKYARD_ENVIRONMENT_PIP.get("PIP_FIND_LINKS", ""))
    return [path for path in links.split() if os.path.isabs(path) and os.path.isdir(path)]


def _in_environment(box: Sandbox, conda: dict, cache: Entry) -> Sandbox:
    """The run's sandbox with the realised environment read-only at /opt/dockyard/env and first on PATH."""
    env = {**conda_variables(conda), **box.env, **active_variables(ENV_DIR),
           "PATH": f"{ENV_DIR}/bin{os.pathsep}{box.env.get('PATH', DEFAULT_PATH)}"}
    return dataclasses.replace(box, binds=(*box.binds, Bind(cache.final / "env", Path(ENV_DIR))), env=env)


def result(folder: Path) -> dict | None:
    """What the realisation of the run in `folder` ended with ({realised, seconds} | {reused} | {failed, tail})."""
    try:
        return json.loads((folder / FOLDER / RESULT).read_text())
    except (OSError, ValueError):
        return None
