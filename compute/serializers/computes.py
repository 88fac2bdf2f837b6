"""One serializer per compute type: the single validation path for API, studio and CLI."""
import os

from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils import timezone
from rest_framework import serializers

from controlplane import addresses
from controlplane.specs import enum_choice

from .. import validators, vmsizes
from ..choices import ComputeType, Tier
from .base import IGNORED, KEPT_AS_GIVEN, ComputeSerializer, EnumField, StrictSerializer, django_rule, secret_field


class KubernetesComputeSerializer(ComputeSerializer):
    compute_type = ComputeType.KUBERNETES
    secret_fields = ("kubeconfig",)
    refused = {
        "identity": "Dockyard acts on the cluster with the kubeconfig's credentials (or its own service account with "
                    "in_cluster), never with an Azure managed identity; remove identity.",
        "resource_id": "Dockyard cannot look a cluster up in Azure Resource Manager; attach it with its kubeconfig "
                       "instead of its resource ID.",
        "properties": "Give namespace and node_selector as top-level fields; Azure ML's extension properties do not "
                      "apply to a cluster Dockyard attaches itself.",
    }

    kubeconfig = secret_field(help_text="kubeconfig YAML; write-only, stored encrypted")
    context = serializers.CharField(required=False, allow_null=True, default=None, max_length=253)
    namespace = serializers.CharField(required=False, default="default", validators=[django_rule(validators.validate_namespace)])
    node_selector = serializers.DictField(child=serializers.CharField(allow_blank=True, max_length=63), required=False, default=dict)
    in_cluster = serializers.BooleanField(
        required=False, default=False, help_text="use the service account of the pod Dockyard runs in, instead of a kubeconfig"
    )
    server = serializers.CharField(read_only=True)

    @classmethod
    def merge_for_update(cls, stored: dict, patch: dict) -> dict:
        if patch.get("kubeconfig") and "in_cluster" not in patch:
            stored = {**stored, "in_cluster": False}
        if "kubeconfig" in patch and "context" not in patch:
            stored = {key: value for key, value in stored.items() if key != "context"}
        return {**stored, **patch}

    def validate_node_selector(self, value):
        django_rule(validators.validate_node_selector)(value)
        return value

    def validate(self, attrs):
        if attrs.get("in_cluster"):
            return self._in_cluster(attrs)
        kubeconfig = attrs.get("kubeconfig") or (self.context.get("secrets") or {}).get("kubeconfig")
        if not kubeconfig:
            raise serializers.ValidationError({"kubeconfig": ["A kubeconfig is required to attach a Kubernetes cluster."]})
        try:
            summary = validators.kubeconfig_summary(kubeconfig, attrs.get("context"))
            endpoint = addresses.parse_server_url(summary["server"])
            addresses.check_at_save(endpoint.host, endpoint.port)  # the worker checks again before each connection
        except DjangoValidationError as exc:
            raise serializers.ValidationError({"kubeconfig": exc.messages}) from None
        except addresses.AddressRefused as exc:
            raise serializers.ValidationError({"kubeconfig": [f"The cluster server {summary['server']}: {exc}"]}) from None
        attrs["context"] = summary["context"]
        attrs["server"] = summary["server"]
        return attrs

    def _in_cluster(self, attrs):
        if attrs.get("kubeconfig"):
            raise serializers.ValidationError({"in_cluster": ["Give either a kubeconfig or in_cluster: true, not both."]})
        host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        if not host:
            raise serializers.ValidationError({"in_cluster": ["Dockyard is not running inside a Kubernetes pod (KUBERNETES_SERVICE_HOST is not set)."]})
        attrs["server"] = f"https://{host}:{port}" if ":" not in host else f"https://[{host}]:{port}"
        attrs["context"] = None
        attrs["kubeconfig"] = ""
        return attrs


def size_rule(target: str):
    def check(value):
        problem = vmsizes.size_problem(value, target, timezone.now().date())
        if problem:
            raise serializers.ValidationError(problem)
        return value

    return check


class AmlSshSettingsSerializer(StrictSerializer):
    """SSH access to a compute cluster's nodes (Azure ML's ssh_settings): the user shown, password and key write-only."""

    admin_username = serializers.RegexField(
        validators.USERNAME, max_length=64, error_messages={"invalid": "Must be a user name: letters, digits, '_', '.', '-'."}
    )
    admin_password = secret_field(min_length=8, max_length=128)
    ssh_key_value = secret_field(max_length=16384, help_text="an OpenSSH public key, e.g. ssh-ed25519 AAAA... user@host")

    def validate_ssh_key_value(self, value):
        problem = validators.public_key_problem(value)
        if problem:
            raise serializers.ValidationError(problem)
        return value


class AmlComputeSerializer(ComputeSerializer):
    compute_type = ComputeType.AMLCOMPUTE
    kept_as_given = KEPT_AS_GIVEN
    secret_fields = ("ssh_settings.admin_password", "ssh_settings.ssh_key_value")

    size = serializers.CharField(required=False, default="Standard_DS3_v2", validators=[size_rule(vmsizes.CLUSTER)])
    tier = EnumField(choices=Tier.choices, required=False, default=Tier.DEDICATED)
    min_instances = serializers.IntegerField(min_value=0, max_value=10000, required=False, default=0)
    max_instances = serializers.IntegerField(min_value=1, max_value=10000, required=False, default=1)
    idle_time_before_scale_down = serializers.IntegerField(
        min_value=0, max_value=365 * 86400, required=False, default=120, help_text="seconds"
    )
    ssh_settings = AmlSshSettingsSerializer(required=False, help_text="admin_username shown; admin_password and ssh_key_value write-only")

    def validate(self, attrs):
        if attrs["min_instances"] > attrs["max_instances"]:
            raise serializers.ValidationError(
                {"min_instances": [f"min_instances ({attrs['min_instances']}) must not exceed max_instances ({attrs['max_instances']})."]}
            )
        if "ssh_settings" in attrs:
            attrs.update(self._ssh_secrets(dict(attrs["ssh_settings"])))
        return attrs

    def _ssh_secrets(self, ssh: dict) -> dict:
        """Move the password and key out of the stored properties into the encrypted secrets."""
        secrets = {f"ssh_settings.{key}": ssh.pop(key) for key in ("admin_password", "ssh_key_value") if ssh.get(key)}
        stored = self.context.get("secrets") or {}
        if not any(secrets.get(key) or stored.get(key) for key in self.secret_fields):
            raise serializers.ValidationError({"ssh_settings.admin_password": ["Give admin_password or ssh_key_value."]})
        return {"ssh_settings": ssh, **secrets}


class TriggerSerializer(StrictSerializer):
    type = EnumField(choices=["cron", "recurrence"])
    expression = serializers.CharField(required=False, validators=[django_rule(validators.validate_cron)])
    frequency = EnumField(choices=["minute", "hour", "day", "week", "month"], required=False)
    interval = serializers.IntegerField(min_value=1, max_value=1000, required=False, default=1)
    schedule = serializers.DictField(required=False)
    start_time = serializers.CharField(required=False, validators=[django_rule(validators.validate_start_time)])
    time_zone = serializers.CharField(
        required=False, default="UTC", max_length=64, trim_whitespace=False,
        validators=[django_rule(validators.validate_time_zone)],
        help_text="an IANA name (Europe/Berlin) or a Windows one (Pacific Standard Time); stored as written",
    )
    time_zone_iana = serializers.CharField(read_only=True, help_text="the IANA name of time_zone (the same for IANA names)")

    def validate(self, attrs):
        attrs["time_zone_iana"] = validators.iana_time_zone(attrs["time_zone"])
        if attrs["type"] == "cron" and not attrs.get("expression"):
            raise serializers.ValidationError({"expression": ["A cron trigger needs an expression."]})
        if attrs["type"] == "recurrence":
            if not attrs.get("frequency"):
                raise serializers.ValidationError({"frequency": ["A recurrence trigger needs a frequency."]})
            try:
                attrs["schedule"] = recurrence_schedule(attrs.get("schedule") or {})
            except serializers.ValidationError as exc:
                # The rows name fields inside `schedule`; keep that in the target path.
                raise serializers.ValidationError({"schedule": exc.detail}) from None
        return attrs


def _int_list(value, low: int, high: int, name: str) -> list[int]:
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(item, int) and not isinstance(item, bool) and low <= item <= high for item in items):
        raise serializers.ValidationError({name: [f"Must be whole numbers from {low} to {high}."]})
    return items


def recurrence_schedule(schedule: dict) -> dict:
    unknown = set(schedule) - {"hours", "minutes", "week_days"}
    if unknown:
        raise serializers.ValidationError([f"Unknown field(s): {', '.join(sorted(unknown))}."])
    result = {
        "hours": _int_list(schedule.get("hours", 0), 0, 23, "hours"),
        "minutes": _int_list(schedule.get("minutes", 0), 0, 59, "minutes"),
    }
    days = schedule.get("week_days")
    if days is not None:
        days = days if isinstance(days, list) else [days]
        if not days or not all(isinstance(day, str) and day.lower() in validators.WEEK_DAYS for day in days):
            raise serializers.ValidationError({"week_days": ["Must be day names, Monday to Sunday."]})
        result["week_days"] = [day.capitalize() for day in days]
    return result


class StartStopSerializer(StrictSerializer):
    action = EnumField(choices=["start", "stop"])
    state = EnumField(choices=["enabled", "disabled"], required=False, default="enabled")
    trigger = TriggerSerializer()


class SchedulesSerializer(StrictSerializer):
    compute_start_stop = StartStopSerializer(many=True, required=False, default=list)

    def validate_compute_start_stop(self, value):
        if len(value) > 4:
            raise serializers.ValidationError("A compute instance can have at most 4 start/stop schedules.")
        return value


class ComputeInstanceSerializer(ComputeSerializer):
    compute_type = ComputeType.COMPUTEINSTANCE
    kept_as_given = KEPT_AS_GIVEN
    refused = {
        key: f"{what} are not supported: Dockyard has no compute-instance backend yet, and the one planned runs a "
             "container image of your choice instead; remove this field."
        for key, what in (("setup_scripts", "Setup scripts"), ("custom_applications", "Custom applications"),
                          ("enable_os_patching", "OS patching settings"), ("enable_sso", "Single sign-on settings"),
                          ("enable_root_access", "Root-access settings"), ("create_on_behalf_of", "Instances created on "
                                                                                                   "behalf of another user"),
                          ("ssh_settings", "SSH settings of a compute instance"))
    }

    size = serializers.CharField(required=False, default="Standard_DS3_v2", validators=[size_rule(vmsizes.INSTANCE)])
    idle_time_before_shutdown_minutes = serializers.IntegerField(required=False, allow_null=True, default=None)
    idle_time_before_shutdown = serializers.CharField(required=False, allow_null=True, default=None)
    schedules = SchedulesSerializer(required=False, default=dict)
    idle_pair = ("idle_time_before_shutdown_minutes", "idle_time_before_shutdown")

    @classmethod
    def merge_for_update(cls, stored: dict, patch: dict) -> dict:
        if any(key in patch for key in cls.idle_pair):
            stored = {key: value for key, value in stored.items() if key not in cls.idle_pair}
        return {**stored, **patch}

    def validate(self, attrs):
        minutes = attrs.get("idle_time_before_shutdown_minutes")
        iso = attrs.get("idle_time_before_shutdown")
        try:
            iso_minutes = validators.iso_duration_minutes(iso) if iso else None
            if minutes is not None and iso_minutes is not None and minutes != iso_minutes:
                raise DjangoValidationError(f"It says {iso_minutes} minutes but idle_time_before_shutdown_minutes says {minutes}.")
            minutes = minutes if minutes is not None else iso_minutes
            if minutes is not None:
                validators.validate_idle_minutes(minutes)
        except DjangoValidationError as exc:
            target = "idle_time_before_shutdown" if iso else "idle_time_before_shutdown_minutes"
            raise serializers.ValidationError({target: exc.messages}) from None
        attrs["idle_time_before_shutdown_minutes"] = minutes
        attrs["idle_time_before_shutdown"] = f"PT{minutes}M" if minutes is not None else None
        attrs["schedules"] = {"compute_start_stop": (attrs.get("schedules") or {}).get("compute_start_stop", [])}
        return attrs


class SshHostSerializer(ComputeSerializer):
    """An SSH-reachable host: address, port, user, and a password or private key."""

    secret_fields = ("admin_password", "ssh_private_key")
    kept_as_given = ("resource_id",)
    aliases = ("ssh_settings",)
    ssh_settings_fields = ("admin_username", "admin_password", "ssh_port", "ssh_private_key")

    address = serializers.CharField(max_length=253, error_messages={
        "required": "Dockyard reaches the host at this address (a host name or IP); Azure ML's resource_id alone does not locate it."})
    ssh_port = serializers.IntegerField(min_value=1, max_value=65535, required=False, default=22)
    admin_username = serializers.RegexField(
        validators.USERNAME, max_length=64, error_messages={"invalid": "Must be a user name: letters, digits, '_', '.', '-'."}
    )
    admin_password = secret_field()
    ssh_private_key = secret_field(help_text="PEM or OpenSSH private key; write-only, stored encrypted")

    def normalise(self, data: dict) -> dict:
        ssh = data.pop("ssh_settings", None)
        if ssh is not None and not isinstance(ssh, dict):
            raise serializers.ValidationError({"ssh_settings": ["ssh_settings must be a mapping."]})
        ssh = ssh or {}
        if "ssh_private_key_file" in ssh:
            raise serializers.ValidationError(
                {"ssh_settings.ssh_private_key_file": ["Send the key's contents as ssh_private_key (the CLI reads the file for you)."]}
            )
        unknown = sorted(str(key) for key in ssh if key not in self.ssh_settings_fields)
        if unknown:
            known = ", ".join(self.ssh_settings_fields)
            raise serializers.ValidationError({f"ssh_settings.{key}": [f"Unknown field here; the fields are: {known}."] for key in unknown})
        for key in self.ssh_settings_fields:
            if key in ssh:
                data.setdefault(key, ssh[key])
        return data

    def validate_address(self, value):
        host = value.strip("[]").lower() if value.startswith("[") else value.lower()
        try:
            addresses.check_host_syntax(host, f"The address '{value}'")
            addresses.check_at_save(host, 22)  # the runner checks again before it connects
        except addresses.AddressRefused as exc:
            raise serializers.ValidationError(str(exc)) from None
        return value

    def validate_ssh_private_key(self, value):
        if value and "PRIVATE KEY-----" not in value:
            raise serializers.ValidationError("This does not look like a private key (no '-----BEGIN ... PRIVATE KEY-----' block).")
        return value

    def validate(self, attrs):
        stored = self.context.get("secrets") or {}
        if not any(attrs.get(key) or stored.get(key) for key in self.secret_fields):
            raise serializers.ValidationError({"admin_password": ["Give admin_password or ssh_private_key."]})
        return attrs


class VirtualMachineSerializer(SshHostSerializer):
    compute_type = ComputeType.VIRTUALMACHINE


class HDInsightSerializer(SshHostSerializer):
    compute_type = ComputeType.HDINSIGHT


class ResourceIdSerializer(ComputeSerializer):
    resource_id = serializers.CharField(max_length=1024, validators=[django_rule(validators.validate_resource_id)])


class DataLakeAnalyticsSerializer(ResourceIdSerializer):
    compute_type = ComputeType.DATALAKEANALYTICS


class SynapseSparkSerializer(ResourceIdSerializer):
    compute_type = ComputeType.SYNAPSESPARK
    kept_as_given = ("identity",)


class DatabricksSerializer(ComputeSerializer):
    compute_type = ComputeType.DATABRICKS
    secret_fields = ("access_token",)

    resource_id = serializers.CharField(max_length=1024, required=False, validators=[django_rule(validators.validate_resource_id)])
    workspace_url = serializers.URLField(max_length=1024)
    access_token = secret_field()

    def validate(self, attrs):
        if not (attrs.get("access_token") or (self.context.get("secrets") or {}).get("access_token")):
            raise serializers.ValidationError({"access_token": ["A Databricks access token is required."]})
        return attrs


class BatchSerializer(ComputeSerializer):
    compute_type = ComputeType.BATCH
    secret_fields = ("account_key",)

    resource_id = serializers.CharField(max_length=1024, required=False, validators=[django_rule(validators.validate_resource_id)])
    account_name = serializers.RegexField(r"^[a-z0-9]{3,24}$", error_messages={"invalid": "3–24 lowercase letters or digits."})
    account_url = serializers.URLField(max_length=1024, required=False)
    account_key = secret_field()

    def validate(self, attrs):
        if not (attrs.get("account_key") or (self.context.get("secrets") or {}).get("account_key")):
            raise serializers.ValidationError({"account_key": ["The Batch account key is required."]})
        return attrs


SERIALIZERS: dict[str, type[ComputeSerializer]] = {
    cls.compute_type: cls
    for cls in (
        KubernetesComputeSerializer,
        AmlComputeSerializer,
        ComputeInstanceSerializer,
        VirtualMachineSerializer,
        HDInsightSerializer,
        DataLakeAnalyticsSerializer,
        SynapseSparkSerializer,
        DatabricksSerializer,
        BatchSerializer,
    )
}
COMMON_FIELDS = set(ComputeSerializer._declared_fields)


def _accepted(serializer: serializers.Serializer, prefix: str = "") -> set[str]:
    """Dotted paths of the writable fields of a serializer and of its nested mappings."""
    paths = set()
    for name, field in serializer.fields.items():
        if field.read_only:
            continue
        paths.add(prefix + name)
        nested = field.child if isinstance(field, serializers.ListSerializer) else field
        if isinstance(nested, serializers.Serializer):
            paths |= _accepted(nested, f"{prefix}{name}.")
    return paths


# Every field each type's parser takes (dotted paths; `kept_as_given` included), as a constant the audit test walks.
ACCEPTED_FIELDS: dict[str, frozenset[str]] = {
    compute_type: frozenset(_accepted(cls()) | set(cls.kept_as_given) | set(IGNORED) | set(cls.aliases))
    for compute_type, cls in SERIALIZERS.items()
}

_CLUSTER_LATER = "is stored for the compute-cluster backend a later release builds on Karpenter; today it places nothing"
_INSTANCE_LATER = "is stored for the compute-instance backend a later release builds; today nothing starts or stops"
_SSH_LATER = "is stored (secrets encrypted) for the SSH runner a later release adds; today no job runs over SSH"
_PIPELINES = "is stored as a reference for pipeline steps, which Dockyard does not run; nothing uses it"
_AZURE_ONLY = "describes an Azure resource Dockyard has no counterpart for; it is kept so Azure ML files load unchanged"

# Accepted fields that are stored but do nothing today, with the reason (COMMON.md's rule; the README lists them).
# Kubernetes computes have none: every field they take is acted on.
STORED_ONLY: dict[str, str] = {
    **{f"amlcompute.{key}": f"{key} {_CLUSTER_LATER}." for key in (
        "size", "tier", "min_instances", "max_instances", "idle_time_before_scale_down", "ssh_settings",
        "ssh_settings.admin_username", "ssh_settings.admin_password", "ssh_settings.ssh_key_value",
        "ssh_public_access_enabled", "network_settings", "enable_node_public_ip", "identity")},
    "amlcompute.location": f"location {_AZURE_ONLY}.",
    **{f"computeinstance.{key}": f"{key} {_INSTANCE_LATER}." for key in (
        "size", "idle_time_before_shutdown", "idle_time_before_shutdown_minutes", "schedules",
        *(f"schedules.compute_start_stop{rest}" for rest in (
            "", ".action", ".state", ".trigger", ".trigger.type", ".trigger.expression", ".trigger.frequency",
            ".trigger.interval", ".trigger.schedule", ".trigger.start_time", ".trigger.time_zone")),
        "ssh_public_access_enabled", "network_settings", "enable_node_public_ip", "identity")},
    "computeinstance.location": f"location {_AZURE_ONLY}.",
    **{f"{kind}.{key}": f"{key} {_SSH_LATER}." for kind in ("virtualmachine", "hdinsight") for key in (
        "address", "ssh_port", "admin_username", "admin_password", "ssh_private_key", "ssh_settings")},
    **{f"{kind}.resource_id": f"resource_id {_AZURE_ONLY}." for kind in ("virtualmachine", "hdinsight")},
    **{f"{kind}.{key}": f"{key} {_PIPELINES}." for kind, keys in (
        ("databricks", ("resource_id", "workspace_url", "access_token")),
        ("batch", ("resource_id", "account_name", "account_url", "account_key")),
        ("synapsespark", ("resource_id", "identity")), ("datalakeanalytics", ("resource_id",))) for key in keys},
}


class LocalComputeSerializer(ComputeSerializer):
    """The built-in `local` target as GET shows it (for the schema): no record, so no timestamps."""

    compute_type = "local"
    created_on = serializers.DateTimeField(read_only=True, allow_null=True)
    updated_on = serializers.DateTimeField(read_only=True, allow_null=True)


def serializer_for(compute_type) -> type[ComputeSerializer]:
    canonical = enum_choice(compute_type, SERIALIZERS)  # `type: AmlCompute` is amlcompute, as Azure ML reads it
    if canonical is None:
        choices = ", ".join(SERIALIZERS)
        raise serializers.ValidationError({"type": [f"Unknown compute type '{compute_type}'; one of: {choices}."]})
    return SERIALIZERS[canonical]
