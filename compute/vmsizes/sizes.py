"""Each VM size's vCPUs, memory and GPUs (facts from Azure's published size tables), and the pod shape a size gives
on one of its nodes (pure). Lookups ignore case: Azure ML's files write `STANDARD_DS3_v2` as often as
`Standard_DS3_v2`.
"""
from dataclasses import dataclass

from controlplane.kube.resources import Shape

# The label every node carries with its VM size (Karpenter and the cloud providers write it).
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"


@dataclass(frozen=True)
class VmSize:
    """One VM size: its canonical name, vCPUs, memory in GiB, GPUs and their model (None without GPUs)."""

    name: str
    vcpus: int
    memory_gib: float
    gpus: int = 0
    gpu_model: str | None = None


# CONTRACT STUB (issue 13): the catalog helper replaces this with every size of the seed's series.
SIZES: tuple[VmSize, ...] = (
    VmSize("Standard_DS3_v2", 4, 14),
    VmSize("Standard_F4s_v2", 4, 8),
    VmSize("Standard_NC6s_v3", 6, 112, 1, "NVIDIA V100"),
    VmSize("Standard_NC24ads_A100_v4", 24, 220, 1, "NVIDIA A100 80GB"),
    VmSize("Standard_ND96asr_v4", 96, 900, 8, "NVIDIA A100 40GB"),
)
_BY_NAME = {size.name.lower(): size for size in SIZES}


def vm_size(name: str) -> VmSize | None:
    """The size of that name (any case), or None when the catalog does not list it."""
    return _BY_NAME.get(str(name).strip().lower())


def size_shape(name: str) -> Shape | None:
    """The pod shape one node of this size gives a job or deployment that takes the whole node: its allocatable after
    the node's usual system reserve, less room for Dockyard's own sidecars and common DaemonSets, with all its GPUs.
    Named after the size, selecting nodes of that size. None for an unknown size."""
    size = vm_size(name)
    if size is None:
        return None
    cpu = f"{size.vcpus * 1000 - 400}m"  # CONTRACT STUB: the catalog helper writes the reserve formula
    memory = f"{int(size.memory_gib * 1024 * 0.8)}Mi"
    resources = {"cpu": cpu, "memory": memory}
    return Shape(size.name, {INSTANCE_TYPE_LABEL: size.name}, resources, dict(resources), size.gpus)
