"""Instance types and nodes as the API lists them for one attachment."""
from rest_framework import serializers

from controlplane.reconciling import ProvisioningState


class InstanceTypeStatusSerializer(serializers.Serializer):
    observed_spec = serializers.DictField(allow_null=True, help_text="the cluster's copy at the last reconcile/resync")
    drifted = serializers.BooleanField()


class InstanceTypeSerializer(serializers.Serializer):
    """An instance type as listed for one attachment (the body you send is an InstanceType, a list, or flat)."""

    name = serializers.CharField()
    nodeSelector = serializers.DictField(child=serializers.CharField())
    resources = serializers.DictField()
    effective_node_selector = serializers.DictField(child=serializers.CharField())
    source = serializers.ChoiceField(choices=["builtin", "dockyard", "cluster"])
    provisioning_state = serializers.ChoiceField(choices=ProvisioningState.choices)
    provisioning_errors = serializers.ListField(child=serializers.DictField())
    status = InstanceTypeStatusSerializer()
    fits_nodes = serializers.ListField(child=serializers.CharField())
    warnings = serializers.ListField(child=serializers.CharField())
    manifest = serializers.DictField(allow_null=True, help_text="the InstanceType CR Dockyard applies (none for builtin and imported)")
    created_on = serializers.DateTimeField(allow_null=True)
    updated_on = serializers.DateTimeField(allow_null=True)


class NodeSerializer(serializers.Serializer):
    name = serializers.CharField()
    labels = serializers.DictField(child=serializers.CharField())
    taints = serializers.ListField(child=serializers.DictField())
    ready = serializers.BooleanField()
    allocatable = serializers.DictField()
    instance_types = serializers.ListField(child=serializers.CharField(), help_text="instance types this node can host")
