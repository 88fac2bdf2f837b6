"""compute/spec validates the bodies and compute/serializers describes them in the OpenAPI schema: the two agree,
field by field, on what a body holds and on each field's bounds."""
import pytest
from rest_framework import serializers

from compute.choices import ComputeType
from compute.serializers import SERIALIZERS
from compute.spec import IGNORED, KINDS, fields, forms

DRF_KINDS = {  # the spec's field kind -> the DRF field the schema shows for it
    fields.Pattern: serializers.RegexField, fields.Url: serializers.URLField, fields.Text: serializers.CharField,
    fields.Integer: serializers.IntegerField, fields.Boolean: serializers.BooleanField,
    fields.Choice: serializers.ChoiceField, fields.Json: serializers.JSONField, fields.Mapping: serializers.DictField,
    forms.Many: serializers.ListSerializer, forms.Form: serializers.Serializer,
}


def spec_fields(form, prefix: str = "") -> dict:
    """{dotted path: spec field} of a form and its nested forms."""
    rows = {}
    for name, field in form.fields.items():
        rows[prefix + name] = field
        nested = field.form if isinstance(field, forms.Many) else field
        if isinstance(nested, forms.Form):
            rows |= spec_fields(nested, f"{prefix}{name}.")
    return rows


def schema_fields(serializer, prefix: str = "") -> dict:
    """{dotted path: DRF field} of the writable fields of a serializer and its nested ones."""
    rows = {}
    for name, field in serializer.fields.items():
        if field.read_only:
            continue
        rows[prefix + name] = field
        nested = field.child if isinstance(field, serializers.ListSerializer) else field
        if isinstance(nested, serializers.Serializer):
            rows |= schema_fields(nested, f"{prefix}{name}.")
    return rows


def test_every_type_has_a_parser_and_a_serializer():
    assert list(KINDS) == list(SERIALIZERS)
    assert set(KINDS) == set(ComputeType.values)


@pytest.mark.parametrize("compute_type", list(KINDS))
def test_the_schema_shows_the_fields_the_parser_takes(compute_type):
    kind = KINDS[compute_type]
    assert set(schema_fields(SERIALIZERS[compute_type]())) == kind.accepted_fields() - set(kind.kept_as_given) - set(IGNORED) - set(kind.aliases)
    assert SERIALIZERS[compute_type].secret_fields == kind.secret_fields
    assert SERIALIZERS[compute_type].kept_as_given == kind.kept_as_given


def bounds(field) -> dict:
    """What the schema says of a field, read from either side."""
    if isinstance(field, fields.Field):
        default = field.default if field.default is not fields.MISSING and not callable(field.default) else None
        return {"required": field.required, "null": field.allow_null, "default": default, "write_only": field.write_only,
                "max_length": getattr(field, "max_length", None), "min_length": getattr(field, "min_length", None),
                "min": getattr(field, "minimum", None), "max": getattr(field, "maximum", None),
                "choices": set(getattr(field, "choices", ())), "pattern": getattr(getattr(field, "pattern", None), "pattern", None)}
    default = field.default if field.default is not serializers.empty and not callable(field.default) else None
    return {"required": field.required, "null": field.allow_null, "default": default, "write_only": field.write_only,
            "max_length": getattr(field, "max_length", None), "min_length": getattr(field, "min_length", None),
            "min": getattr(field, "min_value", None), "max": getattr(field, "max_value", None),
            "choices": set(getattr(field, "choices", {})),
            "pattern": next((v.regex.pattern for v in field.validators if hasattr(v, "regex")), None)
            if isinstance(field, serializers.RegexField) else None}


@pytest.mark.parametrize("compute_type", list(KINDS))
def test_each_field_has_the_same_kind_and_bounds_on_both_sides(compute_type):
    shown = schema_fields(SERIALIZERS[compute_type]())
    for path, field in spec_fields(KINDS[compute_type]).items():
        drf = shown[path]
        expected = next(drf_kind for spec_kind, drf_kind in DRF_KINDS.items() if isinstance(field, spec_kind))
        assert isinstance(drf, expected), path
        assert bounds(field) == bounds(drf), path
