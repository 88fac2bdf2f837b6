"""A local path named in a document (`code: ./src`, a model's or data's `path:`) → packed → uploaded → `azureml://uploads/…`.

Packing follows Azure ML: a folder's `.amlignore`, or without one its `.gitignore`, says what stays behind (gitignore
syntax; a nested folder's file applies below it). The archive is deterministic — members sorted, mtime 0, owner 0,
modes normalised as git keeps them (0755 when executable, else 0644), gzip without a name or time — so the same folder
gives the same bytes and the same snapshot. Links are never sent as links: one to a file inside the folder is sent as
that file, one that leads out of the folder (or to a folder) is left behind and counted. Before sending, the CLI asks
whether the workspace has the snapshot already (its sha256 is computed here exactly as the server computes it); a known
snapshot is not uploaded again.
"""
import gzip
import hashlib
import io
import json
import os
import re
import stat
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

import click
import pathspec

import ignorerules

from ..client import ApiClient, api_error, path_of
from ..errors import ApiError, InvalidInput

UPLOADS_PREFIX = "azureml://uploads/"
# References and URLs are the server's to judge; anything else in a path field is a local path.
NOT_LOCAL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://|git\+|azureml:)")
CHUNK = 1024 * 1024
EXECUTABLE, REGULAR = 0o755, 0o644


@dataclass
class PackedFile:
    """One file to send: its path in the snapshot, where it is read from, its sha256, mode and size."""

    path: str
    source: Path
    sha256: str
    mode: int
    size: int


@dataclass
class Packed:
    """A folder as it will be stored: its files, the snapshot's sha256, and what was left behind."""

    files: list[PackedFile] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(item.size for item in self.files)

    @property
    def sha256(self) -> str:
        """The server's snapshot id: sha256 of [[path, sha256, mode], ...] sorted by path, compact JSON in UTF-8."""
        rows = sorted([item.path, item.sha256, item.mode] for item in self.files)
        return hashlib.sha256(json.dumps(rows, separators=(",", ":"), ensure_ascii=False).encode("utf-8")).hexdigest()


def upload_local_path(client: ApiClient, workspace: str, path: Path, named: bool = False) -> str:
    """Upload a local folder (or one file) to the workspace unless it has it already; returns `azureml://uploads/<sha>`.

    `named`: a folder is stored under its own name (a model, as Azure ML keeps it under AZUREML_MODEL_DIR)."""
    packed = pack(path, named)
    reference = UPLOADS_PREFIX + packed.sha256
    if _known(client, workspace, packed.sha256):
        click.echo(f"{path}: code unchanged, not uploaded ({reference}).", err=True)
        return reference
    response = client.raw("POST", path_of("workspaces", workspace, "uploads"), content=archive(packed),
                          headers={"Content-Type": "application/gzip"})
    if response.status_code >= 400:
        raise api_error(response)
    answered = response.json().get("path")
    if response.status_code == 200:
        click.echo(f"{path}: code unchanged, not uploaded ({answered}).", err=True)
    else:
        click.echo(f"{path}: uploaded {len(packed.files)} files, {_megabytes(packed.size)} ({answered}).", err=True)
    if answered != reference:  # the server's rules and this module's differ: trust the server's name
        click.echo(f"{path}: the server named the upload {answered}, not {reference}.", err=True)
    return answered


def uploaded_field(client: ApiClient, workspace: str, base_dir: Path, value: object, dry_run: bool = False,
                   named: bool = False) -> object:
    """A document's path field after upload: a local path (relative to the YAML file's folder, as in Azure ML) becomes
    `azureml://uploads/<sha256>`; references, URLs, absolute paths that do not exist here (a folder on the Dockyard
    host, or in a deployment's image) and anything not a string are left as they are."""
    if not isinstance(value, str) or not value or NOT_LOCAL.match(value):
        return value
    path = Path(value).expanduser()
    if path.is_absolute() and not path.exists():
        return value  # not here: a folder on the Dockyard host or inside the image, for the server to judge
    path = path if path.is_absolute() else base_dir / path
    return local_reference(path, named) if dry_run else upload_local_path(client, workspace, path, named)


def local_reference(path: Path, named: bool = False) -> str:
    """The reference an upload of `path` will have, without sending anything (for `apply --dry-run`)."""
    return UPLOADS_PREFIX + pack(path, named).sha256


def _known(client: ApiClient, workspace: str, sha256: str) -> bool:
    try:
        client.get(path_of("workspaces", workspace, "snapshots", sha256))
    except ApiError as error:
        if error.status == 404:
            return False
        raise
    return True


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


# Packing


def pack(path: Path, named: bool = False) -> Packed:
    """What of `path` is sent (a folder honouring its ignore files, or one file under its own name).

    `named`: a folder's files go under the folder's own name (`model/weights.pkl`), as Azure ML stores a model folder:
    AZUREML_MODEL_DIR then holds the folder by its name, whether the model was registered or given inline."""
    path = path.expanduser()
    try:
        info = path.stat()
    except OSError as exc:
        raise InvalidInput(f"Cannot read {path}: {exc.strerror or exc}.", code="InvalidFile") from None
    packed = Packed()
    if stat.S_ISREG(info.st_mode):
        packed.files.append(_packed_file(path.name, path))
        return packed
    if not stat.S_ISDIR(info.st_mode):
        raise InvalidInput(f"{path} is neither a folder nor a file.", code="InvalidFile")
    root = Path(os.path.realpath(path))
    _walk(root, packed)
    if named:
        for item in packed.files:
            item.path = f"{root.name}/{item.path}"
    packed.files.sort(key=lambda item: item.path)
    return packed


def _walk(root: Path, packed: Packed) -> None:
    rules: dict[str, list] = {"": []}
    for folder, dirs, names in os.walk(root, followlinks=False):
        relative = Path(folder).relative_to(root).as_posix()
        relative = "" if relative == "." else relative
        here = rules[relative] + _ignore_rules(Path(folder), relative, names)
        kept_dirs = []
        for name in sorted(dirs):
            child = _joined(relative, name)
            if os.path.islink(os.path.join(folder, name)):
                if not ignorerules.ignored(here, child + "/"):
                    packed.skipped.append(child)  # a link to a folder: not followed (it may lead out or loop)
            elif not ignorerules.ignored(here, child + "/"):
                kept_dirs.append(name)
                rules[child] = here
        dirs[:] = kept_dirs
        for name in sorted(names):
            child = _joined(relative, name)
            if not ignorerules.ignored(here, child):
                _add(root, Path(folder) / name, child, packed)


def _joined(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _add(root: Path, source: Path, relative: str, packed: Packed) -> None:
    """A regular file as it is; a link to a file inside the folder as that file; anything else is skipped."""
    if source.is_symlink():
        target = Path(os.path.realpath(source))
        if root not in target.parents or not target.is_file():
            packed.skipped.append(relative)
            return
        source = target
    elif not source.is_file():
        packed.skipped.append(relative)  # a FIFO, socket or device is not code
        return
    packed.files.append(_packed_file(relative, source))


def _packed_file(relative: str, source: Path) -> PackedFile:
    digest, size = hashlib.sha256(), 0
    with open(source, "rb") as reader:
        mode = os.fstat(reader.fileno()).st_mode
        while chunk := reader.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return PackedFile(relative, source, digest.hexdigest(), EXECUTABLE if mode & 0o111 else REGULAR, size)


def _ignore_rules(folder: Path, relative: str, names: list[str]) -> ignorerules.Rules:
    """The folder's own ignore file as (its folder, rules): `.amlignore` when it has one, else `.gitignore`."""
    return ignorerules.folder_rules(names, relative, lambda name: _head(folder / name), pathspec.GitIgnoreSpec.from_lines)


def _head(path: Path) -> bytes | None:
    if not path.is_file():
        return None
    with open(path, "rb") as reader:
        return reader.read(ignorerules.MAX_IGNORE_FILE)


def archive(packed: Packed) -> bytes:
    """The files as a deterministic .tar.gz (the same files give the same bytes)."""
    buffer = io.BytesIO()
    # gzip's own default level, as `tar -czf` uses: GzipFile's 9 costs about twice the CPU for under 1 % fewer bytes
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=6) as zipped:
        with tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for item in packed.files:
                info = tarfile.TarInfo(item.path)
                info.size, info.mode, info.mtime, info.uid, info.gid = item.size, item.mode, 0, 0, 0
                info.uname = info.gname = ""
                with open(item.source, "rb") as reader:
                    tar.addfile(info, reader)
    return buffer.getvalue()
