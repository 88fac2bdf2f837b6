"""What the proxies do to answers (HTML links, Location, CORS, gzip) and Upgrade passthrough, as kube-apiserver does."""
import gzip
import json
import threading

import pytest
from kubernetes import client
from websockets.sync.client import connect
from websockets.sync.server import serve

from .backends import wsgi_backend
from .proxy_html import rewrite_html, rewrite_url
from .server import ADMIN_TOKEN
from .test_pod_proxy import NAMESPACE, call, pod_path

PREFIX = "/api/v1/namespaces/ns/services/ci-nb:jupyter/proxy"
POD = "10.244.1.5:8888"
API = "127.0.0.1:6443"


@pytest.mark.parametrize("value, expected", [
    ("/static/lab.js", PREFIX + "/static/lab.js"),
    ("/instances/ws/nb/jupyter/", PREFIX + "/instances/ws/nb/jupyter/"),  # trailing slash kept
    ("/a/../b//c", PREFIX + "/b/c"),  # path.Join cleans
    ("/x?a=1&b=2#frag", PREFIX + "/x?a=1&b=2#frag"),  # query and fragment as they were
    ("/a%20b", PREFIX + "/a%20b"),
    ("/a%2Fb", PREFIX + "/a/b"),  # decoded then escaped again: an escaped slash is a slash
    ("/it's", PREFIX + "/it%27s"),  # Go escapes ' ( ) ! * in paths
    (PREFIX + "/already", PREFIX + "/already"),
    (f"http://{POD}/lab", PREFIX + "/lab"),  # the pod's own address: scheme and host dropped
    (f"http://{API}/lab", f"http://{API}{PREFIX}/lab"),  # the apiserver's (the Host header): kept
    ("https://cdn.example.com/x.js", "https://cdn.example.com/x.js"),  # another host
    ("//cdn.example.com/x.js", "//cdn.example.com/x.js"),
    ("static/lab.js", "static/lab.js"),  # relative
    ("./x", "./x"), ("#top", "#top"), ("?q=1", "?q=1"), ("", ""),
    ("mailto:a@b.c", "mailto:a@b.c"), ("javascript:void(0)", "javascript:void(0)"),
    ("/bad%zzescape", "/bad%zzescape"),  # url.Parse fails: left alone
])
def test_rewrite_url(value, expected):
    assert rewrite_url(value, PREFIX, POD, API) == expected


@pytest.mark.parametrize("html, expected", [
    ('<a href="/x">x</a>', f'<a href="{PREFIX}/x">x</a>'),
    ("<A HREF='/x' Class=big>", f'<a href="{PREFIX}/x" class="big">'),  # re-serialised: lower case, double quotes
    ('<div data-config=\'{"a": 1}\'>', '<div data-config="{&#34;a&#34;: 1}">'),  # every start tag
    ('<a href="/x?a=1&amp;b=2">', f'<a href="{PREFIX}/x?a=1&amp;b=2">'),
    ('<a href="/x?a=1&copy=2">', f'<a href="{PREFIX}/x?a=1&amp;copy=2">'),  # &name= is not an entity
    ("<input disabled>", '<input disabled="">'),
    ('<img src="/i.png"/>', f'<img src="{PREFIX}/i.png"/>'),
    ('<link rel="stylesheet" href="/s.css">', f'<link rel="stylesheet" href="{PREFIX}/s.css">'),
    ('<form action="/login" method="post">', f'<form action="{PREFIX}/login" method="post">'),
    ('<script src="/a.js"></script>', f'<script src="{PREFIX}/a.js"></script>'),
    ('<script>var u = "<a href=\'/x\'>";</script>', '<script>var u = "<a href=\'/x\'>";</script>'),  # raw text
    ('<!-- <a href="/x"> -->', '<!-- <a href="/x"> -->'),  # comments copied
    ('<!DOCTYPE html><p>a < b</p></P>', '<!DOCTYPE html><p>a < b</p></P>'),  # end tags copied as they are
    ('<meta http-equiv="refresh" content="0; url=/x">', '<meta http-equiv="refresh" content="0; url=/x">'),
    ('<div style="background: url(/x.png)">', '<div style="background: url(/x.png)">'),  # CSS is not rewritten
    ('<a data-href="/x" href=/y>', f'<a data-href="/x" href="{PREFIX}/y">'),
    ('<video poster="/p.png" src="/v.mp4">', f'<video poster="{PREFIX}/p.png" src="{PREFIX}/v.mp4">'),
    ('<a href="/x"', ""),  # a tag cut off by the end: dropped
])
def test_rewrite_html(html, expected):
    assert rewrite_html(html, lambda url: rewrite_url(url, PREFIX, POD, API)) == expected


PAGE = b'<!DOCTYPE html>\n<html><head><script src="/instances/ws/nb/jupyter/static/lab.js"></script></head>' \
       b'<body><a href="/instances/ws/nb/jupyter/lab?reset">lab</a></body></html>\n'


def html_app(environ, start_response):
    """A page (gzip when /gz), a redirect, JSON with CORS headers."""
    path = environ["PATH_INFO"]
    if path.endswith("/redirect"):
        start_response("302 Found", [("Location", "/instances/ws/nb/jupyter/lab"), ("Content-Type", "text/html")])
        return [b'<a href="/not/rewritten">moved</a>']
    if path.endswith("/json"):
        start_response("200 OK", [("Content-Type", "application/json"), ("Access-Control-Allow-Origin", "*"),
                                  ("Access-Control-Allow-Credentials", "true"), ("Access-Control-Max-Age", "5")])
        return [b'{"href": "/x"}']
    body, headers = PAGE, [("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "max-age=60")]
    if path.endswith("/gz"):
        body, headers = gzip.compress(PAGE), headers + [("Content-Encoding", "gzip")]
    start_response("200 OK", headers)
    return [body]


def raw_get(api, path):
    """GET with the client's own connection pool, not following redirects nor decoding the body."""
    configuration = api.configuration
    response = api.rest_client.pool_manager.request(
        "GET", configuration.host + path, headers={"Authorization": configuration.api_key["BearerToken"]},
        redirect=False, preload_content=False, decode_content=False)
    return response.status, response.headers, response.read(decode_content=False)


@pytest.mark.parametrize("kind, object_id", [("services", "ci-nb:jupyter"), ("pods", "ci-nb-0:8888")])
def test_html_answers_get_the_proxy_prefix(notebook, kube_api, kind, object_id):
    notebook.advance(2)
    prefix = f"/api/v1/namespaces/{NAMESPACE}/{kind}/{object_id}/proxy"
    with wsgi_backend(html_app) as url:
        notebook.serve_pod(NAMESPACE, "ci-nb-0", url)
        page = raw_get(kube_api, prefix + "/instances/ws/nb/jupyter/lab")
        zipped = raw_get(kube_api, prefix + "/instances/ws/nb/jupyter/gz")
        moved = raw_get(kube_api, prefix + "/instances/ws/nb/jupyter/redirect")
        plain = raw_get(kube_api, prefix + "/instances/ws/nb/jupyter/json")
    expected = PAGE.replace(b'"/instances', f'"{prefix}/instances'.encode())
    assert page[0] == 200 and page[2] == expected
    assert page[1].getlist("Cache-Control") == ["no-cache, private", "max-age=60"]  # the apiserver's comes first
    assert zipped[1]["Content-Encoding"] == "gzip" and gzip.decompress(zipped[2]) == expected
    assert (moved[0], moved[1]["Location"]) == (302, f"{prefix}/instances/ws/nb/jupyter/lab")
    assert moved[2] == b'<a href="/not/rewritten">moved</a>'  # with a Location, the body is left alone
    assert plain[2] == b'{"href": "/x"}' and "Access-Control-Allow-Origin" not in plain[1]
    assert "Access-Control-Allow-Credentials" not in plain[1] and plain[1]["Access-Control-Max-Age"] == "5"


@pytest.fixture
def echo_server():
    """A real WebSocket server on 127.0.0.1 that echoes, prefixed with the path and query it was opened with."""
    def handler(connection):
        for message in connection:
            connection.send(f"{connection.request.path} {message}")
    with serve(handler, "127.0.0.1", 0) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield f"http://127.0.0.1:{server.socket.getsockname()[1]}"
        server.shutdown()
    thread.join(timeout=5)


@pytest.mark.parametrize("kind, object_id", [("services", "ci-nb:jupyter"), ("pods", "ci-nb-0:8888")])
def test_websockets_pass_through_without_the_query_string(notebook, echo_server, kind, object_id):
    notebook.advance(2)
    notebook.serve_pod(NAMESPACE, "ci-nb-0", echo_server)
    path = f"/api/v1/namespaces/{NAMESPACE}/{kind}/{object_id}/proxy/api/kernels/k1/channels"
    ws_url = notebook.url.replace("http", "ws", 1) + path + "?session_id=s1"
    with connect(ws_url, additional_headers={"Authorization": "Bearer " + ADMIN_TOKEN}) as ws:
        ws.send("hello")
        first = ws.recv(timeout=10)
        ws.send("again")
        second = ws.recv(timeout=10)
    # kubernetes#77142: the upgrade request goes to h.Location, which carries no query string
    assert (first, second) == ("/api/kernels/k1/channels hello", "/api/kernels/k1/channels again")
    record = notebook.requests.find(resource=kind, subresource="proxy")[-1]
    assert (record.verb, record.status) == ("get", 101)


def test_an_upgrade_the_backend_refuses_or_ignores(notebook, kube_api):
    notebook.advance(2)
    headers = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
               "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
    refused = call(kube_api, pod_path("ci-nb-0:8888", "/ws"), headers=headers)
    with wsgi_backend(html_app) as url:  # a plain HTTP server answers 200: not an upgrade
        notebook.serve_pod(NAMESPACE, "ci-nb-0", url)
        ignored = call(kube_api, pod_path("ci-nb-0:8888", "/ws"), headers=headers)
    ip = notebook.get("pods", "ci-nb-0", NAMESPACE)["status"]["podIP"]
    assert (refused[0], json.loads(refused[2])) == (500, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "code": 500,
        "message": f"error dialing backend: dial tcp {ip}:8888: connect: connection refused"})
    assert (ignored[0], json.loads(ignored[2])["message"]) == (500, "invalid upgrade response: status code 200")


def test_the_clients_connect_helpers_reach_the_pod(notebook, kube_api):
    notebook.advance(2)
    with wsgi_backend(html_app) as url:
        notebook.serve_pod(NAMESPACE, "ci-nb-0", url)
        text = client.CoreV1Api(kube_api).connect_get_namespaced_pod_proxy_with_path(
            "ci-nb-0:8888", NAMESPACE, "instances/ws/nb/jupyter/json")
    assert json.loads(text.replace("'", '"')) == {"href": "/x"}
