"""The field kinds a compute body is made of, pure: each reads a value, converts it and says what is wrong.

The API answered compute bodies through DRF serializers before this parser existed; the conversions (a number given
as text is a number, text is trimmed) and the sentences below are the ones it gave, so answers stay the same.
A problem is a row (path inside the field, message): "" is the field itself, "a.b" a field inside it.
"""
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date

from controlplane.specs import enum_choice

MISSING = object()  # the body does not name the field

REQUIRED = "This field is required."
NOT_NULL = "This field may not be null."
NOT_BLANK = "This field may not be blank."



class Refused(Exception):
    """A check outside this package refused a value: its messages, as the user reads them."""

    def __init__(self, *messages: str):
        super().__init__(messages[0] if messages else "refused")
        self.messages = list(messages)


@dataclass(frozen=True)
class Checks:
    """What a body is checked against beyond this package: the network, the clock, grammars kept by libraries.

    Each check returns None (or the value it reads) when the value passes, else raises Refused; `secrets` are the
    record's stored secrets when a change is checked (a field left out keeps its secret).
    """

    today: Callable[[], date]
    url: Callable[[str], None]  # a URL as the web checks it
    cron: Callable[[str], None]  # a cron expression of five fields
    time_zone: Callable[[str], str]  # an IANA or Windows time-zone name -> its IANA name
    ssh_host: Callable[[str], None]  # a host Dockyard may connect to, checked when saved
    cluster: Callable[[str, str | None], dict]  # kubeconfig, context -> {context, server, namespace}, the server checked
    in_cluster_server: Callable[[], tuple[str | None, str]]  # the host and port of the API server Dockyard runs under
    secrets: dict = field(default_factory=dict)
    # The computes of the body's workspace, {name: type}: a compute cluster names the kubernetes compute it lives on.
    # Asked only by the bodies that need it (services hand in a lazy lookup per workspace).
    workspace_computes: Callable[[], dict[str, str]] = dict
    # Why this workspace may not run on `local` (None when it may): a compute instance may live there instead.
    local_compute: Callable[[], str | None] = lambda: "Local compute is not available here."
    # The instance types of a kubernetes compute of the workspace, by its name; None when they are not known yet (the
    # attachment has not passed its checks): then reconcile is the one to say an instance type is missing.
    instance_types: Callable[[str], list[str] | None] = lambda _host: None


Rule = Callable[[object, Checks], str | None]  # a value -> why it is wrong, or None


def rule(check: Callable[[object], str | None]) -> Rule:
    """A rule of the value alone."""
    return lambda value, _checks: check(value)


def world_rule(name: str) -> Rule:
    """A rule the caller's Checks keep (`name`): its refusal is the field's problem."""

    def run(value, checks: Checks) -> str | None:
        try:
            getattr(checks, name)(value)
        except Refused as exc:
            return exc.messages[0]
        return None

    return run


class Invalid(Exception):
    """What is wrong with one field: rows of (path inside the field, message)."""

    def __init__(self, rows: list[tuple[str, str]]):
        super().__init__(rows[0][1] if rows else "invalid")
        self.rows = rows

    @classmethod
    def at(cls, path: str, *messages: str) -> "Invalid":
        return cls([(path, message) for message in messages])


class Skip(Exception):
    """An optional field without a default, absent: it is left out of the result."""


def joined(prefix: str, path: str) -> str:
    return f"{prefix}.{path}" if prefix and path else prefix or path


class Field:
    """Required unless it has a default; null refused unless allowed; then convert, then every rule."""

    invalid = ""  # the message for a value of the wrong kind

    def __init__(self, *, required: bool | None = None, default=MISSING, allow_null: bool = False,
                 rules: tuple[Rule, ...] = (), write_only: bool = False, messages: dict | None = None):
        self.messages = {"required": REQUIRED, "null": NOT_NULL, "blank": NOT_BLANK, "invalid": self.invalid,
                         **(messages or {})}
        self.required = default is MISSING if required is None else required
        self.default = default
        self.allow_null = allow_null
        self.rules = tuple(rules)
        self.write_only = write_only

    def run(self, data, checks: Checks):
        if data is MISSING:
            if self.required:
                raise Invalid.at("", self.messages["required"])
            if self.default is MISSING:
                raise Skip
            return self.default() if callable(self.default) else self.default
        if data is None:
            if not self.allow_null:
                raise Invalid.at("", self.messages["null"])
            return None
        value = self.convert(data, checks)
        problems = [problem for check in self.all_rules() if (problem := check(value, checks))]
        if problems:
            raise Invalid.at("", *problems)
        return value

    def convert(self, data, checks: Checks):
        return data

    def all_rules(self) -> tuple[Rule, ...]:
        return self.rules


def _no_nul(value: str) -> str | None:
    return "Null characters are not allowed." if "\x00" in value else None


def _no_surrogate(value: str) -> str | None:
    surrogate = next((ch for ch in value if 0xD800 <= ord(ch) <= 0xDFFF), None)
    return None if surrogate is None else f"Surrogate characters are not allowed: U+{ord(surrogate):X}."


class Text(Field):
    """Text; a number is taken as its text; trimmed unless `trim` is off; blank refused unless allowed."""

    invalid = "Not a valid string."

    def __init__(self, *, max_length: int | None = None, min_length: int | None = None, allow_blank: bool = False,
                 trim: bool = True, **kwargs):
        super().__init__(**kwargs)
        self.max_length, self.min_length = max_length, min_length
        self.allow_blank, self.trim = allow_blank, trim

    def run(self, data, checks: Checks):
        if data is not MISSING and (data == "" or (self.trim and str(data).strip() == "")):
            if not self.allow_blank:
                raise Invalid.at("", self.messages["blank"])
            return ""
        return super().run(data, checks)

    def convert(self, data, checks: Checks):
        if isinstance(data, bool) or not isinstance(data, (str, int, float)):
            raise Invalid.at("", self.messages["invalid"])
        return str(data).strip() if self.trim else str(data)

    def all_rules(self) -> tuple[Rule, ...]:
        rules = list(self.rules)
        if self.max_length is not None:
            rules.append(lambda value, _checks: f"Ensure this field has no more than {self.max_length} characters."
                         if len(value) > self.max_length else None)
        if self.min_length is not None:
            rules.append(lambda value, _checks: f"Ensure this field has at least {self.min_length} characters."
                         if len(value) < self.min_length else None)
        return (*rules, rule(_no_nul), rule(_no_surrogate), *self.last_rules())

    def last_rules(self) -> tuple[Rule, ...]:
        return ()


class Pattern(Text):
    """Text matching a pattern (searched: the pattern anchors itself); the `invalid` message says what it must be."""

    invalid = "This value does not match the required pattern."

    def __init__(self, pattern: str | re.Pattern, **kwargs):
        super().__init__(**kwargs)
        self.pattern = re.compile(pattern)

    def last_rules(self) -> tuple[Rule, ...]:
        return (lambda value, _checks: None if self.pattern.search(value) else self.messages["invalid"],)


class Url(Text):
    """A URL, as the caller's Checks.url reads it (the web's URL grammar is kept outside the pure modules)."""

    invalid = "Enter a valid URL."

    def last_rules(self) -> tuple[Rule, ...]:
        return (lambda value, checks: self.messages["invalid"] if world_rule("url")(value, checks) else None,)


class Integer(Field):
    """A whole number; text and floats that are whole numbers are taken."""

    invalid = "A valid integer is required."

    DECIMAL = re.compile(r"\.0*\s*$")  # '1.0' is 1, '1.2' is not a whole number

    def __init__(self, *, minimum: int | None = None, maximum: int | None = None, **kwargs):
        super().__init__(**kwargs)
        self.minimum, self.maximum = minimum, maximum

    def convert(self, data, checks: Checks):
        if isinstance(data, str) and len(data) > 1000:
            raise Invalid.at("", "String value too large.")
        try:
            return int(self.DECIMAL.sub("", str(data)))
        except (ValueError, TypeError):
            raise Invalid.at("", self.messages["invalid"]) from None

    def all_rules(self) -> tuple[Rule, ...]:
        rules = list(self.rules)
        if self.maximum is not None:
            rules.append(lambda value, _checks: f"Ensure this value is less than or equal to {self.maximum}."
                         if value > self.maximum else None)
        if self.minimum is not None:
            rules.append(lambda value, _checks: f"Ensure this value is greater than or equal to {self.minimum}."
                         if value < self.minimum else None)
        return tuple(rules)


class Boolean(Field):
    """true/false, yes/no, on/off, 1/0 in any case."""

    invalid = "Must be a valid boolean."

    TRUE = {"t", "y", "yes", "true", "on", "1", 1}  # 1 is also True and 1.0
    FALSE = {"f", "n", "no", "false", "off", "0", 0}  # 0 is also False and 0.0

    def convert(self, data, checks: Checks):
        value = data.lower() if isinstance(data, str) else data
        try:
            if value in self.TRUE:
                return True
            if value in self.FALSE:
                return False
        except TypeError:  # a mapping or a list: not hashable
            pass
        raise Invalid.at("", self.messages["invalid"])


class Choice(Field):
    """An Azure ML enum: any case is taken, as Azure ML's schema takes it, and the canonical value is kept."""

    def __init__(self, choices, **kwargs):
        super().__init__(**kwargs)
        self.choices = tuple(choices)

    def convert(self, data, checks: Checks):
        canonical = enum_choice(data, self.choices)
        if canonical is None:
            raise Invalid.at("", f'"{data}" is not a valid choice.')
        return canonical


class Json(Field):
    """Any value JSON can hold."""

    invalid = "Value must be valid JSON."

    def convert(self, data, checks: Checks):
        try:
            json.dumps(data, allow_nan=False)  # NaN and infinities are no JSON
        except (TypeError, ValueError):
            raise Invalid.at("", self.messages["invalid"]) from None
        return data


class Mapping(Field):
    """A mapping of names to values, each value read by `child` (any value when None); names become text."""

    def __init__(self, child: Field | None = None, **kwargs):
        super().__init__(**kwargs)
        self.child = child

    def convert(self, data, checks: Checks):
        if not isinstance(data, dict):
            raise Invalid.at("", f'Expected a dictionary of items but got type "{type(data).__name__}".')
        result, rows = {}, []
        for key, value in data.items():
            key = str(key)
            try:
                result[key] = self.child.run(value, checks) if self.child else value
            except Invalid as exc:
                rows.extend((joined(key, path), message) for path, message in exc.rows)
        if rows:
            raise Invalid(rows)
        return result
