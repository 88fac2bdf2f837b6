"""One serializer per compute type: how a record is shown and how its body reads in the OpenAPI schema.

Bodies are validated by compute/spec (the one validation path for API, studio and CLI); the fields declared here
describe the same bodies for the schema (compute/tests/test_spec_and_serializers.py keeps the two in step).
"""
from rest_framework import serializers

from ..choices import ComputeType, DesiredState, InstanceState, StopCause, Tier
from ..hostkeys import FINGERPRINT, FINGERPRINT_MESSAGE
from ..spec.rules import USERNAME
from .base import ComputeSerializer, StrictSerializer, secret_field
from .pools import ClusterApiSerializer, NodeClassRefSerializer, PoolStatusSerializer

USERNAME_FIELD = {"regex": USERNAME, "max_length": 64,
                  "error_messages": {"invalid": "Must be a user name: letters, digits, '_', '.', '-'."}}


class KubernetesComputeSerializer(ComputeSerializer):
    compute_type = ComputeType.KUBERNETES

    kubeconfig = secret_field(help_text="kubeconfig YAML; write-only, stored encrypted")
    context = serializers.CharField(required=False, allow_null=True, default=None, max_length=253)
    namespace = serializers.CharField(required=False, default="default")
    node_selector = serializers.DictField(child=serializers.CharField(allow_blank=True, max_length=63), required=False, default=dict)
    in_cluster = serializers.BooleanField(
        required=False, default=False, help_text="use the service account of the pod Dockyard runs in, instead of a kubeconfig"
    )
    karpenter_node_class = NodeClassRefSerializer(
        required=False, help_text="the nodeClassRef of the NodePools of compute clusters on this cluster (default: "
                                  "karpenter.azure.com AKSNodeClass default)")
    cluster_api = ClusterApiSerializer(
        required=False, help_text="what a Cluster API MachineDeployment needs, where the cluster has Cluster API and "
                                  "cluster-autoscaler instead of Karpenter")
    server = serializers.CharField(read_only=True)


class AmlComputeSerializer(ComputeSerializer):
    compute_type = ComputeType.AMLCOMPUTE

    size = serializers.CharField(required=False, default="Standard_DS3_v2")
    tier = serializers.ChoiceField(choices=Tier.choices, required=False, default=Tier.DEDICATED)
    min_instances = serializers.IntegerField(min_value=0, max_value=10000, required=False, default=0)
    max_instances = serializers.IntegerField(min_value=1, max_value=10000, required=False, default=1)
    idle_time_before_scale_down = serializers.IntegerField(
        min_value=0, max_value=365 * 86400, required=False, default=120, help_text="seconds"
    )
    kubernetes_compute = serializers.CharField(
        required=False, max_length=64,
        help_text="the kubernetes compute of this workspace the cluster lives on (default: the workspace's only one)")
    status = PoolStatusSerializer(read_only=True)


class TriggerSerializer(StrictSerializer):
    type = serializers.ChoiceField(choices=["cron", "recurrence"])
    expression = serializers.CharField(required=False)
    frequency = serializers.ChoiceField(choices=["minute", "hour", "day", "week", "month"], required=False)
    interval = serializers.IntegerField(min_value=1, max_value=1000, required=False, default=1)
    schedule = serializers.DictField(required=False)
    start_time = serializers.CharField(required=False)
    time_zone = serializers.CharField(
        required=False, default="UTC", max_length=64, trim_whitespace=False,
        help_text="an IANA name (Europe/Berlin) or a Windows one (Pacific Standard Time); stored as written",
    )
    time_zone_iana = serializers.CharField(read_only=True, help_text="the IANA name of time_zone (the same for IANA names)")


class StartStopSerializer(StrictSerializer):
    action = serializers.ChoiceField(choices=["start", "stop"])
    state = serializers.ChoiceField(choices=["enabled", "disabled"], required=False, default="enabled")
    trigger = TriggerSerializer()


class SchedulesSerializer(StrictSerializer):
    compute_start_stop = StartStopSerializer(many=True, required=False, default=list)


class ApplicationsSerializer(serializers.Serializer):
    """Where Dockyard's proxy serves the instance's servers (relative links; the token never appears)."""

    jupyterlab = serializers.CharField()
    vscode = serializers.CharField()
    terminal = serializers.CharField()


class ComputeInstanceSerializer(ComputeSerializer):
    compute_type = ComputeType.COMPUTEINSTANCE

    kubernetes_compute = serializers.CharField(
        required=False, max_length=64,
        help_text="the kubernetes compute of this workspace the instance runs on (default: the workspace's only one), "
                  "or `local` where staff enabled local compute for the workspace; fixed once created")
    instance_type = serializers.CharField(
        required=False, allow_null=True, default=None, max_length=253,
        help_text="an instance type of that kubernetes compute (its shape); or give size; neither: its default instance type")
    size = serializers.CharField(required=False, allow_null=True, default=None,
                                 help_text="a VM size (the shape of a whole node of that size); not with instance_type")
    assigned_user = serializers.RegexField(
        USERNAME, required=False, max_length=64,
        help_text="the member (contributor or owner) who uses it: only they and staff open it (default: the creator)")
    idle_time_before_shutdown_minutes = serializers.IntegerField(required=False, allow_null=True, default=None)
    idle_time_before_shutdown = serializers.CharField(required=False, allow_null=True, default=None)
    schedules = SchedulesSerializer(required=False, default=dict)
    state = serializers.ChoiceField(choices=InstanceState.choices, read_only=True, allow_null=True)
    state_reason = serializers.CharField(read_only=True, allow_blank=True)
    state_changed_at = serializers.DateTimeField(read_only=True, allow_null=True)
    last_activity = serializers.DateTimeField(read_only=True, allow_null=True)
    last_activity_source = serializers.CharField(read_only=True, allow_blank=True)
    desired_state = serializers.ChoiceField(choices=DesiredState.choices, read_only=True, allow_null=True)
    stop_cause = serializers.ChoiceField(choices=StopCause.choices, read_only=True, allow_blank=True)
    applications = ApplicationsSerializer(
        read_only=True, allow_null=True,
        help_text="links to JupyterLab, VS Code and a terminal through Dockyard's proxy; null unless you may open it")


class GpuSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    name = serializers.CharField()
    memory_mb = serializers.IntegerField(allow_null=True)
    uuid = serializers.CharField(allow_null=True)
    driver_version = serializers.CharField(allow_null=True)


class HostStatusSerializer(serializers.Serializer):
    """An SSH host as last checked: its host key's standing and the probes (empty before the first contact)."""

    host_key_fingerprint = serializers.CharField(required=False, help_text="the recorded host key's SHA256 fingerprint")
    host_key_confirmed = serializers.BooleanField(required=False, help_text="false: waiting for confirm-host-key")
    presented_host_key_fingerprint = serializers.CharField(
        required=False, help_text="a key the host presented instead of the recorded one (confirm it if it was reinstalled)")
    message = serializers.CharField(required=False)
    os = serializers.CharField(required=False, allow_null=True)
    kernel = serializers.CharField(required=False, allow_null=True)
    arch = serializers.CharField(required=False, allow_null=True)
    cpus = serializers.IntegerField(required=False, allow_null=True)
    memory_mb = serializers.IntegerField(required=False, allow_null=True)
    disk_total_mb = serializers.IntegerField(required=False, allow_null=True, help_text="of the jobs folder's filesystem")
    disk_free_mb = serializers.IntegerField(required=False, allow_null=True)
    docker = serializers.CharField(required=False, allow_null=True, help_text="docker's version; null when absent")
    systemd = serializers.BooleanField(required=False, help_text="PID 1 is systemd")
    gpus = GpuSerializer(many=True, required=False, help_text="from nvidia-smi; [] when it is absent")


class HostKeyConfirmationSerializer(serializers.Serializer):
    """The body of confirm-host-key: the fingerprint the host presented, as compared with the host's own."""

    fingerprint = serializers.RegexField(FINGERPRINT.pattern, help_text="SHA256:… (ssh-keygen -lf on the host)")


class SshHostSerializer(ComputeSerializer):
    """An SSH-reachable host: address, port, user, and a password or private key."""

    address = serializers.CharField(max_length=253, error_messages={
        "required": "Dockyard reaches the host at this address (a host name or IP); Azure ML's resource_id alone does not locate it."})
    ssh_port = serializers.IntegerField(min_value=1, max_value=65535, required=False, default=22)
    admin_username = serializers.RegexField(**USERNAME_FIELD)
    admin_password = secret_field()
    ssh_private_key = secret_field(help_text="PEM or OpenSSH private key; write-only, stored encrypted")
    host_key_fingerprint = serializers.RegexField(
        FINGERPRINT.pattern, required=False, allow_null=True, default=None, max_length=50,
        error_messages={"invalid": FINGERPRINT_MESSAGE},
        help_text="the host key's SHA256 fingerprint (ssh-keygen -lf): given, the key the host presents on first "
                  "contact is confirmed when it matches (else the attach fails); not given, an admin confirms it "
                  "(confirm-host-key). Set to the confirmed key's fingerprint once confirmed")
    status = HostStatusSerializer(read_only=True)
    checked_at = serializers.DateTimeField(read_only=True, allow_null=True, help_text="when the worker last checked the host")


class VirtualMachineSerializer(SshHostSerializer):
    compute_type = ComputeType.VIRTUALMACHINE


class HDInsightSerializer(SshHostSerializer):
    compute_type = ComputeType.HDINSIGHT


class ResourceIdSerializer(ComputeSerializer):
    resource_id = serializers.CharField(max_length=1024)


class DataLakeAnalyticsSerializer(ResourceIdSerializer):
    compute_type = ComputeType.DATALAKEANALYTICS


class SynapseSparkSerializer(ResourceIdSerializer):
    compute_type = ComputeType.SYNAPSESPARK


class DatabricksSerializer(ComputeSerializer):
    compute_type = ComputeType.DATABRICKS

    resource_id = serializers.CharField(max_length=1024, required=False)
    workspace_url = serializers.URLField(max_length=1024)
    access_token = secret_field()


class BatchSerializer(ComputeSerializer):
    compute_type = ComputeType.BATCH

    resource_id = serializers.CharField(max_length=1024, required=False)
    account_name = serializers.RegexField(r"^[a-z0-9]{3,24}$", error_messages={"invalid": "3–24 lowercase letters or digits."})
    account_url = serializers.URLField(max_length=1024, required=False)
    account_key = secret_field()


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


class LocalComputeSerializer(ComputeSerializer):
    """The built-in `local` target as GET shows it (for the schema): no record, so no timestamps."""

    compute_type = "local"
    created_on = serializers.DateTimeField(read_only=True, allow_null=True)
    updated_on = serializers.DateTimeField(read_only=True, allow_null=True)
