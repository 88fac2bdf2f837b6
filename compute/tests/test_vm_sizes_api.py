"""The VM-size catalog's sizes: `vm_size_list` and the API's size rows (each series' `sizes`, one size's page)."""
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest
from rest_framework.test import APIClient

from compute import selectors, vmsizes
from tests.support import assert_error

DS3 = {
    "name": "Standard_DS3_v2", "series": "DSv2", "category": "general_purpose", "vcpus": 4, "memory_gib": 14,
    "gpus": 0, "gpu_model": None, "retired": False, "supported_in": ["compute_cluster", "compute_instance"],
    "shape": {"requests": {"cpu": "3310m", "memory": "8965Mi"},
              "limits": {"cpu": "3310m", "memory": "8965Mi", "nvidia.com/gpu": None}},
}


def names(**filters) -> list[str]:
    return [row["name"] for row in selectors.vm_size_list(**filters)]


def test_vm_size_list_has_every_size_by_series_then_size():
    rows = selectors.vm_size_list()
    assert len(rows) == len(vmsizes.SIZES)
    assert next(row for row in rows if row["name"] == "Standard_DS3_v2") == DS3
    series_order = [series.name for series in vmsizes.SERIES]
    assert [row["series"] for row in rows] == sorted((row["series"] for row in rows), key=series_order.index)
    dsv2 = names(series="DSv2")
    # by vCPUs, then memory
    assert dsv2[:6] == ["Standard_DS1_v2", "Standard_DS11-1_v2", "Standard_DS12-1_v2", "Standard_DS2_v2",
                        "Standard_DS11_v2", "Standard_DS12-2_v2"]
    assert dsv2[-1] == "Standard_DS15_v2"


@pytest.mark.parametrize(
    "filters, expected",
    [
        ({"series": "NDasrA100_v4"}, ["Standard_ND96asr_v4"]),
        ({"series": "nda100_v4"}, ["Standard_ND96asr_v4"]),  # the seed's CUDA-table alias, any case
        ({"series": "NCT4_v3"}, ["Standard_NC4as_T4_v3", "Standard_NC8as_T4_v3", "Standard_NC16as_T4_v3",
                                 "Standard_NC64as_T4_v3"]),
        ({"series": "NCadsA100_v4", "gpu": True}, ["Standard_NC24ads_A100_v4", "Standard_NC48ads_A100_v4",
                                                   "Standard_NC96ads_A100_v4"]),
        ({"series": "NCadsA100_v4", "gpu": False}, []),
        ({"series": "FX", "supported_in": "compute_instance"}, []),
        ({"series": "FX", "supported_in": "compute_cluster"}, ["Standard_FX4mds", "Standard_FX12mds", "Standard_FX24mds",
                                                               "Standard_FX36mds", "Standard_FX48mds"]),
        ({"series": "Zv9"}, []),
        ({"supported_in": "somewhere"}, []),
    ],
)
def test_vm_size_list_filters(filters, expected):
    assert names(**filters) == expected


def test_vm_size_list_gpu_filter_splits_the_sizes():
    gpu, cpu = selectors.vm_size_list(gpu=True), selectors.vm_size_list(gpu=False)
    assert len(gpu) + len(cpu) == len(vmsizes.SIZES)
    assert all(row["gpus"] > 0 and row["shape"]["limits"]["nvidia.com/gpu"] == row["gpus"] for row in gpu)
    assert all(row["gpus"] == 0 and row["gpu_model"] is None for row in cpu)


def test_vm_size_list_retired_follows_the_date(monkeypatch):
    monkeypatch.setattr(selectors, "timezone", SimpleNamespace(now=lambda: datetime(2024, 1, 1, tzinfo=UTC)))
    rows = {row["name"]: row for row in selectors.vm_size_list(series="Av1") + selectors.vm_size_list(series="NC")}
    assert rows["Standard_A2"]["retired"] is False and rows["Standard_NC6"]["retired"] is True
    assert rows["Standard_A1"]["shape"] is None


@pytest.mark.parametrize("spelling", ["Standard_NC6s_v3", "standard_nc6s_v3", "STANDARD_NC6S_V3", "NC6s_v3"])
def test_vm_size_get_any_spelling(spelling):
    row = selectors.vm_size_get(name=spelling)
    assert (row["name"], row["series"], row["gpus"], row["gpu_model"]) == ("Standard_NC6s_v3", "NCv3", 1, "NVIDIA V100")


@pytest.mark.parametrize("name", ["Standard_DS7_v2", "Standard_Q99", ""])
def test_vm_size_get_unknown(name):
    assert selectors.vm_size_get(name=name) is None


# over the API

VM_SIZES = "/api/v1/vm-sizes/"


def series_rows(owner_api, **query) -> dict[str, dict]:
    response = owner_api.get(VM_SIZES, query)
    assert response.status_code == 200
    return {row["series"]: row for row in response.json()["results"]}


def test_each_series_lists_its_sizes_compactly(owner_api):
    rows = series_rows(owner_api)
    assert sum(len(row["sizes"]) for row in rows.values()) == len(vmsizes.SIZES)
    ds3 = next(size for size in rows["DSv2"]["sizes"] if size["name"] == "Standard_DS3_v2")
    assert ds3 == {key: DS3[key] for key in ("name", "vcpus", "memory_gib", "gpus", "gpu_model", "shape")}
    assert [size["name"] for size in rows["NDasrA100_v4"]["sizes"]] == ["Standard_ND96asr_v4"]
    assert rows["NDasrA100_v4"]["sizes"][0]["shape"]["limits"]["nvidia.com/gpu"] == 8
    assert next(size for size in rows["Av1"]["sizes"] if size["name"] == "Standard_A0")["shape"] is None
    assert {size["memory_gib"] for size in rows["M"]["sizes"]} >= {218.75, 437.5, 3892}


@pytest.mark.parametrize("spelling", ["Standard_NC6s_v3", "standard_nc6s_v3", "STANDARD_NC6S_V3", "NC6s_v3"])
def test_the_size_filter_ignores_case(owner_api, spelling):
    assert list(series_rows(owner_api, size=spelling)) == ["NCv3"]


def test_the_list_takes_a_fixed_number_of_queries(owner_api, django_assert_max_num_queries):
    owner_api.get(VM_SIZES)  # the session's first request loads the user
    with django_assert_max_num_queries(2):
        assert owner_api.get(VM_SIZES).status_code == 200


@pytest.mark.parametrize("spelling", ["Standard_DS3_v2", "standard_ds3_v2", "STANDARD_DS3_V2", "DS3_v2"])
def test_one_size(owner_api, spelling):
    response = owner_api.get(f"{VM_SIZES}{spelling}/")
    assert response.status_code == 200
    assert response.json() == DS3
    assert response["ETag"] == owner_api.get(f"{VM_SIZES}Standard_DS3_v2/")["ETag"]


def test_one_gpu_size(owner_api):
    body = owner_api.get(f"{VM_SIZES}Standard_NC24ads_A100_v4/").json()
    assert (body["series"], body["vcpus"], body["memory_gib"], body["gpus"], body["gpu_model"]) == (
        "NCadsA100_v4", 24, 220, 1, "NVIDIA A100 80GB")
    assert body["shape"] == {"requests": {"cpu": "23110m", "memory": "195119Mi"},
                             "limits": {"cpu": "23110m", "memory": "195119Mi", "nvidia.com/gpu": 1}}


@pytest.mark.parametrize(
    "size, message",
    [
        ("Standard_DS7_v2", "'Standard_DS7_v2' is not a size of the DSv2 series that Dockyard knows"),
        ("Standard_Q99", "'Standard_Q99' is not a VM size of a series Dockyard supports"),
    ],
)
def test_an_unknown_size_is_404_saying_why(owner_api, size, message):
    error = assert_error(owner_api.get(f"{VM_SIZES}{size}/"), 404, "NotFound")
    assert error["message"].startswith(message)


def test_the_catalog_needs_a_signed_in_user(db):
    assert_error(APIClient().get(f"{VM_SIZES}Standard_DS3_v2/"), 401, "Unauthorized")
