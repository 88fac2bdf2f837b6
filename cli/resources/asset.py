"""Environments, models and data as the CLI knows them: which documents they are, their API paths, the files their YAML
names (a conda file read in, a local model or data path uploaded), table cells and `apply`.

Each kind is one `AssetKind`; cli/resources/environment.py, model.py and data.py name theirs.
"""
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..client import ApiClient, path_of
from ..documents import Document, refuse_aliases
from ..errors import EXIT_USAGE, ApiError, CliError, InvalidInput
from .base import (
    Outcome,
    as_strings,
    contains,
    created,
    ensure_workspace_exists,
    missing_in_workspace,
    read_if_exists,
)

LATEST = "latest"
# Fields the API adds to a version: not compared when a document is applied again.
SHOWN_ONLY = ("archived", "created_by", "created_on", "$schema")


@dataclass(frozen=True)
class AssetKind:
    """One kind of asset: its noun, its API collection, the Azure ML schema file that names it, and its `type`s."""

    noun: str  # environment, model, data
    collection: str  # environments, models, data
    schema: str  # environment.schema.json ...
    types: tuple[str, ...] = ()
    uploads_path: bool = False  # `path:` may be a local file or folder, uploaded before the POST

    def path(self, workspace: str, name: str | None = None, version: str | None = None) -> str:
        """`workspaces/{ws}/{collection}/` or one version's path."""
        if name is None:
            return path_of("workspaces", workspace, self.collection)
        return path_of("workspaces", workspace, self.collection, name, "versions", version or LATEST)

    def label(self, name: str, version: str | None) -> str:
        return f"{self.noun}/{name}:{version}" if version else f"{self.noun}/{name}"


ENVIRONMENT = AssetKind("environment", "environments", "environment.schema.json")
MODEL = AssetKind("model", "models", "model.schema.json", ("custom_model", "mlflow_model", "triton_model"), True)
DATA = AssetKind("data", "data", "data.schema.json", ("uri_file", "uri_folder", "mltable"), True)
KINDS = (ENVIRONMENT, MODEL, DATA)
ENVIRONMENT_KEYS = ("image", "conda_file", "build", "inference_config", "os_type")


def asset_kind(body: dict) -> AssetKind | None:
    """The asset a document describes: by its `$schema`, else by its fields (an image; a model or data `type`)."""
    schema = str(body.get("$schema") or "").lower()
    for kind in KINDS:
        if schema.endswith("/" + kind.schema) or schema == kind.schema:
            return kind
    if any(key in body for key in ("command", "compute", "kind", "endpoint_name")):
        return None
    if any(key in body for key in ENVIRONMENT_KEYS) and "type" not in body:
        return ENVIRONMENT
    for kind in (MODEL, DATA):
        if body.get("type") in kind.types and "path" in body:
            return kind
    return None


def name_and_version(text: str, version: str | None) -> tuple[str, str]:
    """`NAME --version V`, `NAME@latest` or `NAME:V` → (name, version); `latest` when neither gives one."""
    name, at, label = text.partition("@")
    if at:
        if label != LATEST or version:
            raise InvalidInput("Give NAME@latest or NAME --version V.", target="name", code="InvalidOption",
                               exit_code=EXIT_USAGE)
        return name, LATEST
    name, colon, written = text.partition(":")
    if colon and version and written != version:
        raise InvalidInput(f"{text} names version {written}, --version {version}.", target="version",
                           code="InvalidOption", exit_code=EXIT_USAGE)
    return name, (written if colon else version) or LATEST


def not_found(client: ApiClient, workspace: str, kind: AssetKind, name: str, version: str,
              error: ApiError) -> ApiError:
    """The API's bare 404: the workspace, or the version."""
    which = "no version that is not archived" if version == LATEST else f"no version {version}"
    missing = ApiError(404, f"{kind.noun.capitalize()} '{name}' has {which} in workspace '{workspace}'.",
                       code="NotFound")
    return missing_in_workspace(client, workspace, error, missing)


# what the YAML names beside it


def prepared_body(client: ApiClient, workspace: str, kind: AssetKind, document: Document) -> dict:
    """The body to send: a conda file named by path read in, a local `path` uploaded (its azureml://uploads/ path)."""
    body = dict(document.body)
    if kind is ENVIRONMENT and isinstance(body.get("conda_file"), str):
        body["conda_file"] = read_conda_file(document.base_dir, body["conda_file"])
    if kind.uploads_path and is_local(body.get("path")):
        body["path"] = upload(client, workspace, local_path(document.base_dir, body["path"]), named=kind is MODEL)
    return body


def is_local(path: object) -> bool:
    """A path on this machine: not a URL, not an azureml: reference."""
    return isinstance(path, str) and bool(path) and "://" not in path and not path.startswith("azureml:")


def local_path(base_dir: Path, written: str) -> Path:
    """A path relative to the YAML file's folder (or absolute), which must exist."""
    path = (base_dir / written).expanduser()
    if not path.exists():
        raise InvalidInput(f"{written} does not exist (paths are read from the YAML file's folder, {base_dir}).",
                           target="path", code="InvalidFile")
    return path


def with_conda_file_read(body: object, base_dir: Path) -> None:
    """A job's or deployment's `environment.conda_file: ./conda.yml` read beside the YAML, as `environment create`
    reads an environment's (the server reads no files)."""
    environment = body.get("environment") if isinstance(body, dict) else None
    if isinstance(environment, dict) and isinstance(environment.get("conda_file"), str):
        environment["conda_file"] = read_conda_file(base_dir, environment["conda_file"])


def read_conda_file(base_dir: Path, written: str) -> dict:
    """A conda file beside the YAML, read as YAML (no anchors or aliases, as the server reads bodies)."""
    path = local_path(base_dir, written.removeprefix("file:"))  # Azure ML's examples write file:./conda.yml too
    try:
        text = path.read_text()
        refuse_aliases(text)
        content = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise InvalidInput(f"Cannot read the conda file {written}: {exc}", target="conda_file",
                           code="InvalidFile") from None
    if not isinstance(content, dict):
        raise InvalidInput(f"The conda file {written} is not a YAML mapping.", target="conda_file", code="InvalidFile")
    return content


def upload(client: ApiClient, workspace: str, path: Path, named: bool = False) -> str:
    """Upload a local file or folder once (helper `code`'s packing); its `azureml://uploads/<sha256>` path.

    `named`: a model folder is stored under its own name, as Azure ML keeps it under AZUREML_MODEL_DIR."""
    try:
        from .uploads import upload_local_path
    except ImportError:
        raise CliError("Local paths need the upload support (cli/resources/uploads.py), which this build lacks: "
                       "upload the folder (POST workspaces/{ws}/uploads/) and give its azureml://uploads/ path.",
                       code="NotSupported") from None
    return upload_local_path(client, workspace, path, named)


# apply


def apply_asset(client: ApiClient, workspace: str, kind: AssetKind, document: Document, dry_run: bool) -> Outcome:
    """Register a version once: applied again it is `unchanged`; a version is never replaced (a different one fails)."""
    body = document.body
    name, version = body.get("name"), body.get("version")
    if not isinstance(name, str) or not name:
        raise InvalidInput(f"A {kind.noun} needs a name.", target="name", code="InvalidDocument")
    version = None if version is None else str(version)
    resource = kind.label(name, version)
    current = read_if_exists(client, kind.path(workspace, name, version)) if version else None
    if current is None:
        ensure_workspace_exists(client, workspace)
        if dry_run:
            return created(resource, dry_run, lambda: None)
        sent = prepared_body(client, workspace, kind, document)
        answer = client.post(kind.path(workspace), sent).body
        return Outcome(kind.label(name, answer.get("version")), "created")
    sent = prepared_body(client, workspace, kind, document)
    differs = sorted(key for key, value in sent.items() if key not in SHOWN_ONLY and not _same(current.body, key, value))
    if differs:
        raise CliError(f"{kind.noun.capitalize()} {name}:{version} exists and versions are never replaced (this "
                       f"document differs in: {', '.join(differs)}); give it a new version.", code="ImmutableField",
                       details=[{"target": key, "message": "differs from the registered version"} for key in differs])
    return Outcome(resource, "unchanged", dry_run)


def _same(current: dict, key: str, value: object) -> bool:
    shown = current.get(key)
    if key == "version":
        return str(value) == shown
    if key == "type" and isinstance(value, str):
        return value.lower() == shown
    if key in ("tags", "properties"):
        return contains(shown, as_strings(value))
    return contains(shown, value)
