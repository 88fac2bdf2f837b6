"""The sandbox every local job and local deployment runs in: bubblewrap namespaces and an unprivileged uid.

What a sandboxed process sees: the system read-only (/usr, /etc and the /bin, /lib links), its own /proc (a pid
namespace: no other process of the host), a private /tmp and /dev, the folders it was given (its own read-write,
an interpreter or model read-only) at their host paths, and no network unless allowed. Not Dockyard's source tree,
not var/, not another job's folder, not the worker's environment. Allowed the network, it still has a network
namespace of its own, given user-mode networking by slirp4netns (network.py): never the host's, whose loopback would
reach the database, Redis and Dockyard's own services.

Run as root, the worker lets an outer bwrap (root, no user namespace) make the mounts (root can reach every bind
source; a path under /root would not be reachable for uid 65534), then `setpriv` drops to the sandbox uid with no
capabilities, and an inner unprivileged bwrap puts the command in a user namespace that may not make more (no nested
namespaces for a tenant to attack the kernel with). Allowed the network, the inner bwrap also makes the network
namespace: it then belongs to the sandbox uid's user namespace, which slirp4netns, run as that uid too, may enter. A worker that is not root cannot switch uids: the command keeps
the worker's uid, in a user namespace of its own, still confined by the mount, pid, ipc and network namespaces.

The bwrap arguments (and with them the job's environment variables) go through a file in the run folder, read on
fd 3 (`--args`): they never appear on a command line that every user of the host can read in /proc.
"""
import os
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from . import network as sandbox_network

BWRAP, SETPRIV, ENV = "/usr/bin/bwrap", "/usr/bin/setpriv", "/usr/bin/env"
ARGS_FILE = "sandbox.args"
NOBODY = 65534
# Only the outer bwrap may switch uids; everything it starts drops both again.
ROOT_CAPS = ("--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID")
# Top-level names that a merged-/usr system links into /usr (bound read-only where they are real folders).
SYSTEM_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
SYSTEM_READ_ONLY = ("/usr", "/etc")
SHIM_DIR = "/opt/dockyard/bin"  # last on PATH: a `python` for hosts that only have python3 (see _python_shim)
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
DEFAULT_PATH = f"{SYSTEM_PATH}:{SHIM_DIR}"


class Refused(ValueError):
    """A path the sandbox will not show to a tenant's process; the message says why, in a sentence."""


@dataclass(frozen=True)
class Bind:
    """A host path shown inside the sandbox at `target` (its own path unless said otherwise)."""

    source: Path
    target: Path | None = None
    writable: bool = False

    @property
    def inside(self) -> Path:
        return self.target or self.source


@dataclass(frozen=True)
class Sandbox:
    """What one run may see; `network`: a network of its own through slirp4netns (not the host's, nor its loopback)."""

    binds: tuple[Bind, ...] = ()
    network: bool = False
    env: dict[str, str] = field(default_factory=dict)

    def launch(self, command: str, folder: Path, cwd: Path) -> tuple[str, dict[str, str]]:
        """The wrapper's command that runs `command` in this sandbox, and the (clean) environment to start it with."""
        for program in (BWRAP, ENV) + ((SETPRIV,) if worker_is_root() else ()):
            if not os.access(program, os.X_OK):
                raise OSError(f"{program} is missing: local compute runs in a bubblewrap sandbox (Debian: bubblewrap).")
        if self.network and not os.access(sandbox_network.SLIRP, os.X_OK):
            raise OSError(f"{sandbox_network.SLIRP} is missing: a sandbox allowed the network gets a network of its own "
                          "from slirp4netns, never the host's (Debian: slirp4netns).")
        prepare(self.binds)
        args_file = folder / ARGS_FILE
        options, program = arguments(self, cwd, [ENV, "--default-signal=TERM", shell(), "-c", command])
        fd = os.open(args_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(b"".join(os.fsencode(arg) + b"\0" for arg in options))
        # Ignored SIGTERM is inherited by the bwrap processes (their death would SIGKILL the command at once) and
        # undone for the command by `env --default-signal`: a cancel's SIGTERM reaches the command, which may end
        # gracefully before the SIGKILL. The wrapper (a root shell) gets none of the job's variables.
        # Allowed the network, bwrap runs under network.py, which gives the sandbox its network before the command starts.
        runner = sandbox_network.command(sys.executable, str(folder), worker_is_root(), _drop()) if self.network else []
        bwrap = shlex.join([*runner, BWRAP, "--args", "3", *program])
        wrapped = f"exec {ENV} --ignore-signal=TERM {bwrap} 3< {shlex.quote(str(args_file))}"
        return wrapped, {"PATH": DEFAULT_PATH, "LANG": "C.UTF-8"}


def shell() -> str:
    return "/bin/bash" if Path("/usr/bin/bash").exists() else "/bin/sh"


def worker_is_root() -> bool:
    return os.geteuid() == 0


def sandbox_uid() -> int:
    """DOCKYARD_SANDBOX_UID, by default nobody (65534) for a root worker, the worker's own uid otherwise."""
    configured = getattr(settings, "DOCKYARD_SANDBOX_UID", None)
    if not worker_is_root():
        if configured is not None and int(configured) != os.geteuid():
            raise OSError(f"DOCKYARD_SANDBOX_UID is {configured}, but a worker that is not root cannot switch to it.")
        return os.geteuid()
    return NOBODY if configured is None else int(configured)


def prepare(binds: tuple[Bind, ...]) -> None:
    """Folders the sandbox writes exist and belong to the sandbox uid (a root worker created them as root)."""
    uid = sandbox_uid()
    for bind in binds:
        if bind.writable:
            bind.source.mkdir(parents=True, exist_ok=True)
            if worker_is_root():
                _chown_tree(bind.source, uid)


def _chown_tree(top: Path, uid: int) -> None:
    os.chown(top, uid, uid, follow_symlinks=False)
    for root, dirs, files in os.walk(top):
        for name in dirs + files:
            os.chown(os.path.join(root, name), uid, uid, follow_symlinks=False)


def arguments(sandbox: Sandbox, cwd: Path, command: list[str]) -> tuple[list[str], list[str]]:
    """bwrap's options (read from a file: they hold the environment) and what it runs, ending in `command`."""
    view = _system() + _python_shim() + _tmp() + _binds(sandbox.binds) + ["--chdir", str(cwd), "--clearenv"]
    for key, value in sandbox.env.items():
        view += ["--setenv", key, value]
    # Allowed the network: bwrap tells network.py the pid of the namespace's process, then waits for its go.
    report = ["--info-fd", str(sandbox_network.OUTER_INFO_FD)] if sandbox.network else []
    wait = ["--block-fd", str(sandbox_network.BLOCK_FD)] if sandbox.network else []
    if not worker_is_root():
        namespaces = ["--unshare-all", "--unshare-user", "--disable-userns"]  # (--unshare-all: its own network too)
        return namespaces + report + wait + view, ["--", *command]
    # The outer namespaces; the network one is always new, so no process of the run ever sees the host's.
    namespaces = ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try", "--unshare-net"]
    own_network = ["--unshare-net", "--info-fd", str(sandbox_network.INNER_INFO_FD), *wait] if sandbox.network else []
    inner = [BWRAP, "--unshare-user", "--disable-userns", *own_network, "--dev-bind", "/", "/", "--"]  # (--dev: /dev/null)
    return namespaces + report + list(ROOT_CAPS) + view, ["--", *_drop(), *inner, *command]


def _drop() -> list[str]:
    """setpriv to the sandbox uid with no capability (empty for a worker that is not root: it has nothing to drop)."""
    if not worker_is_root():
        return []
    uid = str(sandbox_uid())
    return [SETPRIV, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs", "--inh-caps=-all",
            "--bounding-set=-all", "--"]


def _system() -> list[str]:
    args = []
    for path in SYSTEM_READ_ONLY:
        args += ["--ro-bind", path, path]
    for name in SYSTEM_LINKS:
        host = Path("/") / name
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), str(host)]
        elif host.is_dir():
            args += ["--ro-bind", str(host), str(host)]
    return args


def _python_shim() -> list[str]:
    """Azure ML's commands call `python`: where the host has only python3 (Debian without python-is-python3), the
    sandbox gets a `python` link to it, last on PATH so a real `python` (a venv's, the system's) always wins."""
    if shutil.which("python", path=SYSTEM_PATH):
        return []
    python3 = shutil.which("python3", path=SYSTEM_PATH)
    return ["--perms", "0755", "--dir", SHIM_DIR, "--symlink", python3, f"{SHIM_DIR}/python"] if python3 else []


def _tmp() -> list[str]:
    """Its own /proc and /dev; a private /tmp and /dev/shm that anyone inside may write (as on any host)."""
    return ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp", "--perms", "1777", "--tmpfs", "/dev/shm"]


def _binds(binds: tuple[Bind, ...]) -> list[str]:
    """Each bind, after the folders leading to it (made 0755: bwrap's own are 0700 root, closed to the uid)."""
    args, made = [], {Path("/"), Path("/tmp")}
    for bind in binds:
        for parent in reversed(bind.inside.parents):
            if parent not in made and not _under_system(parent):
                args += ["--perms", "0755", "--dir", str(parent)]
                made.add(parent)
        args += ["--bind" if bind.writable else "--ro-bind", str(bind.source), str(bind.inside)]
        made.add(bind.inside)
    return args


def _under_system(path: Path) -> bool:
    return any(path == Path(top) or Path(top) in path.parents for top in SYSTEM_READ_ONLY)


# What a tenant may ask to see: venvs, code and model folders. Never Dockyard's own files.


def protected() -> list[Path]:
    """Dockyard's tree, its var/ and the folders tenants' processes write: never shown to a sandbox."""
    paths = [settings.BASE_DIR, settings.VAR_DIR, settings.DOCKYARD_JOB_DIR, settings.DOCKYARD_DEPLOYMENT_DIR,
             settings.DOCKYARD_ENVIRONMENT_DIR, settings.DOCKYARD_INSTANCE_DIR]
    return [Path(os.path.realpath(path)) for path in paths]


def _overlaps(path: Path, other: Path) -> bool:
    """One contains the other (or they are the same)."""
    return path == other or other in path.parents or path in other.parents


def _real(path: str | Path, what: str) -> Path:
    if not str(path) or not Path(path).is_absolute():
        raise Refused(f"The {what} must be an absolute path on the Dockyard host (not {str(path)!r}).")
    return Path(os.path.realpath(path))


def venv_binds(venv: str | Path, allowed: tuple[Path, ...] = ()) -> tuple[Bind, ...]:
    """Read-only binds for a virtualenv and the interpreter it was made from; refuses anything else.

    `allowed`: venvs that may sit inside Dockyard's tree (the configured inference venv).
    """
    real = _real(venv, f"venv {venv}")
    if not (real / "pyvenv.cfg").is_file():
        raise Refused(f"{venv} is not a virtualenv (a folder with pyvenv.cfg).")
    if real not in {Path(os.path.realpath(path)) for path in allowed}:
        for place in protected():
            if _overlaps(real, place):
                raise Refused(f"The venv {venv} is inside Dockyard's own files ({place}): give a virtualenv elsewhere.")
    binds = [Bind(real)]
    prefix = _base_prefix(real)
    if prefix is not None and not _under_system(prefix):
        for place in protected():
            if _overlaps(prefix, place):
                raise Refused(f"The venv {venv} points at an interpreter in Dockyard's own files ({prefix}).")
        binds.append(Bind(prefix))
    return tuple(binds)


def _base_prefix(venv: Path) -> Path | None:
    """The installation the venv's `home =` names (its bin folder's parent)."""
    for line in (venv / "pyvenv.cfg").read_text(errors="replace").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            home = Path(os.path.realpath(value.strip()))
            prefix = home.parent if home.name == "bin" else home
            if prefix == Path("/") or not prefix.is_dir():
                raise Refused(f"The venv {venv} names an interpreter at {home}, which cannot be shown alone.")
            return prefix
    return None


def local_path_roots() -> list[Path]:
    """DOCKYARD_LOCAL_PATHS, less any root that would share Dockyard's own files.

    A root may be a folder inside the source tree (the tests share their data folder), never the tree itself or a
    folder holding it, and never one that holds or lies in var/ or the folders tenants' processes write.
    """
    base, *written = protected()
    roots = [Path(os.path.realpath(root)) for root in getattr(settings, "DOCKYARD_LOCAL_PATHS", []) if str(root)]
    return [root for root in roots if root != base and root not in base.parents
            and not any(_overlaps(root, place) for place in written)]


def local_path_bind(path: str | Path, what: str) -> Bind:
    """A read-only bind for a deployment's code or model path: only under a root of DOCKYARD_LOCAL_PATHS."""
    real = _real(path, what)
    roots = local_path_roots()
    if not any(real == root or root in real.parents for root in roots):
        shown = ", ".join(str(root) for root in roots) or "none is set"
        raise Refused(f"The {what} {path} is not under a folder this server shares with local jobs and deployments "
                      f"(DOCKYARD_LOCAL_PATHS: {shown}).")
    return Bind(real)
