"""compute/vmsizes: size names to series, and which sizes a new compute may use (the seed's tables)."""
from datetime import date

import pytest

from compute import vmsizes
from compute.vmsizes import CLUSTER, INSTANCE

TODAY = date(2026, 1, 1)


@pytest.mark.parametrize(
    "size, series",
    [
        ("Standard_D4ds_v4", "DDSv4"),
        ("Standard_D2_v2", "Dv2"),
        ("Standard_D4_v3", "Dv3"),
        ("Standard_DS3_v2", "DSv2"),
        ("Standard_DS13-4_v2", "DSv2"),
        ("Standard_D4s_v3", "DSv3"),
        ("Standard_E4as_v4", "EAv4"),
        ("Standard_E4a_v4", "EAv4"),
        ("Standard_E8_v3", "Ev3"),
        ("Standard_E16-4s_v3", "ESv3"),
        ("Standard_F72s_v2", "FSv2"),
        ("Standard_FX4mds", "FX"),
        ("Standard_H16r", "H"),
        ("Standard_H16mr", "H"),
        ("Standard_HB60rs", "HB"),
        ("Standard_HB120rs_v2", "HBv2"),
        ("Standard_HB120-96rs_v3", "HBv3"),
        ("Standard_HC44rs", "HC"),
        ("Standard_L8s_v2", "LSv2"),
        ("Standard_M128ms", "M"),
        ("Standard_M208ms_v2", None),
        ("Standard_NC6", "NC"),
        ("Standard_NC24r", "NC"),
        ("Standard_NC6_Promo", "NC Promo"),
        ("Standard_NC6s_v2", "NCv2"),
        ("Standard_NC6s_v3", "NCv3"),
        ("Standard_NC24rs_v3", "NCv3"),
        ("Standard_ND6s", "ND"),
        ("Standard_ND40rs_v2", "NDv2"),
        ("Standard_NV6", "NV"),
        ("Standard_NV12s_v3", "NVv3"),
        ("Standard_NV6_Promo", "NV_Promo"),
        ("Standard_NC4as_T4_v3", "NCasT4_v3"),
        ("Standard_ND96asr_v4", "NDasrA100_v4"),
        ("Standard_A2", "Av1"),
        ("Standard_NC24ads_A100_v4", "NCadsA100_v4"),
        ("Standard_NC80adis_H100_v5", "NCadsH100_v5"),
        ("Standard_ND96isr_H100_v5", "NDisrH100_v5"),
        # spelling: case, surrounding spaces and a missing prefix do not matter
        ("standard_nc6s_v3", "NCv3"),
        ("  Standard_NC6s_v3 ", "NCv3"),
        ("NC6s_v3", "NCv3"),
        # not in the catalog
        ("Standard_A2_v2", None),
        ("Standard_B2s", None),
        ("Standard_NC6s_v3_extra", None),
        ("", None),
        ("gpu-large", None),
    ],
)
def test_series_of_size(size, series):
    found = vmsizes.series_of_size(size)
    assert (found.name if found else None) == series


@pytest.mark.parametrize(
    "size, target, today, problem",
    [
        ("Standard_DS3_v2", CLUSTER, TODAY, None),
        ("Standard_DS3_v2", INSTANCE, TODAY, None),
        ("Standard_NC6s_v3", INSTANCE, TODAY, None),
        ("Standard_ND96asr_v4", CLUSTER, TODAY, None),
        ("Standard_FX4mds", CLUSTER, TODAY, None),
        ("Standard_FX4mds", INSTANCE, TODAY, "The FX series is not supported for compute instances; it is available for compute clusters only."),
        ("Standard_NC6", CLUSTER, TODAY, "'Standard_NC6' belongs to the NC series, retired on 2023-08-31; pick a size from a current series."),
        ("Standard_NC6_Promo", INSTANCE, TODAY, "retired on 2023-08-31"),
        ("Standard_NC6s_v2", CLUSTER, TODAY, "the NCv2 series, retired on 2023-08-31"),
        ("Standard_ND6s", CLUSTER, TODAY, "the ND series, retired on 2023-08-31"),
        ("Standard_NV6", INSTANCE, TODAY, "the NV series, retired on 2023-08-31"),
        ("Standard_NV6_Promo", INSTANCE, TODAY, "the NV_Promo series, retired on 2023-08-31"),
        ("Standard_A2", CLUSTER, TODAY, "the Av1 series, retired on 2024-08-31"),
        ("Standard_HB60rs", CLUSTER, TODAY, "the HB series, retired on 2024-08-31"),
        # retirement takes effect on its date, not before
        ("Standard_NC6", CLUSTER, date(2023, 8, 30), None),
        ("Standard_NC6", CLUSTER, date(2023, 8, 31), "retired on 2023-08-31"),
        ("Standard_A2", INSTANCE, date(2024, 8, 30), None),
        ("Standard_A2", INSTANCE, date(2024, 8, 31), "retired on 2024-08-31"),
        ("Standard_HB60rs", CLUSTER, date(2024, 8, 30), None),
        ("Standard_Q99", CLUSTER, TODAY, "'Standard_Q99' is not a VM size of a series Dockyard supports; see GET /api/v1/vm-sizes/ for the list."),
        ("", INSTANCE, TODAY, "is not a VM size of a series Dockyard supports"),
        # a size of a known series must be in the table: a compute needs its shape
        ("standard_ds3_v2", CLUSTER, TODAY, None),
        ("NC6s_v3", INSTANCE, TODAY, None),
        ("Standard_NC24ads_A100_v4", CLUSTER, TODAY, None),
        ("Standard_DS7_v2", CLUSTER, TODAY,
         "'Standard_DS7_v2' is not a size of the DSv2 series that Dockyard knows: a compute needs the size's vCPUs, "
         "memory and GPUs to size its pods. Close sizes: Standard_DS5_v2, Standard_DS4_v2, Standard_DS3_v2."),
        ("Standard_NC8s_v3", INSTANCE, TODAY, "not a size of the NCv3 series that Dockyard knows"),
        ("Standard_NC8s_v3", INSTANCE, TODAY, "Close sizes: Standard_NC6s_v3, "),
        ("Standard_A1", CLUSTER, date(2024, 1, 1), "'Standard_A1' is too small: nothing is left for a pod"),
        ("Standard_A2", CLUSTER, date(2024, 1, 1), None),
    ],
)
def test_size_problem(size, target, today, problem):
    found = vmsizes.size_problem(size, target, today)
    assert found is None if problem is None else problem in found


def test_every_isolated_size_belongs_to_a_series():
    assert {name: vmsizes.series_of_size(name).name for name in vmsizes.ISOLATED_SIZES} == {
        "Standard_M128ms": "M", "Standard_F72s_v2": "FSv2", "Standard_NC24s_v3": "NCv3", "Standard_NC24rs_v3": "NCv3",
    }


def test_series_names_and_aliases_are_unambiguous():
    keys = [key.lower() for series in vmsizes.SERIES for key in (series.name, *series.aliases)]
    assert len(keys) == len(set(keys))
