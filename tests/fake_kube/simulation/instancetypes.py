"""Instance types a fake cloud offers Karpenter: capacity, the system reserve, and the labels a node of each gets.

A node's allocatable is its capacity less AKS's documented reservation (kept here so tests can compute it):
CPU by core count (1: 60m, 2: 100m, 4: 140m, 8: 180m, 16: 260m, 32: 420m, 64+: 740m; the largest entry not above the
core count), memory min(20Mi × max pods + 50Mi, 25% of memory) plus the kubelet's 100Mi hard-eviction threshold, with
110 max pods; every GPU is allocatable. No prices: Karpenter's choice here is the smallest type that fits, Spot when the
pool allows it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

MAX_PODS = 110
CPU_RESERVE = ((64, 740), (32, 420), (16, 260), (8, 180), (4, 140), (2, 100), (1, 60))  # (cores, millicores)
EVICTION_MIB = 100
REGION = "eastus"
ZONES = ("eastus-1", "eastus-2", "eastus-3")
CAPACITY_TYPES = ("spot", "on-demand")


@dataclass(frozen=True)
class InstanceType:
    """A VM size: vCPUs, memory (GiB), GPUs, and where and how it can be bought."""

    name: str
    cpu: int
    memory_gib: float
    gpu: int = 0
    gpu_resource: str = "nvidia.com/gpu"
    capacity_types: tuple = CAPACITY_TYPES
    zones: tuple = ZONES
    arch: str = "amd64"
    extra_labels: dict = field(default_factory=dict, hash=False, compare=False)

    def capacity(self) -> dict[str, Fraction]:
        """What the node reports as capacity (cpu in cores, memory in bytes)."""
        out = {"cpu": Fraction(self.cpu), "memory": Fraction(int(self.memory_gib * 1024)) * 1024 * 1024,
               "pods": Fraction(MAX_PODS)}
        if self.gpu:
            out[self.gpu_resource] = Fraction(self.gpu)
        return out

    def allocatable(self) -> dict[str, Fraction]:
        """Capacity less the system reserve (see the module docstring)."""
        out = self.capacity()
        cpu_reserve = next((m for cores, m in CPU_RESERVE if self.cpu >= cores), 60)
        memory_mib = int(self.memory_gib * 1024)
        reserve_mib = min(20 * MAX_PODS + 50, memory_mib // 4) + EVICTION_MIB
        out["cpu"] -= Fraction(cpu_reserve, 1000)
        out["memory"] -= Fraction(reserve_mib) * 1024 * 1024
        return out

    def labels(self, capacity_type: str, zone: str) -> dict[str, str]:
        """The well-known labels of a node of this type (as Karpenter and the Azure provider write them)."""
        labels = {"node.kubernetes.io/instance-type": self.name, "karpenter.sh/capacity-type": capacity_type,
                  "topology.kubernetes.io/zone": zone, "topology.kubernetes.io/region": REGION,
                  "kubernetes.io/arch": self.arch, "kubernetes.io/os": "linux",
                  "karpenter.azure.com/sku-name": self.name, "karpenter.azure.com/sku-cpu": str(self.cpu),
                  "karpenter.azure.com/sku-memory": str(int(self.memory_gib * 1024))}
        if self.gpu:
            labels["karpenter.azure.com/sku-gpu-count"] = str(self.gpu)
        if capacity_type == "spot":
            labels["kubernetes.azure.com/scalesetpriority"] = "spot"
        return {**labels, **self.extra_labels}


def _types(*rows) -> dict[str, InstanceType]:
    return {row.name: row for row in rows}


DEFAULT_INSTANCE_TYPES = _types(
    InstanceType("Standard_DS3_v2", 4, 14),
    InstanceType("Standard_F4s_v2", 4, 8),
    InstanceType("Standard_NC6s_v3", 6, 112, gpu=1),
    InstanceType("Standard_NC24ads_A100_v4", 24, 220, gpu=1),
    InstanceType("Standard_ND96asr_v4", 96, 900, gpu=8),
)


def quantity_text(name: str, value: Fraction) -> str:
    """A capacity value as a quantity string (cpu in millicores when fractional, memory in Ki)."""
    if name == "memory":
        return f"{int(value) // 1024}Ki"
    if value.denominator != 1:
        return f"{int(value * 1000)}m"
    return str(int(value))
