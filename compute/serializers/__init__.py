"""Serializers by sub-domain; the names below are what the rest of the project imports."""
from .base import ComputeSerializer, compute_as_dict, creator_name
from .catalog import ComputeTypeSerializer, VmSeriesSerializer, VmSizeSerializer
from .computes import SERIALIZERS, HostKeyConfirmationSerializer, LocalComputeSerializer
from .instancetypes import InstanceTypeSerializer, NodeSerializer

__all__ = [
    "SERIALIZERS", "ComputeSerializer", "ComputeTypeSerializer", "HostKeyConfirmationSerializer", "InstanceTypeSerializer", "LocalComputeSerializer",
    "NodeSerializer", "VmSeriesSerializer", "VmSizeSerializer", "compute_as_dict", "creator_name",
]
