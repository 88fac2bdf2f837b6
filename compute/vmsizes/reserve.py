"""What one node of a VM size leaves a pod that takes the whole node (pure): the node's system reserve, then room for
the node's DaemonSets and Dockyard's own sidecar.

The reserve is AKS's kube-reserved CPU and memory plus its memory eviction threshold, in the form Karpenter's Azure
provider uses to decide, before any node exists, whether a pod fits a size (Azure/karpenter-provider-azure,
`pkg/providers/instancetype/instancetype.go`: `KubeReservedResources`, `EvictionThreshold`; the same brackets as
AKS's "Node resource reservations" page, "AKS versions prior to 1.29"). That is the stricter of AKS's two formulas
(1.29 reserves less), so a pod sized by it fits both the autoscaler's estimate — a pod bigger than that estimate never
gets a node launched for it — and the node the kubelet reports once it exists.
"""
import math

# AKS kube-reserved CPU, per vCPU of each bracket in millicores: 6% of the first core, 4% of the second, 2% of the
# third and fourth, 1% of every core above four. Gives AKS's published table: 1 → 60m, 2 → 100m, 4 → 140m, 8 → 180m,
# 16 → 260m, 32 → 420m, 64 → 740m.
CPU_BRACKETS = ((1, 60), (2, 40), (4, 20), (math.inf, 10))  # (upper bound in vCPUs, millicores per vCPU)

# AKS kube-reserved memory: 25% of the first 4 GiB, 20% of the next 4, 10% of the next 8, 6% of the next 112 (to
# 128 GiB), 2% of the rest.
MEMORY_BRACKETS = ((4, 25), (8, 20), (16, 10), (128, 6), (math.inf, 2))  # (upper bound in GiB, percent)

# The kubelet's `memory.available<750Mi` hard eviction threshold (AKS before 1.29; Karpenter's Azure estimate).
EVICTION_MIB = 750

# Memory a VM's kernel and firmware keep from the size's nominal memory: Karpenter's documented default
# `VM_MEMORY_OVERHEAD_PERCENT` of 0.075, which it subtracts from every size's memory before a node reports its own.
VM_OVERHEAD_PERMILLE = 75

# Room for the DaemonSets a node commonly runs (kube-proxy, the CNI and CSI node plugins, a log/metrics agent, the
# GPU device plugin). An allowance, not a measurement: where they ask for more, a whole-node pod stays Pending and
# says why (the scheduler's reason).
DAEMONSET_MILLICORES = 500
DAEMONSET_MIB = 1024

# Dockyard's outputs uploader, which runs beside every job's container (assets/specs/pods.py SMALL requests).
SIDECAR_MILLICORES = 50
SIDECAR_MIB = 64


def _bracketed(amount: float, brackets: tuple[tuple[float, int], ...]) -> float:
    """The sum of each bracket's share of `amount` times its rate (a tax-bracket sum)."""
    total, lower = 0.0, 0.0
    for upper, rate in brackets:
        if amount > lower:
            total += (min(upper, amount) - lower) * rate
        lower = upper
    return total


def kube_reserved_millicores(vcpus: int) -> int:
    """AKS's kube-reserved CPU for a node of `vcpus` cores."""
    return int(_bracketed(vcpus, CPU_BRACKETS))


def kube_reserved_mib(memory_gib: float) -> int:
    """AKS's kube-reserved memory for a node of `memory_gib`, in MiB (rounded down, as Karpenter does)."""
    return int(_bracketed(memory_gib * 1024, tuple((upper * 1024, rate) for upper, rate in MEMORY_BRACKETS)) // 100)


def vm_overhead_mib(memory_gib: float) -> int:
    """The memory of a VM that its kernel never reports, in MiB (rounded up)."""
    return math.ceil(memory_gib * 1024 * VM_OVERHEAD_PERMILLE / 1000)


def node_allocatable(vcpus: int, memory_gib: float) -> tuple[int, int]:
    """(millicores, MiB) a node of this size offers pods: its capacity less the system reserve and eviction threshold."""
    memory_mib = int(memory_gib * 1024) - vm_overhead_mib(memory_gib)
    return vcpus * 1000 - kube_reserved_millicores(vcpus), memory_mib - kube_reserved_mib(memory_gib) - EVICTION_MIB


def whole_node_room(vcpus: int, memory_gib: float) -> tuple[int, int] | None:
    """(millicores, MiB) a pod that owns the node may request: the allocatable less the DaemonSet allowance and the
    sidecar. None when nothing is left (the smallest, shared-core sizes)."""
    millicores, mib = node_allocatable(vcpus, memory_gib)
    millicores -= DAEMONSET_MILLICORES + SIDECAR_MILLICORES
    mib -= DAEMONSET_MIB + SIDECAR_MIB
    return (millicores, mib) if millicores > 0 and mib > 0 else None
