"""The studio's VM-size catalog page: each series with its sizes' vCPUs, memory, GPUs and whole-node pod shape."""
import re

import pytest
from django.test import Client

from compute import vmsizes

PAGE = "/vm-sizes/"


def size_row(html: str, name: str) -> list[str]:
    """The cells of one size's row, as text."""
    row = re.search(rf'<tr data-size="{re.escape(name)}">(.*?)</tr>', html, re.S).group(1)
    return [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]


def test_every_size_is_on_the_page_with_its_facts_and_shape(owner_client):
    html = owner_client.get(PAGE).content.decode()
    assert html.count("<tr data-size=") == len(vmsizes.SIZES)
    assert size_row(html, "Standard_DS3_v2") == ["Standard_DS3_v2", "4", "14", "—", "3310m · 8965Mi"]
    assert size_row(html, "Standard_ND96asr_v4") == ["Standard_ND96asr_v4", "96", "900", "8 × NVIDIA A100 40GB",
                                                     "94390m · 825288Mi"]
    assert size_row(html, "Standard_M8ms")[2] == "218.75"
    assert size_row(html, "Standard_A0")[4] == "too small for a pod"
    assert "retired 2023-08-31" in html and "compute clusters only" in html


@pytest.mark.parametrize(
    "query, series",
    [
        ({"series": "ncv3"}, ["NCv3"]),
        ({"gpu": "true", "series": "NCT4_v3"}, ["NCasT4_v3"]),
        ({"gpu": "false", "series": "NCv3"}, []),
        ({"supported_in": "compute_instance", "series": "FX"}, []),
        ({"supported_in": "elsewhere", "series": "FX"}, ["FX"]),  # a value the page never offers: no filter
    ],
)
def test_filters(owner_client, query, series):
    html = owner_client.get(PAGE, query).content.decode()
    assert re.findall(r'<tbody data-series="([^"]+)"', html) == series
    assert ("No series matches these filters." in html) == (not series)


def test_the_compute_hub_links_to_the_catalog(owner_client, workspace):
    assert 'href="/vm-sizes/"' in owner_client.get("/w/team-a/compute/").content.decode()


def test_signed_out_visitors_are_sent_to_sign_in(db):
    response = Client().get(PAGE)
    assert response.status_code == 302 and response["Location"].startswith("/login/")
