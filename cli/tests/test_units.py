"""The CLI's pure parts and its HTTP handling, without a server (httpx's MockTransport stands in)."""
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from cli.appliers import contains
from cli.client import ApiClient
from cli.config import Connection, normalise_url
from cli.documents import apply_assignments
from cli.errors import ApiError, CliError, ConnectionFailed
from cli.output import Column, field, table_lines

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
