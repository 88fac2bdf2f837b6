"""The VM-size catalog from the compute-targets seed: supported and retired series, CUDA minimums, isolation.

Pure data and lookups; no Django. Size names (`Standard_NC6s_v3`) map to a series by pattern.
"""
import re
from dataclasses import dataclass, field
from datetime import date
from difflib import get_close_matches

from .sizes import SIZES, VmSize, canonical_key, size_shape, vm_size

CLUSTER = "compute_cluster"
INSTANCE = "compute_instance"
BOTH = (CLUSTER, INSTANCE)

CATEGORIES = {
    "general_purpose": "General purpose",
    "memory_optimized": "Memory optimized",
    "compute_optimized": "Compute optimized",
    "high_performance_compute": "High performance compute",
    "storage_optimized": "Storage optimized",
    "gpu": "GPU",
}

RETIRED_2023 = date(2023, 8, 31)
RETIRED_2024 = date(2024, 8, 31)


@dataclass(frozen=True)
class Series:
    name: str
    category: str
    pattern: str  # full-match regex for the size names of this series, without the "Standard_" prefix
    supported_in: tuple[str, ...] = BOTH
    gpu_architecture: str | None = None
    min_cuda: str | None = None
    retired_on: date | None = None
    # The seed's CUDA table names two series differently from its series table.
    aliases: tuple[str, ...] = field(default=())

    @property
    def gpu(self) -> bool:
        return self.category == "gpu"

    @property
    def listed_as_supported(self) -> bool:
        """In the seed's supported-series table (27 rows), even if retired since."""
        return self.name not in UNLISTED_RETIRED | ADDED_SERIES


SERIES: tuple[Series, ...] = (
    Series("DDSv4", "general_purpose", r"D\d+ds_v4"),
    Series("Dv2", "general_purpose", r"D\d+_v2"),
    Series("Dv3", "general_purpose", r"D\d+_v3"),
    Series("DSv2", "general_purpose", r"DS\d+(-\d+)?_v2"),
    Series("DSv3", "general_purpose", r"D\d+s_v3"),
    Series("EAv4", "memory_optimized", r"E\d+as?_v4"),
    Series("Ev3", "memory_optimized", r"E\d+_v3"),
    Series("ESv3", "memory_optimized", r"E\d+(-\d+)?s_v3"),
    Series("FSv2", "compute_optimized", r"F\d+s_v2"),
    Series("FX", "compute_optimized", r"FX\d+mds", supported_in=(CLUSTER,)),
    Series("H", "high_performance_compute", r"H\d+(m|r|mr)?"),
    Series("HB", "high_performance_compute", r"HB60rs", retired_on=RETIRED_2024),
    Series("HBv2", "high_performance_compute", r"HB120(-\d+)?rs_v2"),
    Series("HBv3", "high_performance_compute", r"HB120(-\d+)?rs_v3"),
    Series("HC", "high_performance_compute", r"HC44(-\d+)?rs"),
    Series("LSv2", "storage_optimized", r"L\d+s_v2"),
    Series("M", "memory_optimized", r"M\d+(-\d+)?(s|ms|ls|ts|m)?"),
    Series("NC", "gpu", r"NC\d+r?", gpu_architecture="Kepler", min_cuda="9.0", retired_on=RETIRED_2023),
    Series("NC Promo", "gpu", r"NC\d+r?_Promo", gpu_architecture="Kepler", min_cuda="9.0", retired_on=RETIRED_2023,
           aliases=("NC_Promo",)),
    Series("NCv2", "gpu", r"NC\d+r?s_v2", gpu_architecture="Pascal", min_cuda="9.0", retired_on=RETIRED_2023),
    Series("NCv3", "gpu", r"NC\d+r?s_v3", gpu_architecture="Volta", min_cuda="9.0"),
    Series("ND", "gpu", r"ND\d+r?s", gpu_architecture="Pascal", min_cuda="9.0", retired_on=RETIRED_2023),
    Series("NDv2", "gpu", r"ND40rs_v2", gpu_architecture="Volta", min_cuda="9.0"),
    Series("NV", "gpu", r"NV\d+", gpu_architecture="Maxwell", min_cuda="9.0", retired_on=RETIRED_2023),
    Series("NVv3", "gpu", r"NV\d+s_v3", gpu_architecture="Maxwell", min_cuda="9.0"),
    Series("NCasT4_v3", "gpu", r"NC\d+as_T4_v3", gpu_architecture="Turing", min_cuda="10.0", aliases=("NCT4_v3",)),
    Series(
        "NDasrA100_v4", "gpu", r"ND\d+asr_v4", gpu_architecture="Ampere", min_cuda="11.0", aliases=("NDA100_v4",)
    ),
    # Retired series that the seed names outside the supported table.
    Series(
        "NV_Promo", "gpu", r"NV\d+_Promo", gpu_architecture="Maxwell", min_cuda="9.0", retired_on=RETIRED_2023,
        aliases=("NV Promo",),
    ),
    Series("Av1", "general_purpose", r"A\d+", retired_on=RETIRED_2024),
    # Series Azure ML's examples use (`Standard_NC24ads_A100_v4`, H100 fine-tuning) that the seed's table predates.
    # Hopper needs CUDA 11.8 (the first release with its sm_90).
    Series("NCadsA100_v4", "gpu", r"NC\d+ads_A100_v4", gpu_architecture="Ampere", min_cuda="11.0"),
    Series("NCadsH100_v5", "gpu", r"NC\d+adi?s_H100_v5", gpu_architecture="Hopper", min_cuda="11.8"),
    Series("NDisrH100_v5", "gpu", r"ND\d+isr_H100_v5", gpu_architecture="Hopper", min_cuda="11.8"),
)
UNLISTED_RETIRED = {"NV_Promo", "Av1"}
ADDED_SERIES = {"NCadsA100_v4", "NCadsH100_v5", "NDisrH100_v5"}

# Sizes that run alone on their host hardware (the seed's compute-isolation list).
ISOLATED_SIZES = {
    "Standard_M128ms": {"rdma": False},
    "Standard_F72s_v2": {"rdma": False},
    "Standard_NC24s_v3": {"rdma": False},
    "Standard_NC24rs_v3": {"rdma": True},
}

_COMPILED = [(series, re.compile(series.pattern, re.IGNORECASE)) for series in SERIES]
_BY_NAME = {key.lower(): series for series in SERIES for key in (series.name, *series.aliases)}


def series_named(name: str) -> Series | None:
    return _BY_NAME.get(name.strip().lower())


def series_of_size(size: str) -> Series | None:
    """The series a VM size name belongs to, or None when Dockyard does not know it."""
    bare = re.sub(r"^standard_", "", size.strip(), flags=re.IGNORECASE)
    for series, pattern in _COMPILED:
        if pattern.fullmatch(bare):
            return series
    return None


def size_problem(size: str, target: str, today: date) -> str | None:
    """Why a size cannot be used for a new compute cluster/instance, or None if it can."""
    series = series_of_size(size)
    kind = "compute clusters" if target == CLUSTER else "compute instances"
    if series is None:
        return unknown_size(size)
    if series.retired_on and series.retired_on <= today:
        return (
            f"'{size}' belongs to the {series.name} series, retired on {series.retired_on.isoformat()}; "
            "pick a size from a current series."
        )
    if target not in series.supported_in:
        return f"The {series.name} series is not supported for {kind}; it is available for compute clusters only."
    return _shape_problem(size)


def sizes_of(series: Series) -> list[VmSize]:
    """The catalog's sizes of a series, in the table's order."""
    return [size for size in SIZES if series_of_size(size.name) is series]


def unknown_size(size: str) -> str:
    """Why the catalog does not list a size, naming close sizes of its series when the series is known."""
    series = series_of_size(size)
    if series is None:
        return f"'{size}' is not a VM size of a series Dockyard supports; see GET /api/v1/vm-sizes/ for the list."
    spelled = {known.name.lower(): known.name for known in sizes_of(series)}
    close = get_close_matches(canonical_key(size), list(spelled), n=3, cutoff=0)
    suggestion = f" Close sizes: {', '.join(spelled[key] for key in close)}." if close else ""
    return (
        f"'{size}' is not a size of the {series.name} series that Dockyard knows: a compute needs the size's "
        f"vCPUs, memory and GPUs to size its pods.{suggestion}"
    )


def _shape_problem(size: str) -> str | None:
    """Why a size of a known series has no shape: the table does not list it, or it leaves a pod nothing."""
    if vm_size(size) is None:
        return unknown_size(size)
    if size_shape(size) is None:
        return f"'{size}' is too small: nothing is left for a pod after the node's system reserve."
    return None


def isolated_sizes_of(series: Series) -> list[dict]:
    return [
        {"name": name, **info} for name, info in ISOLATED_SIZES.items() if series_of_size(name) is series
    ]


def _retired(series: Series, today: date) -> bool:
    return bool(series.retired_on and series.retired_on <= today)


def size_row(size: VmSize, today: date) -> dict:
    """A size as the API shows it: its facts, its series' standing, and its whole-node shape (None if too small)."""
    series = series_of_size(size.name)
    shape = size_shape(size.name)
    return {
        "name": size.name, "series": series.name, "category": series.category,
        "vcpus": size.vcpus, "memory_gib": size.memory_gib, "gpus": size.gpus, "gpu_model": size.gpu_model,
        "retired": _retired(series, today), "supported_in": list(series.supported_in),
        "shape": shape.resources() if shape else None,
    }


def size_rows(today: date) -> list[dict]:
    """Every size of the catalog, by series (in SERIES order) then by vCPUs, memory and name."""
    order = {series.name: index for index, series in enumerate(SERIES)}
    rows = [size_row(size, today) for size in SIZES]
    return sorted(rows, key=lambda row: (order[row["series"]], row["vcpus"], row["memory_gib"], row["name"]))


def series_rows(today: date) -> list[dict]:
    """Every series as the API shows it."""
    return [
        {
            "series": series.name,
            "aliases": list(series.aliases),
            "category": series.category,
            "category_display": CATEGORIES[series.category],
            "supported_in": list(series.supported_in),
            "gpu": series.gpu,
            "gpu_architecture": series.gpu_architecture,
            "min_cuda": series.min_cuda,
            "retired": _retired(series, today),
            "retired_on": series.retired_on,
            "listed_as_supported": series.listed_as_supported,
            "isolated_sizes": isolated_sizes_of(series),
            "size_pattern": "Standard_" + series.pattern,
        }
        for series in SERIES
    ]
