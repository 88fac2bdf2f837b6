"""Reading YAML files: multi-document loading, `--set` overrides and the file-reading conveniences."""
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from .errors import EXIT_USAGE, InvalidInput

STDIN = "-"
# Azure ML's compute `type` values the API accepts (DESIGN.md §3); serverless and local have no record.
COMPUTE_TYPES = (
    "kubernetes", "amlcompute", "computeinstance", "virtualmachine", "databricks",
    "hdinsight", "datalakeanalytics", "synapsespark", "batch",
)
SSH_HOST_TYPES = ("virtualmachine", "hdinsight")
# Write-only fields: the API never returns them, so they cannot be compared, and the CLI never prints them.
SECRET_FIELDS = frozenset({"kubeconfig", "admin_password", "ssh_private_key", "access_token", "account_key"})
UNESCAPED_DOT = re.compile(r"(?<!\\)\.")
URL_LIKE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://|git\+|azureml:)")


@dataclass
class Document:
    """One YAML document and where it came from (for messages and relative paths)."""

    body: object
    source: str
    index: int
    base_dir: Path

    def where(self) -> str:
        return f"{self.source}, document {self.index}"


def read_text(source: str) -> str:
    if source == STDIN:
        return sys.stdin.read()
    try:
        return Path(source).expanduser().read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"Cannot read {source}: {exc}", code="InvalidFile") from None


def load_documents(source: str) -> list[Document]:
    """Every non-empty document of a (multi-document) YAML file; `-` reads standard input."""
    return parse_documents(read_text(source), source)


def parse_documents(text: str, source: str) -> list[Document]:
    """Every non-empty document of YAML text read from `source` (which relative file paths start from)."""
    base_dir = Path.cwd() if source == STDIN else Path(source).expanduser().resolve().parent
    try:
        refuse_aliases(text)
        bodies = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        raise InvalidInput(f"{source} is not valid YAML: {exc}", code="InvalidYaml") from None
    return [
        Document(body=body, source=source, index=index, base_dir=base_dir)
        for index, body in enumerate(bodies, start=1)
        if body is not None
    ]


def refuse_aliases(text: str) -> None:
    """The server refuses YAML anchors and aliases (an alias bomb expands a few bytes into gigabytes): so does the CLI."""
    for event in yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise yaml.MarkedYAMLError(problem="YAML anchors and aliases are not accepted", problem_mark=event.start_mark)


def parse_assignment(text: str) -> tuple[list[str], object]:
    """`a.b=value` -> (["a", "b"], value); the value is read as YAML, so numbers and booleans keep their type."""
    key, equals, raw = text.partition("=")
    if not equals or not key:
        raise InvalidInput(f"'{text}' is not key=value.", target="--set", code="InvalidOption", exit_code=EXIT_USAGE)
    path = [part.replace("\\.", ".") for part in UNESCAPED_DOT.split(key)]
    try:
        value = yaml.safe_load(raw) if raw else ""
    except yaml.YAMLError:
        value = raw
    return path, value


def apply_assignments(body: dict, assignments: list[str]) -> dict:
    """Set each dotted path (Azure CLI's `--set`); a dot inside a key is written `\\.`."""
    for text in assignments:
        path, value = parse_assignment(text)
        set_path(body, path, value, text)
    return body


def set_path(body: dict, path: list[str], value, text: str) -> None:
    node = body
    for part in path[:-1]:
        child = node.get(part) if isinstance(node, dict) else None
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise InvalidInput(f"'{text}': '{part}' is not a mapping.", target="--set", code="InvalidOption", exit_code=EXIT_USAGE)
        node = child
    node[path[-1]] = value


def contains(current, desired) -> bool:
    """True when `desired` is already in `current`; mappings may hold more (the API fills in defaults)."""
    if isinstance(desired, dict) and isinstance(current, dict):
        return all(contains(current.get(key), value) for key, value in desired.items())
    if isinstance(desired, list) and isinstance(current, list):
        return len(desired) == len(current) and all(map(contains, current, desired))
    return current == desired


def read_side_file(document: Document, path_value, target: str) -> str:
    """A file named in the YAML, relative to the YAML file's folder."""
    if not isinstance(path_value, str) or not path_value:
        raise InvalidInput("Must be a file path.", target=target, code="InvalidFile")
    path = Path(path_value).expanduser()
    if not path.is_absolute():
        path = document.base_dir / path
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InvalidInput(f"Cannot read {path}: {reason}.", target=target, code="InvalidFile") from None


def compute_body(document: Document) -> dict:
    """The body the API takes: `$schema` dropped, `*_file` fields replaced by the files' contents."""
    body = {key: value for key, value in document.body.items() if key != "$schema"}
    if body.get("type") == "kubernetes" and "kubeconfig_file" in body:
        if "kubeconfig" in body:
            raise InvalidInput("Give kubeconfig or kubeconfig_file, not both.", target="kubeconfig_file", code="InvalidFile")
        body["kubeconfig"] = read_side_file(document, body.pop("kubeconfig_file"), "kubeconfig_file")
    ssh = body.get("ssh_settings")
    if body.get("type") in SSH_HOST_TYPES and isinstance(ssh, dict) and "ssh_private_key_file" in ssh:
        ssh = dict(ssh)
        target = "ssh_settings.ssh_private_key_file"
        if "ssh_private_key" in ssh:
            raise InvalidInput("Give ssh_private_key or ssh_private_key_file, not both.", target=target, code="InvalidFile")
        ssh["ssh_private_key"] = read_side_file(document, ssh.pop("ssh_private_key_file"), target)
        body["ssh_settings"] = ssh
    return body


def with_code_resolved(document: Document) -> dict:
    """A job's body with a relative `code:` folder made absolute against the YAML file's folder (Azure ML's rule).

    The server takes only absolute paths (its working folder is not the user's); references (azureml:…) and URLs are
    left for the server to judge.
    """
    body = document.body
    code = body.get("code") if isinstance(body, dict) else None
    if not isinstance(code, str) or not code or URL_LIKE.match(code):
        return body
    path = Path(code).expanduser()
    body["code"] = os.path.normpath(path if path.is_absolute() else document.base_dir / path)
    return body
