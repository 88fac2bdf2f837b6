"""What every studio form shares: a field's description, its bound value and errors, and how raw text is read."""
import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Field:
    name: str
    label: str
    kind: str = "text"  # text | textarea | code | int | select | size | size_picker | host | password | secret_text | pairs | schedule | context
    required: bool = False  # only marks the label; the serializer decides
    initial: str = ""
    help: str = ""
    choices: tuple = ()


@dataclass
class BoundField:
    field: Field
    value: object
    errors: list[str] = field(default_factory=list)
    suggestions: list[tuple[str, str]] = field(default_factory=list)
    options: list = field(default_factory=list)  # the rows of a picker (size_picker: catalog rows; host: (name, label))


def parse_pairs(text: str) -> dict[str, str]:
    """key=value lines into a map; blank lines are skipped, anything else is refused with its line number."""
    pairs = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"Line {number} ('{line}') is not key=value.")
        pairs[key.strip()] = value.strip()
    return pairs


def as_number(raw: str):
    # A mistyped number goes through as text, so the service names the problem as the API does.
    return int(raw) if re.fullmatch(r"-?\d+", raw) else raw


def errors_by_field(errors: list[dict], field_of) -> dict[str, list[str]]:
    """Error messages grouped by the field `field_of` finds for each row's target ("" for none)."""
    by_field: dict[str, list[str]] = {}
    for row in errors:
        by_field.setdefault(field_of(row["target"]), []).append(row["message"])
    return by_field
