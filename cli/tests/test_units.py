"""The CLI's pure parts and its HTTP handling, without a server (httpx's MockTransport stands in)."""
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import httpx
import pytest

from cli.client import ApiClient
from cli.config import Connection, normalise_url
from cli.documents import apply_assignments
from cli.errors import ApiError, CliError, ConnectionFailed
from cli.output import Column, field, table_lines
from cli.resources.base import contains
from cli.resources.instancetype import differences, fits_cell, item_document, quantity

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("http://dock:8000", "http://dock:8000"),
        ("http://dock:8000/", "http://dock:8000"),
        ("https://dock.example.com/api/v1/", "https://dock.example.com"),
        ("https://example.com/dockyard/api/v1", "https://example.com/dockyard"),
    ],
)
def test_normalise_url(given, expected):
    assert normalise_url(given) == expected


def test_normalise_url_refuses_other_schemes():
    with pytest.raises(CliError) as error:
        normalise_url("dock:8000")
    assert error.value.exit_code == 2


@pytest.mark.parametrize(
    ("assignments", "expected"),
    [
        (["max_instances=4"], {"name": "a", "max_instances": 4}),
        (["tier=low_priority", "tags.team=vision"], {"name": "a", "tier": "low_priority", "tags": {"team": "vision"}}),
        (["node_selector.kubernetes\\.io/os=linux"], {"name": "a", "node_selector": {"kubernetes.io/os": "linux"}}),
        (["description="], {"name": "a", "description": ""}),
        (["enabled=true", "label='007'"], {"name": "a", "enabled": True, "label": "007"}),
    ],
)
def test_set_assignments(assignments, expected):
    assert apply_assignments({"name": "a"}, assignments) == expected


def test_set_into_a_scalar_is_a_usage_error():
    with pytest.raises(CliError) as error:
        apply_assignments({"name": "a"}, ["name.first=b"])
    assert error.value.exit_code == 2


@pytest.mark.parametrize(
    ("current", "desired", "expected"),
    [
        (2, 2, True),
        (2, 3, False),
        ({"a": 1, "default": 2}, {"a": 1}, True),  # the API fills in defaults
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ([{"x": 1, "y": 2}], [{"x": 1}], True),
        ([{"x": 1}], [{"x": 1}, {"x": 2}], False),
        (None, {}, False),
    ],
)
def test_contains(current, desired, expected):
    assert contains(current, desired) is expected


def test_table_pads_columns_and_marks_empty_cells():
    columns = [Column("NAME", field("name")), Column("SIZE", field("size")), Column("TAGS", field("tags"))]

    lines = table_lines([{"name": "cpu-cluster", "size": "Standard_DS3_v2", "tags": {"a": "b"}}, {"name": "k8s"}], columns)

    assert lines == [
        "NAME         SIZE             TAGS",
        'cpu-cluster  Standard_DS3_v2  {"a":"b"}',
        "k8s          -                -",
    ]


@pytest.mark.parametrize(
    ("text", "value"),
    [("500m", "0.5"), ("1", "1"), (2, "2"), ("1.5", "1.5"), ("1500Mi", str(1500 * 2**20)), ("2Gi", str(2 * 2**30)),
     ("1e3", "1000"), ("1k", "1000"), ("2x", None), ("", None), (True, None), (None, None)],
)
def test_quantity(text, value):
    assert quantity(text) == (None if value is None else Decimal(value))


ROW = {"name": "small", "nodeSelector": {"pool": "a"}, "source": "dockyard",
       "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": None}}}


def test_differences_compare_quantities_by_value_and_gpus_missing_as_zero():
    same = {"kind": "InstanceType", "metadata": {"name": "small"}, "spec": {"nodeSelector": {"pool": "a"}, "resources": {
        "requests": {"cpu": "0.5", "memory": "1024Mi"}, "limits": {"cpu": 1, "memory": "1Gi", "nvidia.com/gpu": 0}}}}
    assert differences(same, ROW) == []

    changed = {"name": "small", "resources": {"requests": {"cpu": "500m"}, "limits": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": 1}}}
    assert differences(changed, {**ROW, "source": "cluster"}) == [
        "nodeSelector", "resources.requests.memory", "resources.limits.cpu", "resources.limits.nvidia.com/gpu",
        "source (adopted from the cluster)",
    ]


def test_a_list_item_becomes_an_instance_type_of_its_own():
    listed = {"apiVersion": "amlarc.azureml.com/v1alpha1", "kind": "InstanceTypeList", "items": []}
    item = {"metadata": {"name": "a"}, "spec": {}}

    assert item_document(listed, item) == {"apiVersion": "amlarc.azureml.com/v1alpha1", "kind": "InstanceType", **item}
    assert item_document(listed, {"name": "flat"}) == {"name": "flat"}


@pytest.mark.parametrize(
    ("row", "cell"),
    [({"fits_nodes": ["a", "b"], "warnings": []}, "2"), ({"fits_nodes": [], "warnings": ["No node can host it"]}, "none!"),
     ({"fits_nodes": [], "warnings": []}, "-")],
)
def test_fits_cell(row, cell):
    assert fits_cell(row) == cell


def client_answering(handler) -> ApiClient:
    return ApiClient(Connection(url="http://dock.test", token="dy_secret"), transport=httpx.MockTransport(handler))


def test_pagination_follows_next_on_our_own_server_only():
    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        if request.url.params.get("page") == "2":
            return httpx.Response(200, json={"count": 2, "next": None, "results": [{"name": "b"}]})
        # Behind a proxy Django may build `next` with another host or scheme; the token must not follow it there.
        return httpx.Response(200, json={"count": 2, "next": "http://elsewhere:9/api/v1/things/?page=2", "results": [{"name": "a"}]})

    assert client_answering(handler).list_all("things/") == [{"name": "a"}, {"name": "b"}]
    assert seen == ["http://dock.test/api/v1/things/", "http://dock.test/api/v1/things/?page=2"]


def test_rate_limited_requests_are_retried_after_the_servers_delay():
    answers = iter([httpx.Response(429, headers={"Retry-After": "0"}, json={"error": {"code": "TooManyRequests", "message": "Slow down."}}),
                    httpx.Response(200, json={"ok": True})])

    assert client_answering(lambda request: next(answers)).get("things/").body == {"ok": True}


def test_an_error_without_the_contracts_shape_still_reads_well():
    with pytest.raises(ApiError) as error:
        client_answering(lambda request: httpx.Response(502, text="<html>Bad gateway</html>")).get("things/")

    assert error.value.lines() == ["Error (Http502): The server answered 502 Bad Gateway to GET http://dock.test/api/v1/things/."]
    assert error.value.exit_code == 1


def test_a_timeout_exits_3_and_names_the_server():
    def handler(request):
        raise httpx.ReadTimeout("slow", request=request)

    with pytest.raises(ConnectionFailed) as error:
        client_answering(handler).get("things/")

    assert error.value.exit_code == 3
    assert error.value.lines() == ["Error (Timeout): Timed out after 30s waiting for http://dock.test."]


def test_a_refused_token_means_not_logged_in():
    body = {"error": {"code": "Unauthorized", "message": "The token is unknown, revoked or expired.", "details": []}}

    with pytest.raises(ApiError) as error:
        client_answering(lambda request: httpx.Response(401, json=body)).get("things/")

    assert error.value.exit_code == 4


def test_the_cli_never_imports_the_server_code():
    """It talks to the REST API only, so it runs on machines without the server's dependencies."""
    code = "import sys, cli.main; print(sorted({m.split('.')[0] for m in sys.modules} & {'django', 'rest_framework', 'compute', 'workspaces', 'controlplane'}))"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True, timeout=60)

    assert result.stdout.strip() == "[]"


def test_an_error_whose_detail_repeats_its_message_is_printed_once_with_the_target():
    api = ApiError(400, "colour: Unknown field.", code="ValidationError", details=[
        {"target": "colour", "message": "Unknown field."}, {"target": "size", "message": "Not a VM size."}])
    own = CliError("Cannot read k.yml.", code="InvalidFile", details=[{"target": "kubeconfig_file", "message": "Cannot read k.yml."}])
    plain = CliError("Not found.", code="NotFound", details=[{"target": "", "message": "Not found."}])

    assert api.lines() == ["Error (ValidationError): colour: Unknown field.", "  size: Not a VM size."]
    assert own.lines() == ["Error (InvalidFile): Cannot read k.yml."]
    assert plain.lines() == ["Error (NotFound): Not found."]
    assert api.as_dict()["details"][0] == {"target": "colour", "message": "Unknown field."}  # -o json keeps them all
