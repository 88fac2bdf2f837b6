"""Printing results as aligned text tables, JSON or YAML, and keeping what the server sent from driving the terminal."""
import io
import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import click
import yaml

FORMATS = ("table", "json", "yaml")
EMPTY = "-"
# C0 controls but tab and newline, DEL, C1 controls (0x9b is a one-byte CSI), bidi overrides and isolates (text that
# reads in another order than it runs). ESC starts every terminal sequence: escaped, no sequence is left.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    """Text made harmless for a terminal: control characters shown as \\u escapes; a carriage return is a new line.

    The escapes stay valid inside the JSON and YAML the CLI prints (both read `\\u001b`), so output stays parseable.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return CONTROL.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


class TerminalGuard(io.TextIOBase):
    """A text stream that passes everything through terminal_safe: names, messages, logs and model answers alike."""

    def __init__(self, stream):
        super().__init__()
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(terminal_safe(text))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    @property
    def encoding(self):
        return getattr(self.stream, "encoding", "utf-8")

    @property
    def errors(self):
        return getattr(self.stream, "errors", "strict")


def guard_terminal() -> None:
    """Everything the CLI prints goes through TerminalGuard (it prints nothing of its own that needs a control code)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if not isinstance(stream, TerminalGuard):
            setattr(sys, name, TerminalGuard(stream))


@dataclass(frozen=True)
class Column:
    """A table column: its header and how to get the cell's text from a row."""

    header: str
    value: Callable[[dict], object]


def field(name: str) -> Callable[[dict], object]:
    return lambda row: row.get(name)


def timestamp(name: str) -> Callable[[dict], object]:
    """An ISO timestamp cut to minutes ("2026-03-10 21:04"), as the server sent it (its time zone)."""
    return lambda row: (row.get(name) or "")[:16].replace("T", " ") or None


def cell_text(value) -> str:
    if value is None or value == "" or value == [] or value == {}:
        return EMPTY
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def table_lines(rows: Sequence[dict], columns: Sequence[Column]) -> list[str]:
    """Plain columns padded to the widest cell, two spaces apart, no trailing blanks."""
    grid = [[column.header for column in columns]]
    grid += [[cell_text(column.value(row)) for column in columns] for row in rows]
    widths = [max(len(line[index]) for line in grid) for index in range(len(columns))]
    return ["  ".join(text.ljust(width) for text, width in zip(line, widths, strict=True)).rstrip() for line in grid]


def fields_lines(item: dict) -> list[str]:
    """One resource as `key  value` lines; nested values as compact JSON."""
    width = max((len(key) for key in item), default=0)
    return [f"{key.ljust(width)}  {cell_text(value)}" for key, value in item.items()]


def as_json(data) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)


def as_yaml(data) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False).rstrip("\n")


def print_structured(data, fmt: str) -> None:
    """JSON or YAML, as the API sent it."""
    click.echo(as_json(data) if fmt == "json" else as_yaml(data))


def print_list(rows: list[dict], columns: Sequence[Column], fmt: str, *, empty_message: str) -> None:
    """A collection: a table (or a note on stderr when empty), or the plain list as JSON/YAML."""
    if fmt != "table":
        print_structured(rows, fmt)
    elif not rows:
        click.echo(empty_message, err=True)
    else:
        click.echo("\n".join(table_lines(rows, columns)))


def print_item(item: dict, fmt: str) -> None:
    """One resource: every field it has."""
    if fmt != "table":
        print_structured(item, fmt)
    else:
        click.echo("\n".join(fields_lines(item)))


def print_shown(item: dict, fmt: str) -> None:
    """One resource with the Kubernetes objects rendered for it: counted in a table, printed whole with -o json|yaml."""
    if fmt == "table":
        manifests = item.get("manifests")
        item = {key: value for key, value in item.items() if key != "manifests"}
        if manifests:
            item["manifests"] = f"{len(manifests)} Kubernetes objects (-o yaml shows them)"  # last, after the fields
    print_item(item, fmt)


def print_written(item: dict, fmt: str, message: str) -> None:
    """After a write: a one-line message for people, the resource itself for -o json/yaml."""
    if fmt == "table":
        click.echo(message)
    else:
        print_structured(item, fmt)
