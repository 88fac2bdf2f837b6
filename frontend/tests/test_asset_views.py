"""The studio's Assets page: the latest version of each environment, model and data, for every member (test_asset_pages.py has the rest)."""
import io

import pytest

from assets import registry
from assets.services import upload_create
from assets.tests.support import targz

PAGE = "/w/team-a/assets/"


@pytest.fixture
def assets(owner, workspace):
    for version in ("1", "2"):
        registry.environment_create(user=owner, workspace=workspace, data={
            "name": "train-env", "version": version, "image": f"team/train:{version}"})
    snapshot, _ = upload_create(user=owner, workspace=workspace, body=io.BytesIO(targz({"m.pkl": b"w"})),
                                content_type="application/gzip")
    registry.model_create(user=owner, workspace=workspace, data={"name": "my-model", "version": 3, "path": snapshot.path})
    return snapshot


def test_a_reader_sees_the_latest_version_of_each_asset(client_as, assets):
    response = client_as("reader").get(PAGE)
    assert response.status_code == 200
    body = response.content.decode()
    assert "team/train:2" in body and "team/train:1" not in body
    assert assets.path in body and "custom_model" in body
    assert "No data registered yet." in body
    assert 'href="/w/team-a/assets/"' in body  # the navigation links it


def test_an_outsider_gets_404(client_as, assets):
    assert client_as("outsider").get(PAGE).status_code == 404


def test_the_page_takes_few_queries(client_as, assets, django_assert_max_num_queries):
    client = client_as("reader")
    client.get(PAGE)
    with django_assert_max_num_queries(14):
        client.get(PAGE)
