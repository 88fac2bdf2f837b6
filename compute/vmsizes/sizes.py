"""Each VM size's vCPUs, memory and GPUs, and the pod shape a size gives on one of its nodes (pure). Lookups ignore
case and a missing `Standard_` prefix: Azure ML's files write `STANDARD_DS3_v2` as often as `Standard_DS3_v2`.

The numbers are facts from Azure's published size tables (learn.microsoft.com, "Sizes for virtual machines in
Azure": each series' page, its "previous generation" and "constrained vCPU" pages; memory in GiB as Azure writes it).
A constrained-vCPU size (`Standard_DS13-4_v2`) counts the vCPUs it exposes. GPU counts are the GPUs the VM sees (an
NC/NV size's GPU is half of a K80/M60 card, as Azure counts it).
"""
from dataclasses import dataclass

from controlplane.kube.resources import Shape

from .reserve import whole_node_room

# The label every node carries with its VM size (Karpenter and the cloud providers write it).
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
PREFIX = "Standard_"


@dataclass(frozen=True)
class VmSize:
    """One VM size: its canonical name, vCPUs, memory in GiB, GPUs and their model (None without GPUs)."""

    name: str
    vcpus: int
    memory_gib: float
    gpus: int = 0
    gpu_model: str | None = None


def _sizes(*rows: tuple, gpu_model: str | None = None) -> tuple[VmSize, ...]:
    """Rows of (name without the prefix, vCPUs, GiB[, GPUs]) of one series."""
    return tuple(VmSize(PREFIX + name, vcpus, memory, *gpus, *([gpu_model] if gpus else [])) for name, vcpus, memory, *gpus in rows)


# By series, in the order of compute/vmsizes/series.py; a size belongs to the series whose pattern it matches.
SIZES: tuple[VmSize, ...] = (
    # DDSv4 (Ddsv4)
    *_sizes(("D2ds_v4", 2, 8), ("D4ds_v4", 4, 16), ("D8ds_v4", 8, 32), ("D16ds_v4", 16, 64), ("D32ds_v4", 32, 128),
            ("D48ds_v4", 48, 192), ("D64ds_v4", 64, 256)),
    # Dv2, with the memory-optimized D11-D15
    *_sizes(("D1_v2", 1, 3.5), ("D2_v2", 2, 7), ("D3_v2", 4, 14), ("D4_v2", 8, 28), ("D5_v2", 16, 56),
            ("D11_v2", 2, 14), ("D12_v2", 4, 28), ("D13_v2", 8, 56), ("D14_v2", 16, 112), ("D15_v2", 20, 140)),
    # Dv3
    *_sizes(("D2_v3", 2, 8), ("D4_v3", 4, 16), ("D8_v3", 8, 32), ("D16_v3", 16, 64), ("D32_v3", 32, 128),
            ("D48_v3", 48, 192), ("D64_v3", 64, 256)),
    # DSv2, with the memory-optimized DS11-DS15 and their constrained-vCPU sizes
    *_sizes(("DS1_v2", 1, 3.5), ("DS2_v2", 2, 7), ("DS3_v2", 4, 14), ("DS4_v2", 8, 28), ("DS5_v2", 16, 56),
            ("DS11_v2", 2, 14), ("DS11-1_v2", 1, 14), ("DS12_v2", 4, 28), ("DS12-1_v2", 1, 28), ("DS12-2_v2", 2, 28),
            ("DS13_v2", 8, 56), ("DS13-2_v2", 2, 56), ("DS13-4_v2", 4, 56), ("DS14_v2", 16, 112),
            ("DS14-4_v2", 4, 112), ("DS14-8_v2", 8, 112), ("DS15_v2", 20, 140)),
    # DSv3 (Dsv3)
    *_sizes(("D2s_v3", 2, 8), ("D4s_v3", 4, 16), ("D8s_v3", 8, 32), ("D16s_v3", 16, 64), ("D32s_v3", 32, 128),
            ("D48s_v3", 48, 192), ("D64s_v3", 64, 256)),
    # EAv4: Eav4 and Easv4
    *_sizes(*((f"E{n}{kind}_v4", n, memory) for kind in ("a", "as") for n, memory in (
        (2, 16), (4, 32), (8, 64), (16, 128), (20, 160), (32, 256), (48, 384), (64, 512), (96, 672)))),
    # Ev3
    *_sizes(("E2_v3", 2, 16), ("E4_v3", 4, 32), ("E8_v3", 8, 64), ("E16_v3", 16, 128), ("E20_v3", 20, 160),
            ("E32_v3", 32, 256), ("E48_v3", 48, 384), ("E64_v3", 64, 432)),
    # ESv3 (Esv3), with its constrained-vCPU sizes
    *_sizes(("E2s_v3", 2, 16), ("E4s_v3", 4, 32), ("E4-2s_v3", 2, 32), ("E8s_v3", 8, 64), ("E8-2s_v3", 2, 64),
            ("E8-4s_v3", 4, 64), ("E16s_v3", 16, 128), ("E16-4s_v3", 4, 128), ("E16-8s_v3", 8, 128),
            ("E20s_v3", 20, 160), ("E32s_v3", 32, 256), ("E32-8s_v3", 8, 256), ("E32-16s_v3", 16, 256),
            ("E48s_v3", 48, 384), ("E64s_v3", 64, 432), ("E64-16s_v3", 16, 432), ("E64-32s_v3", 32, 432)),
    # FSv2 (Fsv2)
    *_sizes(("F2s_v2", 2, 4), ("F4s_v2", 4, 8), ("F8s_v2", 8, 16), ("F16s_v2", 16, 32), ("F32s_v2", 32, 64),
            ("F48s_v2", 48, 96), ("F64s_v2", 64, 128), ("F72s_v2", 72, 144)),
    # FX
    *_sizes(("FX4mds", 4, 84), ("FX12mds", 12, 252), ("FX24mds", 24, 504), ("FX36mds", 36, 756), ("FX48mds", 48, 1008)),
    # H
    *_sizes(("H8", 8, 56), ("H8m", 8, 112), ("H16", 16, 112), ("H16m", 16, 224), ("H16r", 16, 112), ("H16mr", 16, 224)),
    # HB
    *_sizes(("HB60rs", 60, 228)),
    # HBv2 and HBv3, with their constrained-core sizes
    *_sizes(*((f"HB120{cores}rs_v2", n, 456) for cores, n in (("", 120), ("-96", 96), ("-64", 64), ("-32", 32), ("-16", 16)))),
    *_sizes(*((f"HB120{cores}rs_v3", n, 448) for cores, n in (("", 120), ("-96", 96), ("-64", 64), ("-32", 32), ("-16", 16)))),
    # HC
    *_sizes(("HC44rs", 44, 352), ("HC44-32rs", 32, 352), ("HC44-16rs", 16, 352)),
    # LSv2 (Lsv2)
    *_sizes(("L8s_v2", 8, 64), ("L16s_v2", 16, 128), ("L32s_v2", 32, 256), ("L48s_v2", 48, 384), ("L64s_v2", 64, 512),
            ("L80s_v2", 80, 640)),
    # M, with its constrained-vCPU sizes
    *_sizes(("M8ms", 8, 218.75), ("M8-2ms", 2, 218.75), ("M8-4ms", 4, 218.75), ("M16ms", 16, 437.5),
            ("M16-4ms", 4, 437.5), ("M16-8ms", 8, 437.5), ("M32ts", 32, 192), ("M32ls", 32, 256), ("M32ms", 32, 875),
            ("M32-8ms", 8, 875), ("M32-16ms", 16, 875), ("M64s", 64, 1024), ("M64ls", 64, 512), ("M64ms", 64, 1792),
            ("M64-16ms", 16, 1792), ("M64-32ms", 32, 1792), ("M64", 64, 1024), ("M64m", 64, 1792),
            ("M128s", 128, 2048), ("M128ms", 128, 3892), ("M128-32ms", 32, 3892), ("M128-64ms", 64, 3892),
            ("M128", 128, 2048), ("M128m", 128, 3892)),
    # NC and NC Promo (retired 2023)
    *_sizes(("NC6", 6, 56, 1), ("NC12", 12, 112, 2), ("NC24", 24, 224, 4), ("NC24r", 24, 224, 4), gpu_model="NVIDIA K80"),
    *_sizes(("NC6_Promo", 6, 56, 1), ("NC12_Promo", 12, 112, 2), ("NC24_Promo", 24, 224, 4),
            ("NC24r_Promo", 24, 224, 4), gpu_model="NVIDIA K80"),
    # NCv2 (retired 2023)
    *_sizes(("NC6s_v2", 6, 112, 1), ("NC12s_v2", 12, 224, 2), ("NC24s_v2", 24, 448, 4), ("NC24rs_v2", 24, 448, 4),
            gpu_model="NVIDIA P100"),
    # NCv3
    *_sizes(("NC6s_v3", 6, 112, 1), ("NC12s_v3", 12, 224, 2), ("NC24s_v3", 24, 448, 4), ("NC24rs_v3", 24, 448, 4),
            gpu_model="NVIDIA V100"),
    # ND (retired 2023)
    *_sizes(("ND6s", 6, 112, 1), ("ND12s", 12, 224, 2), ("ND24s", 24, 448, 4), ("ND24rs", 24, 448, 4),
            gpu_model="NVIDIA P40"),
    # NDv2
    *_sizes(("ND40rs_v2", 40, 672, 8), gpu_model="NVIDIA V100 32GB"),
    # NV (retired 2023)
    *_sizes(("NV6", 6, 56, 1), ("NV12", 12, 112, 2), ("NV24", 24, 224, 4), gpu_model="NVIDIA M60"),
    # NVv3
    *_sizes(("NV12s_v3", 12, 112, 1), ("NV24s_v3", 24, 224, 2), ("NV48s_v3", 48, 448, 4), gpu_model="NVIDIA M60"),
    # NCasT4_v3
    *_sizes(("NC4as_T4_v3", 4, 28, 1), ("NC8as_T4_v3", 8, 56, 1), ("NC16as_T4_v3", 16, 110, 1),
            ("NC64as_T4_v3", 64, 440, 4), gpu_model="NVIDIA T4"),
    # NDasrA100_v4
    *_sizes(("ND96asr_v4", 96, 900, 8), gpu_model="NVIDIA A100 40GB"),
    # NV_Promo (retired 2023)
    *_sizes(("NV6_Promo", 6, 56, 1), ("NV12_Promo", 12, 112, 2), ("NV24_Promo", 24, 224, 4), gpu_model="NVIDIA M60"),
    # Av1 (retired 2024): A0-A7; A0 shares its core
    *_sizes(("A0", 1, 0.75), ("A1", 1, 1.75), ("A2", 2, 3.5), ("A3", 4, 7), ("A4", 8, 14), ("A5", 2, 14), ("A6", 4, 28),
            ("A7", 8, 56)),
    # Series Azure ML's examples use that the seed's table predates
    *_sizes(("NC24ads_A100_v4", 24, 220, 1), ("NC48ads_A100_v4", 48, 440, 2), ("NC96ads_A100_v4", 96, 880, 4),
            gpu_model="NVIDIA A100 80GB"),
    *_sizes(("NC40ads_H100_v5", 40, 320, 1), ("NC80adis_H100_v5", 80, 640, 2), gpu_model="NVIDIA H100 NVL"),
    *_sizes(("ND96isr_H100_v5", 96, 1900, 8), gpu_model="NVIDIA H100 80GB"),
)
_BY_NAME = {size.name.lower(): size for size in SIZES}


def canonical_key(name: str) -> str:
    """The lookup key of a size name: lower case, with the `standard_` prefix."""
    bare = str(name).strip().lower().removeprefix(PREFIX.lower())
    return PREFIX.lower() + bare


def vm_size(name: str) -> VmSize | None:
    """The size of that name (any case, prefix optional), or None when the catalog does not list it."""
    return _BY_NAME.get(canonical_key(name))


def size_shape(name: str) -> Shape | None:
    """The pod shape one node of this size gives a job or deployment that takes the whole node: what the node offers
    pods after its system reserve, less room for common DaemonSets and Dockyard's sidecar (compute/vmsizes/reserve.py),
    with all its GPUs; requests = limits (the pod owns the node). Named after the size, selecting nodes of that size.
    None for an unknown size or one too small to leave anything."""
    size = vm_size(name)
    room = size and whole_node_room(size.vcpus, size.memory_gib)
    if not room:
        return None
    millicores, mib = room
    resources = {"cpu": f"{millicores}m", "memory": f"{mib}Mi"}
    return Shape(size.name, {INSTANCE_TYPE_LABEL: size.name}, resources, dict(resources), size.gpus)
