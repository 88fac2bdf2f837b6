"""Mappings of declared fields (a body, a nested section) and lists of them, pure.

A form reads its fields in the order they are declared and reports every field's problems at once; `check_<field>`
methods run on a field once it reads, and `validate` on the whole once every field does (rules across fields).
"""
from .fields import MISSING, Checks, Field, Invalid, Skip, joined


class Form(Field):
    """A mapping of declared fields; `shown` names the fields the output adds (taken and ignored when sent)."""

    fields: dict[str, Field] = {}
    shown: tuple[str, ...] = ()
    strict = True  # a nested section names each field it does not know; a body has its own message (ComputeKind)

    def convert(self, data, checks: Checks):
        if not isinstance(data, dict):
            raise Invalid.at("", f"Invalid data. Expected a dictionary, but got {type(data).__name__}.")
        if self.strict:
            self.refuse_unknown(data)
        return self.validate(self.read(data, checks), checks)

    def refuse_unknown(self, data: dict) -> None:
        unknown = sorted(str(key) for key in data if key not in self.fields and key not in self.shown)
        if unknown:
            known = ", ".join(self.fields)
            raise Invalid([(key, f"Unknown field here; the fields are: {known}.") for key in unknown])

    def read(self, data: dict, checks: Checks) -> dict:
        """Every declared field, read; the problems of all of them at once."""
        values, rows = {}, []
        for name, field in self.fields.items():
            try:
                value = field.run(data.get(name, MISSING), checks)
                after = getattr(self, f"check_{name}", None)
                values[name] = after(value, checks) if after else value
            except Invalid as exc:
                rows.extend((joined(name, path), message) for path, message in exc.rows)
            except Skip:
                continue
        if rows:
            raise Invalid(rows)
        return values

    def validate(self, values: dict, checks: Checks) -> dict:
        """Rules across fields, once each field reads."""
        return values

    def accepted(self, prefix: str = "") -> set[str]:
        """Dotted paths of the fields this form takes, nested sections included."""
        paths = set()
        for name, field in self.fields.items():
            paths.add(prefix + name)
            nested = field.form if isinstance(field, Many) else field
            if isinstance(nested, Form):
                paths |= nested.accepted(f"{prefix}{name}.")
        return paths


class Many(Field):
    """A list of `form`s; each item's problems under its index."""

    def __init__(self, form: Form, **kwargs):
        super().__init__(**kwargs)
        self.form = form

    def convert(self, data, checks: Checks):
        if not isinstance(data, list):
            raise Invalid.at("", f'Expected a list of items but got type "{type(data).__name__}".')
        items, rows = [], []
        for index, item in enumerate(data):
            try:
                items.append(self.form.run(item, checks))
            except Invalid as exc:
                rows.extend((joined(str(index), path), message) for path, message in exc.rows)
        if rows:
            raise Invalid(rows)
        return items


def problem(path: str, message: str) -> Invalid:
    """One problem found across fields, at `path` ("" for the mapping itself)."""
    return Invalid.at(path, message)
