"""What every compute serializer shares: the common fields (for the schema) and the flat representation.

Bodies are validated by compute/spec (pure), through compute/services.py; these serializers only show records and
describe the bodies in the OpenAPI schema. compute/tests/test_spec_and_serializers.py keeps the two in step.
"""
from datetime import datetime

from rest_framework import serializers
from rest_framework.fields import empty

from controlplane.reconciling import ProvisioningState

from ..capabilities import RECORD_ONLY
from ..choices import SSH_TYPES, ComputeType
from ..models import ComputeInstance, ComputeTarget
from ..spec import KINDS


class StrictSerializer(serializers.Serializer):
    """A nested mapping that refuses fields it does not know (DRF drops them silently), naming each one."""

    # The docstring is the schema's description of these mappings; compute/spec's Form does the refusing.


class ComputeSerializer(serializers.Serializer):
    """Fields every compute type has; subclasses add their own and name their secrets."""

    # The secrets and the fields kept as given are the spec's (set below from compute/spec's KINDS).

    compute_type: str = ""
    secret_fields: tuple[str, ...] = ()
    kept_as_given: tuple[str, ...] = ()

    name = serializers.CharField(max_length=64)
    type = serializers.CharField()
    description = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)
    tags = serializers.JSONField(required=False, default=dict)
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
            cls._declared_fields["type"] = serializers.ChoiceField(choices=[cls.compute_type])
        kind = KINDS.get(cls.compute_type)
        if kind is not None:
            cls.secret_fields, cls.kept_as_given = kind.secret_fields, kind.kept_as_given

    def to_representation(self, instance):
        """Stored properties are the spec's validated output (compute/spec), so they are shown as stored.

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
        **({"status": compute.status} if compute.type == ComputeType.AMLCOMPUTE else {}),
        **({"status": compute.status, "checked_at": compute.checked_at} if compute.type in SSH_TYPES else {}),
        **(instance_as_dict(compute) if compute.type == ComputeType.COMPUTEINSTANCE else {}),
        "secrets_set": compute.secret_fields,
        "created_by": creator_name(compute),
        "created_on": compute.created_at,
        "updated_on": compute.updated_at,
    }


INSTANCE_FIELDS = ("state", "state_reason", "state_changed_at", "last_activity", "last_activity_source", "desired_state",
                   "stop_cause")


def instance_as_dict(compute: ComputeTarget) -> dict:
    """A compute instance's run state (null before it has one); `applications` is the view's (it depends on who asks)."""
    try:
        instance = compute.instance
    except ComputeInstance.DoesNotExist:
        return {**dict.fromkeys(INSTANCE_FIELDS), "applications": None}
    user = instance.assigned_user.username if instance.assigned_user_id else None
    return {**{key: getattr(instance, key) for key in INSTANCE_FIELDS}, "assigned_user": user, "applications": None}


def creator_name(compute: ComputeTarget) -> str | None:
    if hasattr(compute, "created_by_name"):  # API list pages annotate it (compute_list(load_creators=False))
        return compute.created_by_name
    return compute.created_by.username if compute.created_by_id else None


def secret_field(max_length: int = 65536, **kwargs):
    return serializers.CharField(write_only=True, required=False, trim_whitespace=False, max_length=max_length, **kwargs)
