"""compute/vmsizes sizes and reserve: each size's facts, the node reserve formula, and the whole-node shape a size
gives (Azure's size tables; AKS's reservations as Karpenter's Azure provider estimates them)."""
from datetime import date

import pytest

from assets.specs.pods import SMALL
from compute import vmsizes
from compute.vmsizes import reserve
from controlplane.kube.quantities import cpu_millicores, memory_bytes

TODAY = date(2026, 1, 1)


@pytest.mark.parametrize(
    "name, vcpus, memory_gib, gpus, gpu_model",
    [
        ("Standard_DS3_v2", 4, 14, 0, None),
        ("Standard_F4s_v2", 4, 8, 0, None),
        ("Standard_NC6s_v3", 6, 112, 1, "NVIDIA V100"),
        ("Standard_NC24ads_A100_v4", 24, 220, 1, "NVIDIA A100 80GB"),
        ("Standard_ND96asr_v4", 96, 900, 8, "NVIDIA A100 40GB"),
        ("Standard_DS11_v2", 2, 14, 0, None),
        ("Standard_E4s_v3", 4, 32, 0, None),
        ("Standard_NC4as_T4_v3", 4, 28, 1, "NVIDIA T4"),
        ("Standard_NC64as_T4_v3", 64, 440, 4, "NVIDIA T4"),
        ("Standard_ND40rs_v2", 40, 672, 8, "NVIDIA V100 32GB"),
        ("Standard_NC24rs_v3", 24, 448, 4, "NVIDIA V100"),
        ("Standard_NV12s_v3", 12, 112, 1, "NVIDIA M60"),
        ("Standard_NC6", 6, 56, 1, "NVIDIA K80"),
        ("Standard_M8ms", 8, 218.75, 0, None),
        ("Standard_M128ms", 128, 3892, 0, None),
        ("Standard_FX48mds", 48, 1008, 0, None),
        ("Standard_HB120-16rs_v3", 16, 448, 0, None),
        ("Standard_DS13-4_v2", 4, 56, 0, None),
        ("Standard_E96as_v4", 96, 672, 0, None),
        ("Standard_A0", 1, 0.75, 0, None),
        ("Standard_ND96isr_H100_v5", 96, 1900, 8, "NVIDIA H100 80GB"),
    ],
)
def test_size_facts(name, vcpus, memory_gib, gpus, gpu_model):
    size = vmsizes.vm_size(name)
    assert (size.name, size.vcpus, size.memory_gib, size.gpus, size.gpu_model) == (name, vcpus, memory_gib, gpus, gpu_model)


@pytest.mark.parametrize("spelling", ["Standard_DS3_v2", "STANDARD_DS3_V2", "standard_ds3_v2", " Standard_DS3_v2 ", "DS3_v2"])
def test_lookup_ignores_case_spaces_and_the_prefix(spelling):
    assert vmsizes.vm_size(spelling).name == "Standard_DS3_v2"
    assert vmsizes.size_shape(spelling).name == "Standard_DS3_v2"


@pytest.mark.parametrize("name", ["Standard_DS7_v2", "Standard_B2s", "gpu-large", "", "Standard_"])
def test_unknown_size_has_no_facts_and_no_shape(name):
    assert vmsizes.vm_size(name) is None
    assert vmsizes.size_shape(name) is None


def test_every_size_belongs_to_a_series_and_is_spelled_once():
    assert [size.name for size in vmsizes.SIZES if vmsizes.series_of_size(size.name) is None] == []
    keys = [size.name.lower() for size in vmsizes.SIZES]
    assert len(keys) == len(set(keys))
    assert all(size.name.startswith("Standard_") for size in vmsizes.SIZES)


def test_every_series_lists_sizes_and_gpu_series_have_gpus():
    for series in vmsizes.SERIES:
        sizes = vmsizes.sizes_of(series)
        assert sizes, series.name
        assert all((size.gpus > 0) == series.gpu and bool(size.gpu_model) == series.gpu for size in sizes), series.name


def test_every_isolated_size_is_in_the_table():
    assert all(vmsizes.vm_size(name) for name in vmsizes.ISOLATED_SIZES)


# The reserve formula, row by row against AKS's published table (CPU) and its bracket examples (memory).
@pytest.mark.parametrize("vcpus, millicores", [(1, 60), (2, 100), (4, 140), (8, 180), (16, 260), (32, 420), (64, 740),
                                               (6, 160), (24, 340), (96, 1060), (128, 1380)])
def test_kube_reserved_cpu(vcpus, millicores):
    assert reserve.kube_reserved_millicores(vcpus) == millicores


@pytest.mark.parametrize(
    "memory_gib, mib",
    [
        (0.75, 192),          # 25% of what there is
        (4, 1024),            # 25% of the first 4 GiB
        (7, 1638),            # + 20% of 3 GiB = 614.4, rounded down
        (8, 1843),            # 1024 + 819.2
        (14, 2457),           # + 10% of 6 GiB
        (16, 2662),           # 1024 + 819.2 + 819.2
        (128, 9543),          # + 6% of 112 GiB = 6881.28
        (900, 25354),         # + 2% of 772 GiB = 15810.56
        (218.75, 11402),      # + 2% of 90.75 GiB = 1858.56
    ],
)
def test_kube_reserved_memory(memory_gib, mib):
    assert reserve.kube_reserved_mib(memory_gib) == mib


@pytest.mark.parametrize("memory_gib, mib", [(14, 1076), (8, 615), (0.75, 58), (900, 69120)])
def test_vm_overhead_is_seven_and_a_half_percent_rounded_up(memory_gib, mib):
    assert reserve.vm_overhead_mib(memory_gib) == mib


@pytest.mark.parametrize(
    "vcpus, memory_gib, allocatable, room",
    [
        # 4000-140 m; 14336 - 1076 overhead - 2457 kube-reserved - 750 eviction; then less 550m / 1088Mi
        (4, 14, (3860, 10053), (3310, 8965)),
        (1, 3.5, (940, 1669), (390, 581)),
        (96, 900, (94940, 826376), (94390, 825288)),
        (1, 1.75, (940, 459), None),   # Standard_A1: nothing left for a pod
        (1, 0.75, (940, -232), None),  # Standard_A0
    ],
)
def test_node_allocatable_and_whole_node_room(vcpus, memory_gib, allocatable, room):
    assert reserve.node_allocatable(vcpus, memory_gib) == allocatable
    assert reserve.whole_node_room(vcpus, memory_gib) == room


def test_sidecar_room_matches_the_outputs_uploader():
    assert cpu_millicores(SMALL["requests"]["cpu"]) == reserve.SIDECAR_MILLICORES
    assert memory_bytes(SMALL["requests"]["memory"]) == reserve.SIDECAR_MIB * 1024 * 1024


@pytest.mark.parametrize(
    "name, cpu, memory, gpus",
    [
        ("Standard_DS3_v2", "3310m", "8965Mi", None),
        ("Standard_F4s_v2", "3310m", "3896Mi", None),
        ("Standard_DS11_v2", "1350m", "8965Mi", None),
        ("Standard_E4s_v3", "3310m", "24827Mi", None),
        ("Standard_NC6s_v3", "5290m", "95688Mi", 1),
        ("Standard_NC4as_T4_v3", "3310m", "21284Mi", 1),
        ("Standard_NC24ads_A100_v4", "23110m", "195119Mi", 1),
        ("Standard_ND96asr_v4", "94390m", "825288Mi", 8),
    ],
)
def test_size_shape(name, cpu, memory, gpus):
    shape = vmsizes.size_shape(name)
    assert shape.name == name
    assert shape.node_selector == {vmsizes.INSTANCE_TYPE_LABEL: name}
    assert shape.resources() == {
        "requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory, "nvidia.com/gpu": gpus},
    }


def test_every_shape_fits_inside_its_node():
    for size in vmsizes.SIZES:
        shape = vmsizes.size_shape(size.name)
        if shape is None:
            continue
        millicores, memory = shape.millicores()[1], shape.memory()[1]
        assert 0 < millicores < size.vcpus * 1000 and 0 < memory < size.memory_gib * 1024**3, size.name
        assert shape.requests == shape.limits and shape.gpu == size.gpus


def test_only_the_smallest_shared_core_sizes_have_no_shape():
    assert [size.name for size in vmsizes.SIZES if vmsizes.size_shape(size.name) is None] == ["Standard_A0", "Standard_A1"]


def test_size_rows_are_by_series_then_size():
    rows = vmsizes.size_rows(TODAY)
    order = [series.name for series in vmsizes.SERIES]
    keys = [(order.index(row["series"]), row["vcpus"], row["memory_gib"]) for row in rows]
    assert keys == sorted(keys) and len(rows) == len(vmsizes.SIZES)
    ds3 = next(row for row in rows if row["name"] == "Standard_DS3_v2")
    assert ds3 == {
        "name": "Standard_DS3_v2", "series": "DSv2", "category": "general_purpose", "vcpus": 4, "memory_gib": 14,
        "gpus": 0, "gpu_model": None, "retired": False, "supported_in": ["compute_cluster", "compute_instance"],
        "shape": {"requests": {"cpu": "3310m", "memory": "8965Mi"},
                  "limits": {"cpu": "3310m", "memory": "8965Mi", "nvidia.com/gpu": None}},
    }
    assert next(row for row in rows if row["name"] == "Standard_A1")["shape"] is None


@pytest.mark.parametrize("today, retired", [(date(2023, 8, 30), False), (date(2023, 8, 31), True)])
def test_size_rows_follow_the_retirement_date(today, retired):
    assert vmsizes.size_row(vmsizes.vm_size("Standard_NC6"), today)["retired"] is retired
