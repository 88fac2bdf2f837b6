"""What every spec parser shares: errors that name their field, string maps, unknown and refused fields, counts,
length limits, and Azure ML's enum casing — problems as (field path, message) rows (pure: no Django).

Free text is stored as given and shown in lists, so each field has a bound: without one, a 2 MB description made every
list that shows it that much slower. The request parsers bound bodies and single strings; these bound what is kept.
"""
import json
import re
from collections.abc import Iterable
from datetime import date, datetime

MAX_NAME_TEXT = 255  # display_name, experiment_name
MAX_DESCRIPTION = 5000
MAX_COMMAND = 64 * 1024
MAX_TAGS = 100
MAX_TAG_KEY = 256
MAX_TAG_VALUE = 1024
MAX_TEXT = 64 * 1024  # any other string kept as given (properties, identity, inputs, environment variables...)
MAX_SPEC_BYTES = 256 * 1024  # the whole stored spec, as JSON

TEXT_FIELDS = {"display_name": MAX_NAME_TEXT, "experiment_name": MAX_NAME_TEXT, "description": MAX_DESCRIPTION,
               "command": MAX_COMMAND}


def text_field_errors(spec: dict) -> list[tuple[str, str]]:
    """Top-level free-text fields past their length."""
    return [(key, f"{key} must be at most {limit} characters.")
            for key, limit in TEXT_FIELDS.items() if isinstance(spec.get(key), str) and len(spec[key]) > limit]


def tag_errors(tags: object, path: str = "tags") -> list[tuple[str, str]]:
    """At most MAX_TAGS tags, each key and value of bounded length."""
    if not isinstance(tags, dict):
        return []
    if len(tags) > MAX_TAGS:
        return [(path, f"At most {MAX_TAGS} tags are accepted.")]
    errors = []
    for key, value in tags.items():
        if len(str(key)) > MAX_TAG_KEY:
            errors.append((f"{path}.{str(key)[:40]}…", f"A tag name has at most {MAX_TAG_KEY} characters."))
        elif isinstance(value, str) and len(value) > MAX_TAG_VALUE:
            errors.append((f"{path}.{key}", f"A tag value has at most {MAX_TAG_VALUE} characters."))
    return errors


def tag_map_problem(tags: object) -> str | None:
    """Tags as a record keeps them: a map of strings to strings, within the tag limits; else why not."""
    if not isinstance(tags, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in tags.items()):
        return "Tags must be a map of strings to strings."
    return next((message for _target, message in tag_errors(tags)), None)


def string_errors(value: object, path: str = "", skip: frozenset = frozenset(TEXT_FIELDS)) -> list[tuple[str, str]]:
    """Strings anywhere in `value` (keys too) longer than MAX_TEXT; top-level `skip` fields have their own limits."""
    errors, pending = [], [(value, path)]
    while pending:
        item, where = pending.pop()
        if isinstance(item, str) and len(item) > MAX_TEXT and where not in skip:
            errors.append((where, f"Text here has at most {MAX_TEXT} characters."))
        elif isinstance(item, dict):
            for key, child in item.items():
                child_path = f"{where}.{key}" if where else str(key)
                if isinstance(key, str) and len(key) > MAX_TEXT:
                    errors.append((where, f"A key has at most {MAX_TEXT} characters."))
                    continue
                pending.append((child, child_path))
        elif isinstance(item, list):
            pending.extend((child, f"{where}.{index}" if where else str(index)) for index, child in enumerate(item))
    return errors


def size_errors(spec: object) -> list[tuple[str, str]]:
    """The whole spec past MAX_SPEC_BYTES of JSON."""
    size = len(json.dumps(spec, default=str, ensure_ascii=False).encode("utf-8", "replace"))
    return [("", f"The body holds {size} bytes once stored; at most {MAX_SPEC_BYTES} are accepted.")] if size > MAX_SPEC_BYTES else []


def limit_errors(spec: dict) -> list[tuple[str, str]]:
    """Every length limit of a spec about to be stored; tags are checked where the spec keeps them (`tags`)."""
    errors = text_field_errors(spec) + tag_errors(spec.get("tags")) + string_errors(spec)
    return errors or size_errors(spec)


def camel_to_snake(text: str) -> str:
    """Azure ML's casing transform for some enums: 'AMLToken' → 'aml_token', 'LowPriority' → 'low_priority'."""
    text = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", text)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text).lower()


def canonical_enum(value: object, allowed: Iterable[str], *, camel: bool = False) -> str | None:
    """`value` in its canonical spelling when it names one of `allowed` as Azure ML's schema reads it, else None.

    Azure ML's StringTransformedEnum lower-cases a value before checking it (camel_to_snake for the fields that ask
    for it): 'URI_FOLDER' is uri_folder, 'PyTorch' is pytorch, 'AMLToken' (camel) is aml_token.
    """
    if not isinstance(value, str):
        return None
    transformed = camel_to_snake(value) if camel else value.lower()
    return transformed if transformed in allowed else None


def enum_choice(value: object, choices: Iterable[str]) -> str | None:
    """The canonical spelling of an Azure ML enum value written in any case, or None when it is not one.

    Azure ML's YAML schema lower-cases enum values before checking them (`Dedicated` is `dedicated`); its REST API
    spells them in PascalCase (`LowPriority` for `low_priority`), so that spelling is taken too.
    """
    choices = tuple(choices)
    return canonical_enum(value, choices) or canonical_enum(value, choices, camel=True) or _comma_separated(value, choices)


def _comma_separated(value: object, choices: tuple[str, ...]) -> str | None:
    """'SystemAssigned,UserAssigned' → system_assigned,user_assigned: each part read on its own."""
    if not isinstance(value, str) or "," not in value:
        return None
    joined = ",".join(camel_to_snake(part.strip()) for part in value.split(","))
    return joined if joined in choices else None


class SpecErrors(Exception):
    """Problems found in a body: [(field path, message)]."""

    def __init__(self, errors: list[tuple[str, str]]):
        super().__init__(errors[0][1] if errors else "invalid body")
        self.errors = errors


def unknown_fields(body: dict, known: Iterable, errors: list, message: str, prefix: str = "", refused: dict | None = None) -> None:
    """Each field of `body` not in `known`, by name: `refused`'s reason for it, else `message` (formatted with {key})."""
    for key in sorted(set(body) - set(known), key=str):
        errors.append((f"{prefix}{key}", (refused or {}).get(key) or message.format(key=key)))


def refused_fields(body: dict, refused: dict, errors: list, prefix: str = "") -> None:
    """Each field of `body` that Dockyard refuses on purpose, with the reason."""
    for key in sorted(set(body) & set(refused), key=str):
        errors.append((f"{prefix}{key}", refused[key]))


def scalar_text(value: object) -> str | None:
    """A YAML scalar as the text the user wrote (None for anything else)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (date, datetime)):  # YAML reads `2026-01-31` as a date: the user meant the text
        return value.isoformat()
    if isinstance(value, (str, int, float)):
        return str(value)
    return None


def string_map(value: object, path: str, errors: list, key_rule: re.Pattern | None = None, key_hint: str = "") -> dict[str, str]:
    """A mapping of names to scalar values, kept as text; `key_hint` says what a name may be."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        errors.append((path, f"{path} must be a mapping of names to values."))
        return {}
    result = {}
    for key, item in value.items():
        if not isinstance(key, str) or (key_rule and not key_rule.match(key)):
            errors.append((f"{path}.{key}", f"'{key}' is not a valid name here{key_hint}."))
            continue
        text = scalar_text(item)
        if text is None:
            errors.append((f"{path}.{key}", "The value must be a string, a number or a boolean."))
            continue
        result[key] = text
    return result


def positive_int(value: object, path: str, errors: list, default: int | None = None, minimum: int = 1,
                 maximum: int | None = None) -> int | None:
    """A whole number of at least `minimum` (and at most `maximum`), or `default` when absent or wrong."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum or (maximum is not None and value > maximum):
        message = f"an integer of at least {minimum}" if maximum is None else f"a whole number from {minimum} to {maximum}"
        errors.append((path, f"{path} must be {message}."))
        return default
    return value
