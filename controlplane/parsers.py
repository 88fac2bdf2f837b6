"""Request parsers beyond DRF's own, and the one way Dockyard reads the YAML and JSON that users send.

Parsers have limits (DESIGN.md §6): a 439-byte YAML alias bomb once cost 72 s and 710 MB of a web worker, so YAML
anchors and aliases are refused outright; bodies, nesting and strings are bounded; NUL and lone surrogates are refused
with the field that holds them (PostgreSQL refuses them later, as a 500). Every limit answers in the error shape.
"""
import json

import yaml
from django.conf import settings
from rest_framework import exceptions, parsers

# The libyaml parser when PyYAML was built with it: events are scanned in C before anything is built.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
ALIASES_REFUSED = "YAML anchors and aliases are not accepted"


class YAMLRefused(yaml.MarkedYAMLError):
    """A YAML text Dockyard will not build: anchors/aliases, or nesting past the limit (a YAMLError, with its line)."""


class UnsafeValue(ValueError):
    """A parsed body holds something Dockyard cannot store or will not read: `path` names the field."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


def max_depth() -> int:
    return getattr(settings, "DOCKYARD_MAX_DEPTH", 32)


def max_string_chars() -> int:
    return getattr(settings, "DOCKYARD_MAX_STRING_CHARS", 256 * 1024)


def _scan_events(text: str) -> None:
    """Refuse anchors, aliases and deep nesting from the event stream, before a single node is built."""
    depth, limit = 0, max_depth()
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise YAMLRefused(problem=ALIASES_REFUSED, problem_mark=event.start_mark)
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > limit:
                raise YAMLRefused(problem=f"YAML nested deeper than {limit} levels is not accepted", problem_mark=event.start_mark)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _parsed(text: str, load):
    """`load(text, Loader)` after the event scan; a syntax error is told in the pure-Python parser's words.

    libyaml places some errors elsewhere than PyYAML (an unclosed `[` at the end of the text, not where it opened),
    and people read these messages: invalid text is parsed again, in Python, for its error only.
    """
    try:
        _scan_events(text)
        return load(text, Loader=_LOADER)
    except YAMLRefused:
        raise
    except yaml.YAMLError as error:
        if _LOADER is yaml.SafeLoader:
            raise
        try:
            load(text, Loader=yaml.SafeLoader)
        except yaml.YAMLError as explained:
            raise explained from None
        except RecursionError:  # the Python parser went on, deeper than libyaml did: libyaml's words then
            pass
        raise error from None


def load_yaml_documents(text: str) -> list:
    """Every document of a YAML text, under Dockyard's limits; raises yaml.YAMLError or UnsafeValue."""
    documents = _parsed(text, lambda text, Loader: list(yaml.load_all(text, Loader=Loader)))
    for document in documents:
        check_values(document)
    return documents


def load_yaml(text: str) -> object:
    """One YAML document (None when empty) under Dockyard's limits; raises yaml.YAMLError or UnsafeValue."""
    document = _parsed(text, yaml.load)
    check_values(document)
    return document


def _bad_text(text: str) -> str | None:
    if "\x00" in text:
        return "NUL characters are not accepted."
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "Lone surrogate characters (such as \\ud800) are not accepted."
    if len(text) > max_string_chars():
        return f"Text longer than {max_string_chars()} characters is not accepted."
    return None


def check_values(data: object) -> None:
    """Refuse NUL, lone surrogates, over-long strings and nesting past the limit anywhere in `data` (keys too)."""
    limit = max_depth()
    pending = [(data, "", 0)]
    while pending:  # iterative: the body may be as deep as the JSON decoder allows
        value, path, depth = pending.pop()
        if isinstance(value, str):
            problem = _bad_text(value)
            if problem:
                raise UnsafeValue(path, problem)
            continue
        if isinstance(value, dict | list) and depth >= limit:
            raise UnsafeValue(path, f"Bodies nested deeper than {limit} levels are not accepted.")
        if isinstance(value, dict):
            for key, item in value.items():
                where = f"{path}.{key}" if path else str(key)
                problem = _bad_text(key) if isinstance(key, str) else None
                if problem:
                    raise UnsafeValue(_printable(where), f"A key: {problem}")
                pending.append((item, where, depth + 1))
        elif isinstance(value, list):
            pending.extend((item, f"{path}.{index}" if path else str(index), depth + 1) for index, item in enumerate(value))


def _printable(path: str) -> str:
    """A field path fit to send back: the bad characters of a bad key shown escaped."""
    return path.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")


class PayloadTooLarge(exceptions.APIException):
    status_code = 413
    default_code = "PayloadTooLarge"

    def __init__(self):
        super().__init__(f"The request body is larger than {max_body_bytes()} bytes.")


def max_body_bytes() -> int:
    return getattr(settings, "DOCKYARD_MAX_BODY_BYTES", 2 * 1024 * 1024)


def read_body(stream) -> bytes:
    """The body, refused past the limit even when no Content-Length announced it."""
    if stream is None:
        return b""
    body = stream.read(max_body_bytes() + 1)
    if len(body) > max_body_bytes():
        raise PayloadTooLarge()
    return body


def unsafe_value_error(exc: UnsafeValue) -> exceptions.APIException:
    """The 400 for an UnsafeValue, targeting its field."""
    from controlplane.api import BadRequest  # api imports this module's PayloadTooLarge for its handler

    return BadRequest(str(exc), code="InvalidBody", target=exc.path)


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser under Dockyard's limits (size, depth, NUL and lone surrogates)."""

    def parse(self, stream, media_type=None, parser_context=None):
        body = read_body(stream)
        try:
            data = json.loads(body.decode("utf-8"), parse_constant=_refuse_constant)
        except RecursionError:
            raise exceptions.ParseError(f"The JSON body is nested deeper than {max_depth()} levels.") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise exceptions.ParseError(f"The body is not valid JSON: {exc}") from None
        _checked(data)
        return data


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON value")


def _checked(data: object) -> object:
    try:
        check_values(data)
    except UnsafeValue as exc:
        raise unsafe_value_error(exc) from None
    return data


class YAMLParser(parsers.BaseParser):
    """Accept YAML bodies: users write computes, jobs and instance types as YAML files."""

    media_type = "application/yaml"

    def parse(self, stream, media_type=None, parser_context=None):
        body = read_body(stream)
        try:
            data = load_yaml(body.decode("utf-8"))
        except YAMLRefused as exc:
            raise exceptions.ParseError(f"{exc.problem} (line {exc.problem_mark.line + 1}).") from None
        except UnsafeValue as exc:
            raise unsafe_value_error(exc) from None
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise exceptions.ParseError(f"The body is not valid YAML: {exc}") from exc
        if not isinstance(data, dict):
            raise exceptions.ParseError("The YAML body must be a mapping of fields.")
        return data


class FormParser(parsers.FormParser):
    """Form bodies under the same character rules (the sizes are Django's, set from DOCKYARD_MAX_BODY_BYTES)."""

    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        _checked({key: data.getlist(key) for key in data})
        return data


class MultiPartParser(parsers.MultiPartParser):
    """Multipart bodies: the fields under the same character rules (files are not text)."""

    def parse(self, stream, media_type=None, parser_context=None):
        result = super().parse(stream, media_type, parser_context)
        _checked({key: result.data.getlist(key) for key in result.data})
        return result
