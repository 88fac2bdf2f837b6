"""A local job's files on the worker's host: its run folder, the code copied in, and the ./outputs it leaves.

Everything under the working folder is written by the tenant's sandboxed process, so it is read as hostile: no
symbolic link is followed (every path is opened one component at a time with O_NOFOLLOW, relative to its parent's
descriptor, so a link swapped in between two looks cannot lead out), only regular files are read, and a FIFO cannot
make a read wait. The code folder comes from a folder the server shares (DOCKYARD_LOCAL_PATHS) and is copied with
the same care, within size and file-count bounds, honouring `.amlignore` (or else `.gitignore`) as Azure ML does.
"""
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pathspec
from django.conf import settings

import ignorerules
from assets import delivery
from assets.specs.snapshots import upload_sha256

from .spec import output_is_file

WORKDIR, OUTPUTS, OWNER = "workdir", "outputs", "job"
MAX_DEPTH = 64
CHUNK = 1024 * 1024
DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
REGULAR = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class FileRefused(ValueError):
    """A path or a folder Dockyard will not read or copy; the message says why, in a sentence."""


def run_folder(job) -> Path:
    """The job's own folder, keyed by its record's id: a later job of the same name never finds this one's files."""
    return Path(settings.DOCKYARD_JOB_DIR) / job.workspace.name / str(job.pk)


def owner_mark(job) -> str:
    """What the folder's OWNER file says for this record: its id and creation time (an id alone may come back after a
    database is restored beside an old var/)."""
    return f"{job.pk} {job.created_at.isoformat()}\n"


def claim_run_folder(job) -> Path:
    """The job's run folder, made this record's: a folder another record left (same id, other creation) is cleared."""
    folder = run_folder(job)
    mark = folder / OWNER
    try:
        if mark.read_text() != owner_mark(job):
            shutil.rmtree(folder)
    except FileNotFoundError:
        if folder.exists():
            shutil.rmtree(folder)  # files without an owner are nobody's run: never adopt them
    folder.mkdir(parents=True, exist_ok=True)
    if not mark.exists():
        mark.write_text(owner_mark(job))
    return folder


def started_folder(job) -> Path:
    """Where the job's process was started (its runner says so; jobs started before the id-keyed folders kept theirs)."""
    folder = (job.runner or {}).get("folder")
    return Path(folder) if folder else run_folder(job)


# The working folder, before the command starts


def prepare_workdir(job, workdir: Path) -> str:
    """Copy the job's code in and create ./outputs and its declared outputs' folders; returns what was copied, in words."""
    workdir.mkdir(parents=True, exist_ok=True)
    copied = ""
    code = job.spec.get("code")
    if code and upload_sha256(code):
        copied = _materialise_upload(job, code, workdir)
    elif code:
        files, size, skipped = copy_code(Path(os.path.realpath(code)), workdir)
        copied = f"Copied {files} files ({size} bytes) of {code}" + (f", skipped {skipped} links or special files" if skipped else "")
    outputs = workdir / OUTPUTS
    if outputs.is_symlink() or (outputs.exists() and not outputs.is_dir()):
        raise FileRefused("The code folder holds an `outputs` that is not a folder: the job's outputs go to ./outputs.")
    outputs.mkdir(exist_ok=True)
    for name in job.spec.get("outputs") or {}:
        if not output_is_file(job.spec, name):
            (outputs / name).mkdir(parents=True, exist_ok=True)
    return copied


def _materialise_upload(job, code: str, workdir: Path) -> str:
    """The uploaded snapshot written out as the working folder (files from artifact storage, modes kept)."""
    snapshot = delivery.snapshot_named(job.workspace, code)
    if snapshot is None:
        raise FileRefused(f"The uploaded code {code} is no longer stored in workspace '{job.workspace.name}'.")
    try:
        written = delivery.materialise(snapshot, workdir, settings.DOCKYARD_JOB_CODE_MAX_FILES,
                                       settings.DOCKYARD_JOB_CODE_MAX_BYTES)
    except delivery.DeliveryRefused as exc:
        raise FileRefused(str(exc)) from None
    return f"Copied {written.files} files ({written.size} bytes) of the uploaded code {code}"


@dataclass
class _Copy:
    """Counts of one code copy, checked against the bounds as it goes."""

    files: int = 0
    size: int = 0
    skipped: int = 0

    def add_file(self) -> None:
        self.files += 1
        if self.files > settings.DOCKYARD_JOB_CODE_MAX_FILES:
            raise FileRefused(f"The code folder has more than {settings.DOCKYARD_JOB_CODE_MAX_FILES} files "
                              "(DOCKYARD_JOB_CODE_MAX_FILES): list what the job does not need in .amlignore.")

    def add_bytes(self, size: int) -> None:
        self.size += size
        if self.size > settings.DOCKYARD_JOB_CODE_MAX_BYTES:
            raise FileRefused(f"The code folder holds more than {settings.DOCKYARD_JOB_CODE_MAX_BYTES} bytes "
                              "(DOCKYARD_JOB_CODE_MAX_BYTES): list what the job does not need in .amlignore.")


def copy_code(source: Path, target: Path) -> tuple[int, int, int]:
    """Copy `source` into `target` without following links out of it; returns (files, bytes, skipped)."""
    try:
        root = os.open(source, DIRECTORY)
    except OSError as exc:
        raise FileRefused(f"The code folder {source} cannot be read: {exc.strerror}.") from None
    target.mkdir(parents=True, exist_ok=True)
    counts, rules = _Copy(), {".": []}
    try:
        for folder, dirs, names, fd in os.fwalk(".", dir_fd=root, follow_symlinks=False):
            if folder.count("/") >= MAX_DEPTH:
                raise FileRefused(f"The code folder is nested deeper than {MAX_DEPTH} folders.")
            here = rules[folder] + _ignore_rules(folder, names, fd)
            # fwalk lists a link to a folder among the folders (and does not enter it): it is copied as a link
            links = [name for name in dirs if stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)]
            dirs[:] = [name for name in dirs if name not in links and not ignorerules.ignored(here, _join(folder, name) + "/")]
            for name in dirs:
                rules[os.path.join(folder, name)] = here  # (fwalk's own spelling of the folder: ./pkg)
                (target / _join(folder, name)).mkdir(exist_ok=True)
            for name in names + links:
                if not ignorerules.ignored(here, _join(folder, name)):
                    _copy_entry(source, folder, name, fd, target, counts)
    finally:
        os.close(root)
    return counts.files, counts.size, counts.skipped


def _join(folder: str, name: str) -> str:
    return name if folder == "." else f"{folder[2:]}/{name}"


def _ignore_rules(folder: str, names: list[str], fd: int) -> ignorerules.Rules:
    """The folder's own ignore file, as (folder, rules): `.amlignore` when it has one, else `.gitignore`."""
    relative = "" if folder == "." else folder[2:]
    return ignorerules.folder_rules(names, relative, lambda name: _read_small(name, fd), pathspec.GitIgnoreSpec.from_lines)


def _read_small(name: str, fd: int) -> bytes | None:
    try:
        handle = os.open(name, REGULAR, dir_fd=fd)
    except OSError:
        return None  # a link or something unreadable: no rules from it
    with os.fdopen(handle, "rb") as stream:
        if not stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
            return None
        return stream.read(ignorerules.MAX_IGNORE_FILE)


def _copy_entry(source: Path, folder: str, name: str, fd: int, target: Path, counts: _Copy) -> None:
    relative = _join(folder, name)
    info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    if stat.S_ISLNK(info.st_mode):
        _copy_link(source, relative, name, fd, target, counts)
    elif stat.S_ISREG(info.st_mode):
        _copy_file(name, fd, target / relative, counts)
    else:
        counts.skipped += 1  # a FIFO, socket or device is not code


def _copy_link(source: Path, relative: str, name: str, fd: int, target: Path, counts: _Copy) -> None:
    """A link that stays inside the code folder is copied as the same link; one that leads out is left behind."""
    pointed = os.readlink(name, dir_fd=fd)
    resolved = Path(os.path.realpath(source / relative))
    if os.path.isabs(pointed) or not (resolved == source or source in resolved.parents):
        counts.skipped += 1
        return
    counts.add_file()
    os.symlink(pointed, target / relative)


def _copy_file(name: str, fd: int, destination: Path, counts: _Copy) -> None:
    handle = os.open(name, REGULAR, dir_fd=fd)
    with os.fdopen(handle, "rb") as reader:
        mode = os.fstat(reader.fileno()).st_mode
        counts.add_file()
        # Only the owner's execute bit is kept: no setuid, setgid or sticky bit comes along.
        with open(destination, "wb") as writer:
            os.chmod(destination, 0o755 if mode & stat.S_IXUSR else 0o644)
            while chunk := reader.read(CHUNK):
                counts.add_bytes(len(chunk))
                writer.write(chunk)


# The outputs the job left, read by the API


def check_output_path(path: object) -> PurePosixPath:
    """A path inside the outputs folder as the client wrote it: relative, with no '..', no NUL, no empty part."""
    if not isinstance(path, str) or not path or len(path) > 4096:
        raise FileRefused("path must name a file in the job's outputs (as listed), e.g. model/weights.bin.")
    if "\0" in path or "\\" in path:
        raise FileRefused("path may not hold NUL or backslash characters.")
    parts = path.split("/")
    if path.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise FileRefused("path is relative to the job's outputs folder, without '.', '..' or empty parts.")
    return PurePosixPath(path)


def open_outputs(job) -> int | None:
    """A descriptor of the job's ./outputs folder (None when it has none yet); links anywhere on the way are refused."""
    try:
        folder = os.open(started_folder(job), DIRECTORY)
    except FileNotFoundError:
        return None
    try:
        workdir = os.open(WORKDIR, DIRECTORY, dir_fd=folder)
    except FileNotFoundError:
        return None
    finally:
        os.close(folder)
    try:
        return os.open(OUTPUTS, DIRECTORY, dir_fd=workdir)
    except FileNotFoundError:
        return None
    except OSError as exc:  # ELOOP / ENOTDIR: the job replaced its outputs folder by a link or a file
        raise FileRefused("The job's outputs folder is not a folder (the job replaced it): nothing is served from it.") from exc
    finally:
        os.close(workdir)


def output_files(job, limit: int) -> list[dict]:
    """The regular files under the job's ./outputs, as [{name, path, size}] sorted by path (at most `limit`)."""
    top = open_outputs(job)
    if top is None:
        return []
    files = []
    try:
        for folder, dirs, names, fd in os.fwalk(".", dir_fd=top, follow_symlinks=False):
            dirs.sort()
            if folder.count("/") >= MAX_DEPTH:
                dirs[:] = []
            for name in sorted(names):
                entry = _listed(folder, name, fd)
                if entry:
                    files.append(entry)
                if len(files) >= limit:
                    return files
    finally:
        os.close(top)
    return sorted(files, key=lambda row: row["path"])


def _listed(folder: str, name: str, fd: int) -> dict | None:
    """A regular file's row; links, special files and names that are not UTF-8 are not listed."""
    path = _join(folder, name)
    try:
        path.encode("utf-8")
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except (UnicodeEncodeError, OSError):
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return {"name": name, "path": path, "size": info.st_size}


def open_output(job, path: PurePosixPath):
    """One output file opened for reading (a binary file object); FileNotFoundError when there is none."""
    fd = open_outputs(job)
    if fd is None:
        raise FileNotFoundError(str(path))
    try:
        for part in path.parts[:-1]:
            fd = _step(fd, part, DIRECTORY)
        fd = _step(fd, path.name, REGULAR)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise FileRefused(f"{path} is not a regular file in the job's outputs (a link, or a folder): only files are "
                          "served.") from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise FileRefused(f"{path} is not a regular file in the job's outputs (a folder or a special file).")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def _step(parent: int, name: str, flags: int) -> int:
    """Open `name` inside `parent` and close `parent` (one component, never through a link)."""
    try:
        return os.open(name, flags, dir_fd=parent)
    finally:
        os.close(parent)
