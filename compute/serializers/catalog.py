"""The static catalogs: compute-type capabilities, VM series and their sizes."""
from rest_framework import serializers


class ComputeTypeSerializer(serializers.Serializer):
    type = serializers.CharField()
    display_name = serializers.CharField()
    management = serializers.CharField()
    is_record = serializers.BooleanField()
    automl = serializers.BooleanField()
    automl_note = serializers.CharField(allow_blank=True)
    pipelines = serializers.BooleanField()
    designer = serializers.BooleanField()
    command_jobs = serializers.BooleanField()
    realtime_inference = serializers.BooleanField()
    batch_inference = serializers.BooleanField()
    gpu = serializers.BooleanField()
    nodes = serializers.CharField()
    autoscale_on_submit = serializers.BooleanField()
    description = serializers.CharField()


class IsolatedSizeSerializer(serializers.Serializer):
    name = serializers.CharField()
    rdma = serializers.BooleanField()


class VmSizeShapeSerializer(serializers.Serializer):
    requests = serializers.DictField(child=serializers.CharField(), help_text="cpu and memory; equal to the limits")
    limits = serializers.DictField(help_text="cpu, memory and nvidia.com/gpu (all the node's GPUs, null without)")


class VmSizeCompactSerializer(serializers.Serializer):
    """A size inside its series' row: what the series row does not already say."""

    name = serializers.CharField()
    vcpus = serializers.IntegerField()
    memory_gib = serializers.FloatField()
    gpus = serializers.IntegerField()
    gpu_model = serializers.CharField(allow_null=True)
    shape = VmSizeShapeSerializer(allow_null=True, help_text="a pod that takes one whole node; null if it leaves none")


class VmSizeSerializer(VmSizeCompactSerializer):
    """One size with its series' standing."""

    series = serializers.CharField()
    category = serializers.CharField()
    retired = serializers.BooleanField()
    supported_in = serializers.ListField(child=serializers.CharField())


class VmSeriesSerializer(serializers.Serializer):
    series = serializers.CharField()
    aliases = serializers.ListField(child=serializers.CharField())
    category = serializers.CharField()
    category_display = serializers.CharField()
    supported_in = serializers.ListField(child=serializers.CharField())
    gpu = serializers.BooleanField()
    gpu_architecture = serializers.CharField(allow_null=True)
    min_cuda = serializers.CharField(allow_null=True)
    retired = serializers.BooleanField()
    retired_on = serializers.DateField(allow_null=True)
    listed_as_supported = serializers.BooleanField()
    isolated_sizes = IsolatedSizeSerializer(many=True)
    size_pattern = serializers.CharField()
    sizes = VmSizeCompactSerializer(many=True)
