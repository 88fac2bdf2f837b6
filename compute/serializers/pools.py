"""Compute clusters' serializers: the autoscaler settings of a kubernetes compute (for the schema) and the observed
status of a compute cluster's node pool (COMMON.md's contract: what the compute-cluster reconcile writes)."""
from rest_framework import serializers

from ..spec.autoscalers import KIND, VERSION
from .base import StrictSerializer

KIND_FIELD = {"regex": KIND, "error_messages": {"invalid": "Must be a Kubernetes kind such as AKSNodeClass: a capital "
                                                            "letter, then letters and digits."}}


class NodeClassRefSerializer(StrictSerializer):
    """Karpenter's nodeClassRef: the provider's node class every NodePool of this cluster uses."""

    group = serializers.CharField(max_length=253)
    kind = serializers.RegexField(**KIND_FIELD)
    name = serializers.CharField(max_length=253)


class TemplateRefSerializer(StrictSerializer):
    """A Cluster API template a MachineDeployment refers to."""

    api_group = serializers.CharField(max_length=253)
    kind = serializers.RegexField(**KIND_FIELD)
    name = serializers.CharField(max_length=253)


class ClusterApiSerializer(StrictSerializer):
    """What a Cluster API MachineDeployment per compute cluster needs (the attached cluster is its own management cluster)."""

    cluster_name = serializers.CharField(max_length=63)
    namespace = serializers.CharField()
    version = serializers.RegexField(regex=VERSION, max_length=64,
                                     error_messages={"invalid": "Must be a Kubernetes version such as v1.31.2."})
    bootstrap_config_template = TemplateRefSerializer()
    infrastructure_templates = serializers.DictField(child=TemplateRefSerializer(), help_text="VM size → template")
    low_priority_infrastructure_templates = serializers.DictField(
        child=TemplateRefSerializer(), required=False, default=dict, help_text="VM size → spot template (tier: low_priority)")


class PoolNodeSerializer(serializers.Serializer):
    name = serializers.CharField()
    ready = serializers.BooleanField()
    idle = serializers.BooleanField(help_text="no Dockyard job or deployment pod runs on it")


class PoolStatusSerializer(serializers.Serializer):
    """A compute cluster's node pool as last observed (empty until the first observation)."""

    engine = serializers.ChoiceField(choices=["karpenter", "cluster-api"], required=False)
    pool = serializers.CharField(required=False, help_text="the NodePool / MachineDeployment name")
    current_node_count = serializers.IntegerField(required=False)
    target_node_count = serializers.IntegerField(required=False)
    idle_node_count = serializers.IntegerField(required=False)
    max_node_count = serializers.IntegerField(required=False)
    scaling = serializers.ChoiceField(choices=["steady", "scaling_up", "scaling_down", "at_limit"], required=False)
    autoscaler_errors = serializers.ListField(child=serializers.CharField(), required=False)
    nodes = PoolNodeSerializer(many=True, required=False)
