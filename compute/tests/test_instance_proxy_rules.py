"""The browser proxy's rules (pure): routes, what goes upstream, what comes back, the API server's rewriting undone."""
import gzip
import zlib

import pytest

from compute.instance_proxy import rules
from compute.instance_proxy.rules import BodyFilter, Route

PREFIX = "/api/v1/namespaces/ml/services/ci-ci:jupyter/proxy"
TOKEN = "t" * 43


@pytest.mark.parametrize(("path", "expected"), [
    ("/instances/ws/ci/jupyter/api/status", Route("ws", "ci", "jupyter", "/api/status")),
    ("/instances/ws/ci/jupyter/", Route("ws", "ci", "jupyter", "/")),
    ("/instances/ws/ci/jupyter", Route("ws", "ci", "jupyter", "")),
    ("/instances/ws/ci/vscode/static/a%20b.js", Route("ws", "ci", "vscode", "/static/a%20b.js")),
    ("/instances/ws/ci/rstudio/", None),  # not an app Dockyard serves
    ("/instances/ws/ci", None),
    ("/instances/../ci/jupyter/", None),
    ("/instances/ws/%2e%2e/jupyter/", None),
    ("/api/v1/workspaces", None),
])
def test_routes(path, expected):
    assert rules.route(path) == expected


@pytest.mark.parametrize(("target", "expected"), [
    (Route("ws", "ci", "jupyter", "/api/status"), "/instances/ws/ci/jupyter/api/status"),  # Jupyter's base_url
    (Route("ws", "ci", "jupyter", ""), "/instances/ws/ci/jupyter/"),
    (Route("ws", "ci", "vscode", "/static/x.js"), "/static/x.js"),  # code-server at its root
    (Route("ws", "ci", "vscode", ""), "/"),
])
def test_upstream_paths(target, expected):
    assert rules.upstream_path(target) == expected


@pytest.mark.parametrize(("query", "token", "expected"), [
    ("", TOKEN, f"token={TOKEN}"),
    ("content=1", TOKEN, f"content=1&token={TOKEN}"),
    ("token=mine&x=1", TOKEN, f"x=1&token={TOKEN}"),  # a token the browser sent is not passed on
    ("a=1", None, "a=1"),
])
def test_the_token_goes_in_the_upstream_query(query, token, expected):
    assert rules.upstream_query(query, token) == expected


def test_request_headers_leave_dockyards_credentials_behind():
    sent = [(b"Host", b"dockyard.example"), (b"Cookie", b"sessionid=s3; csrftoken=c; _xsrf=x"),
            (b"Authorization", b"Bearer api-token"), (b"Origin", b"https://dockyard.example"),
            (b"Accept-Encoding", b"br, zstd"), (b"X-Forwarded-For", b"1.2.3.4"), (b"Content-Type", b"application/json"),
            (b"Sec-WebSocket-Key", b"k"), (b"Connection", b"upgrade")]
    out = rules.request_headers(sent, {"sessionid", "csrftoken"}, {"code-server-session": "h"},
                                {"Host": "10.0.0.1:6443", "Authorization": "Bearer cluster"})
    assert out == [("content-type", "application/json"), ("cookie", "_xsrf=x; code-server-session=h"),
                   ("accept-encoding", "gzip, deflate"), ("host", "10.0.0.1:6443"), ("authorization", "Bearer cluster")]


@pytest.mark.parametrize(("location", "expected"), [
    (f"{PREFIX}/instances/ws/ci/jupyter/lab", "/instances/ws/ci/jupyter/lab"),
    ("/instances/ws/ci/jupyter/lab", "/instances/ws/ci/jupyter/lab"),
    (f"/instances/ws/ci/jupyter/api/status?token={TOKEN}", "/instances/ws/ci/jupyter/api/status"),
    (f"{PREFIX}/x?a=1&token={TOKEN}#h", "/x?a=1#h"),
    ("https://elsewhere.example/", "https://elsewhere.example/"),
])
def test_locations_come_back_on_the_route_without_the_token(location, expected):
    headers = rules.response_headers([("Location", location)], Route("ws", "ci", "jupyter", "/"), PREFIX, set(), False,
                                     (TOKEN,))
    assert headers == [(b"location", expected.encode())]


def test_response_headers_drop_hop_by_hop_and_say_no_encoding_when_the_body_is_rewritten():
    headers = [("Content-Type", "text/html"), ("Content-Encoding", "gzip"), ("Content-Length", "10"),
               ("Transfer-Encoding", "chunked"), ("Connection", "keep-alive"), ("X-Other", "1")]
    kept = rules.response_headers(headers, Route("ws", "ci", "jupyter", "/"), PREFIX, set(), True)
    assert kept == [(b"content-type", b"text/html"), (b"x-other", b"1")]
    passed = rules.response_headers(headers, Route("ws", "ci", "jupyter", "/"), PREFIX, set(), False)
    assert (b"content-encoding", b"gzip") in passed


@pytest.mark.parametrize(("content_type", "encoding", "kube", "expected"), [
    ("text/html; charset=utf-8", "", True, [(TOKEN.encode(), b""), (PREFIX.encode() + b"/", b"/")]),
    ("text/html", "gzip", False, [(TOKEN.encode(), b"")]),  # a local server: nothing was rewritten
    ("application/json", "", True, [(TOKEN.encode(), b"")]),  # the API server rewrites HTML only
    ("application/javascript", "deflate", True, [(TOKEN.encode(), b"")]),
    ("image/png", "", True, []),
    ("application/octet-stream", "", True, []),  # a download passes as it is
    ("text/html", "br", True, []),  # not an encoding the proxy asked for, nor one the API server rewrites
])
def test_what_is_replaced_in_a_body(content_type, encoding, kube, expected):
    assert rules.body_replacements(content_type, encoding, PREFIX if kube else "", (TOKEN,)) == expected


PAGE = (f'<link href="{PREFIX}/instances/ws/ci/jupyter/static/a.css"><body data-jupyter-api-token="{TOKEN}">'
        f'<a href="{PREFIX}/instances/ws/ci/jupyter/tree/">x</a><a href="relative/">y</a>').encode()
CLEAN = (b'<link href="/instances/ws/ci/jupyter/static/a.css"><body data-jupyter-api-token="">'
         b'<a href="/instances/ws/ci/jupyter/tree/">x</a><a href="relative/">y</a>')
REPLACEMENTS = [(TOKEN.encode(), b""), (PREFIX.encode() + b"/", b"/")]


def run(body_filter: BodyFilter, data: bytes, size: int) -> bytes:
    out = b"".join(body_filter.feed(data[at:at + size]) for at in range(0, len(data), size))
    return out + body_filter.close()


@pytest.mark.parametrize("size", [1, 2, 7, 31, 64, 1000])
def test_a_page_is_cleaned_whatever_the_chunks(size):
    assert run(BodyFilter(REPLACEMENTS), PAGE, size) == CLEAN


@pytest.mark.parametrize("size", [1, 13, 4096])
def test_gzip_and_raw_deflate_pages_are_decoded_and_cleaned(size):
    assert run(BodyFilter(REPLACEMENTS, "gzip"), gzip.compress(PAGE), size) == CLEAN
    raw = zlib.compressobj(wbits=-15)
    assert run(BodyFilter(REPLACEMENTS, "deflate"), raw.compress(PAGE) + raw.flush(), size) == CLEAN
    assert run(BodyFilter(REPLACEMENTS, "deflate"), zlib.compress(PAGE), size) == CLEAN  # zlib-wrapped deflate


def test_a_partial_pattern_at_the_end_is_kept():
    assert run(BodyFilter(REPLACEMENTS), PREFIX.encode()[:20], 5) == PREFIX.encode()[:20]


@pytest.mark.parametrize(("content_type", "text"), [
    ("text/html", True), ("text/css", True), ("application/json", True), ("application/vnd.api+json", True),
    ("application/javascript; charset=utf-8", True), ("image/svg+xml", True), ("image/png", False),
    ("application/zip", False), ("", False),
])
def test_what_counts_as_text(content_type, text):
    assert rules.is_text(content_type) is text


@pytest.mark.parametrize(("body", "status"), [
    (b'{"kind":"Status","apiVersion":"v1","status":"Failure","code":503}', True),
    (b'{"message": "file not found"}', False),
    (b"not json", False),
    (b"[]", False),
])
def test_a_kubernetes_status_is_told_apart(body, status):
    assert rules.is_kube_status(body) is status
