"""Length limits every spec parser applies, as (field path, message) rows (pure: no Django).

Free text is stored as given and shown in lists, so each field has a bound: without one, a 2 MB description made every
list that shows it that much slower. The request parsers bound bodies and single strings; these bound what is kept.
"""
import json
import re
from collections.abc import Iterable

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
