"""What every compute serializer shares: common fields, unknown-field refusal, flat representation."""
from datetime import datetime

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers
from rest_framework.fields import empty

from controlplane.reconciling import ProvisioningState
from controlplane.specs import enum_choice
from workspaces.serializers import validate_tags

from ..capabilities import RECORD_ONLY
from ..models import ComputeTarget, validate_compute_name

# Fields of Azure ML's YAML that Dockyard keeps as given without acting on them, so files load unchanged.
KEPT_AS_GIVEN = ("location", "identity", "network_settings", "enable_node_public_ip", "ssh_public_access_enabled")
IGNORED = ("$schema",)
# Azure ML's identity types; its schema reads them in snake case from any spelling (SystemAssigned, system_assigned).
IDENTITY_TYPES = ("system_assigned", "user_assigned", "none", "system_assigned,user_assigned")


def canonical_identity(identity: object) -> dict:
    """An identity kept as given, its `type` in Azure ML's canonical spelling; 400 at identity.type when unknown."""
    if not isinstance(identity, dict):
        raise serializers.ValidationError({"identity": ["identity must be a mapping with a type."]})
    if "type" not in identity:
        return identity
    canonical = enum_choice(identity["type"], IDENTITY_TYPES)
    if canonical is None:
        raise serializers.ValidationError({"identity.type": [f"One of: {', '.join(IDENTITY_TYPES)} (any case)."]})
    return {**identity, "type": canonical}


def django_rule(check):
    """Wrap a validator raising Django's ValidationError for use as a DRF field validator."""

    def run(value):
        try:
            check(value)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from None
        return value

    return run


class EnumField(serializers.ChoiceField):
    """An Azure ML enum: any case is taken, as Azure ML's schema takes it, and the canonical value is stored."""

    def to_internal_value(self, data):
        canonical = enum_choice(data, self.choices)
        if canonical is None:
            self.fail("invalid_choice", input=data)
        return canonical


class StrictSerializer(serializers.Serializer):
    """A nested mapping that refuses fields it does not know (DRF drops them silently), naming each one."""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(str(key) for key in data if key not in self.fields)
            if unknown:
                known = ", ".join(name for name, field in self.fields.items() if not field.read_only)
                raise serializers.ValidationError({key: [f"Unknown field here; the fields are: {known}."] for key in unknown})
        return super().to_internal_value(data)


class ComputeSerializer(serializers.Serializer):
    """Fields every compute type has; subclasses add their own and name their secrets."""

    compute_type: str = ""
    secret_fields: tuple[str, ...] = ()
    kept_as_given: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()  # other spellings `normalise` rewrites into the fields (Azure ML's nested forms)
    refused: dict[str, str] = {}  # Azure ML fields of this type that Dockyard refuses: {field: why, and what instead}

    name = serializers.CharField(max_length=64, validators=[django_rule(validate_compute_name)])
    type = serializers.CharField()
    description = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)
    tags = serializers.JSONField(required=False, default=dict, validators=[validate_tags])
    provisioning_state = serializers.ChoiceField(choices=ProvisioningState.choices, read_only=True)
    provisioning_errors = serializers.ListField(child=serializers.DictField(), read_only=True)
    backend = serializers.CharField(
        read_only=True, allow_null=True, help_text="null when Dockyard runs work on this type; else why this record runs nothing"
    )
    secrets_set = serializers.ListField(child=serializers.CharField(), read_only=True, help_text="secret fields that hold a value")
    created_by = serializers.CharField(read_only=True, allow_null=True)
    created_on = serializers.DateTimeField(read_only=True)
    updated_on = serializers.DateTimeField(read_only=True)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.compute_type:
            cls._declared_fields["type"] = EnumField(choices=[cls.compute_type])

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError({"non_field_errors": ["The body must be a mapping of fields."]})
        refused = {key: [why] for key, why in self.refused.items() if key in data}
        if refused:
            raise serializers.ValidationError(refused)
        data = self.normalise(dict(data))
        known = set(self.fields) | set(self.kept_as_given) | set(IGNORED)
        unknown = sorted(key for key in data if key not in known)
        if unknown:
            raise serializers.ValidationError({key: [f"Unknown field for type '{self.compute_type}'."] for key in unknown})
        if "identity" in data and "identity" in self.kept_as_given:
            data["identity"] = canonical_identity(data["identity"])
        validated = super().to_internal_value(data)
        validated.update({key: data[key] for key in self.kept_as_given if key in data})
        return validated

    def normalise(self, data: dict) -> dict:
        """Rewrite accepted alternative spellings (Azure ML's nested forms) into our fields."""
        return data

    @classmethod
    def merge_for_update(cls, stored: dict, patch: dict) -> dict:
        """The full body a PATCH amounts to: stored fields overlaid with the patch."""
        return {**stored, **patch}

    def to_representation(self, instance):
        """Stored properties are this serializer's own validated output, so they are shown as stored.

        Skipping DRF's field-by-field pass halves the cost of a list page; missing fields get their defaults
        (records written before a field existed) and write-only secrets never appear.
        """
        data = compute_as_dict(instance) if isinstance(instance, ComputeTarget) else instance
        shown = self._shown_fields()
        output = {key: _plain(data[key]) for key in shown if key in data}
        output.update({key: value() if callable(value) else value for key, value in shown.items() if key not in data and value is not empty})
        output.update({key: data[key] for key in self.kept_as_given if key in data})
        return output

    @classmethod
    def _shown_fields(cls) -> dict:
        """{name: default} of the readable fields, in declaration order (computed once per class)."""
        if "_shown" not in cls.__dict__:
            fields = cls._declared_fields.items()
            cls._shown = {name: field.default for name, field in fields if not field.write_only}
        return cls._shown


def _plain(value):
    """Datetimes as DRF writes them (ISO 8601, UTC as Z); everything else is already JSON."""
    if isinstance(value, datetime):
        text = value.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    return value


def compute_as_dict(compute: ComputeTarget) -> dict:
    return {
        **compute.properties,
        "name": compute.name,
        "type": compute.type,
        "description": compute.description,
        "tags": compute.tags,
        "provisioning_state": compute.provisioning_state,
        "provisioning_errors": compute.provisioning_errors,
        "backend": RECORD_ONLY.get(compute.type),
        "secrets_set": compute.secret_fields,
        "created_by": creator_name(compute),
        "created_on": compute.created_at,
        "updated_on": compute.updated_at,
    }


def creator_name(compute: ComputeTarget) -> str | None:
    if hasattr(compute, "created_by_name"):  # API list pages annotate it (compute_list(load_creators=False))
        return compute.created_by_name
    return compute.created_by.username if compute.created_by_id else None


def secret_field(max_length: int = 65536, **kwargs):
    return serializers.CharField(write_only=True, required=False, trim_whitespace=False, max_length=max_length, **kwargs)
