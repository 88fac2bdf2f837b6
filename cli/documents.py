"""Reading YAML files: multi-document loading, one-document commands, `--set` overrides and files named in the YAML."""
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from .errors import EXIT_USAGE, InvalidInput

STDIN = "-"
UNESCAPED_DOT = re.compile(r"(?<!\\)\.")


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


def single_document(text: str, source: str, command: str) -> Document:
    """The one YAML mapping of a file given to a command that takes one (`apply` takes several)."""
    documents = parse_documents(text, source)
    if len(documents) != 1:
        raise InvalidInput(f"{source} holds {len(documents)} documents; `{command}` takes one (use `dockyard apply` for several).",
                           code="InvalidFile", exit_code=EXIT_USAGE)
    if not isinstance(documents[0].body, dict):
        raise InvalidInput(f"{source} is not a YAML mapping.", code="InvalidFile")
    return documents[0]


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
