"""The pod proxy (/api/v1/namespaces/{ns}/pods/{name}[:{port}]/proxy/...) through the real client."""
import json

import pytest
from kubernetes import client

from .auth import Rule
from .backends import wsgi_backend
from .fixtures import api_client

NAMESPACE = "default"
SERVED = []  # what a backend saw: (port label, method, path, query, headers, body)


def app_for(label: str):
    """A backend that tells what it received."""
    def app(environ, start_response):
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        headers = {k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")}
        SERVED.append((label, environ["REQUEST_METHOD"], environ["PATH_INFO"], environ.get("QUERY_STRING", ""),
                       headers, body))
        start_response("200 OK", [("Content-Type", "application/json"), ("X-Backend", label)])
        return [json.dumps({"server": label, "path": environ["PATH_INFO"]}).encode()]
    return app


def call(api: client.ApiClient, path: str, method: str = "GET", query=None, headers=None, body=None, token=True):
    """A raw request through the client; returns (status, headers, body text)."""
    try:
        response = api.call_api(path, method, query_params=query or [], header_params=headers or {}, body=body,
                                auth_settings=["BearerToken"] if token else [], _preload_content=False)
    except client.ApiException as exc:
        return exc.status, exc.headers, exc.body
    raw = response[0] if isinstance(response, tuple) else response
    return raw.status, raw.headers, raw.data.decode() if isinstance(raw.data, bytes) else raw.data


def pod_path(pod_id: str, rest: str = "") -> str:
    return f"/api/v1/namespaces/{NAMESPACE}/pods/{pod_id}/proxy{rest}"


@pytest.fixture(autouse=True)
def _fresh():
    SERVED.clear()


def test_a_pending_pod_without_an_ip_is_address_not_allowed(notebook, kube_api):
    status, _, body = call(kube_api, pod_path("ci-nb-0:8888", "/api/status"))
    assert (status, json.loads(body)["reason"], json.loads(body)["message"]) == (400, "BadRequest", "address not allowed")


def test_get_with_a_query_string_reaches_the_pods_server_as_sent(notebook, kube_api):
    notebook.advance(2)
    with wsgi_backend(app_for("jupyter")) as url:
        notebook.serve_pod(NAMESPACE, "ci-nb-0", url, port=8888)
        status, headers, body = call(kube_api, pod_path("ci-nb-0:8888", "/instances/ws/nb/jupyter/api/kernels"),
                                     query=[("token", "abc"), ("x", "a b/c")], headers={"X-Extra": "1"})
    assert status == 200 and headers["X-Backend"] == "jupyter" and headers["Cache-Control"].startswith("no-cache")
    label, method, path, query, seen, _ = SERVED[-1]
    assert (method, path, query) == ("GET", "/instances/ws/nb/jupyter/api/kernels", "token=abc&x=a+b%2Fc")
    assert "authorization" not in seen and seen["x-extra"] == "1"
    assert seen["host"] == f"127.0.0.1:{notebook.port}"  # the reverse proxy keeps the caller's Host
    assert seen["x-forwarded-uri"] == pod_path("ci-nb-0:8888", "/instances/ws/nb/jupyter/api/kernels")
    record = notebook.requests.find(resource="pods", subresource="proxy")[-1]
    assert (record.verb, record.name, record.status) == ("get", "ci-nb-0:8888", 200)


def test_each_port_reaches_its_own_server(notebook, kube_api):
    notebook.advance(2)
    with wsgi_backend(app_for("jupyter")) as jupyter, wsgi_backend(app_for("vscode")) as vscode:
        notebook.serve_pod(NAMESPACE, "ci-nb-0", jupyter, port=8888)
        notebook.serve_pod(NAMESPACE, "ci-nb-0", vscode, port=8080)
        answers = {pod_id: json.loads(call(kube_api, pod_path(pod_id, "/x"))[2])["server"]
                   for pod_id in ("ci-nb-0:8888", "ci-nb-0:8080", "http:ci-nb-0:8080", "ci-nb-0%3A8080", "ci-nb-0")}
    # no port: the first declared container port (jupyter's 8888)
    assert answers == {"ci-nb-0:8888": "jupyter", "ci-nb-0:8080": "vscode", "http:ci-nb-0:8080": "vscode",
                       "ci-nb-0%3A8080": "vscode", "ci-nb-0": "jupyter"}


@pytest.mark.parametrize("pod_id, code, reason, message", [
    ("nope:8888", 404, "NotFound", 'pods "nope" not found'),
    ("ftp:ci-nb-0:8888", 400, "BadRequest", 'invalid pod request "ftp:ci-nb-0:8888"'),
    ("a:b:c:d", 400, "BadRequest", 'invalid pod request "a:b:c:d"'),
    ("ci-nb-0:9999", 503, "ServiceUnavailable", "error trying to reach service: dial tcp {ip}:9999: connect: "
                                                "connection refused"),
    # a port name is not looked up among the container ports: Go's dialer resolves it as a service name
    ("ci-nb-0:jupyter", 503, "ServiceUnavailable", "error trying to reach service: dial tcp: lookup tcp/jupyter: "
                                                   "unknown port"),
])
def test_what_the_apiserver_answers(notebook, kube_api, pod_id, code, reason, message):
    notebook.advance(2)
    ip = notebook.get("pods", "ci-nb-0", NAMESPACE)["status"]["podIP"]
    with wsgi_backend(app_for("jupyter")) as url:
        notebook.serve_pod(NAMESPACE, "ci-nb-0", url, port=8888)
        status, _, body = call(kube_api, pod_path(pod_id, "/api"))
    answer = json.loads(body)
    assert (status, answer["reason"], answer["message"]) == (code, reason, message.format(ip=ip))


def test_a_stopped_server_refuses_and_readiness_does_not_matter(notebook, kube_api):
    notebook.plan_pods(labels={"dockyard.io/compute-instance": "nb"}, ready=False)
    client.CoreV1Api(kube_api).delete_namespaced_pod("ci-nb-0", NAMESPACE)
    notebook.advance(2)  # recreated by the StatefulSet, running but never ready
    with wsgi_backend(app_for("jupyter")) as url:
        notebook.serve_pod(NAMESPACE, "ci-nb-0", url)
        assert call(kube_api, pod_path("ci-nb-0:8888", "/api"))[0] == 200
        # the service proxy wants a ready endpoint
        service = call(kube_api, f"/api/v1/namespaces/{NAMESPACE}/services/ci-nb:jupyter/proxy/api")
        assert (service[0], json.loads(service[2])["message"]) == (503, 'no endpoints available for service "ci-nb"')
    status, _, body = call(kube_api, pod_path("ci-nb-0:8888", "/api"))
    assert status == 503 and json.loads(body)["message"].endswith(":8888: connect: connection refused")


def test_the_service_proxy_reaches_a_server_attached_to_the_pod(notebook, kube_api):
    notebook.advance(2)
    with wsgi_backend(app_for("pod")) as pod_url, wsgi_backend(app_for("service")) as service_url:
        notebook.serve_service(NAMESPACE, "ci-nb", service_url)
        assert json.loads(call(kube_api, pod_path("ci-nb-0:8080", "/"))[2])["server"] == "service"
        notebook.serve_pod(NAMESPACE, "ci-nb-0", pod_url, port=8888)
        through_service = call(kube_api, f"/api/v1/namespaces/{NAMESPACE}/services/ci-nb:jupyter/proxy/api",
                               query=[("a", "1")])
        other_port = call(kube_api, f"/api/v1/namespaces/{NAMESPACE}/services/ci-nb:vscode/proxy/")
    assert json.loads(through_service[2])["server"] == "pod" and SERVED[-2][3] == "a=1"
    assert json.loads(other_port[2])["server"] == "service"


def test_the_proxy_root_redirects_to_a_trailing_slash(notebook, kube_api):
    notebook.advance(2)
    with wsgi_backend(app_for("jupyter")) as url:
        notebook.serve_pod(NAMESPACE, "ci-nb-0", url)
        status, headers, _ = call(kube_api, pod_path("ci-nb-0:8888"), query=[("a", "1")])
        posted = call(kube_api, pod_path("ci-nb-0:8888"), "POST", body={"x": 1})
    assert (status, headers["Location"]) == (301, pod_path("ci-nb-0:8888", "/?a=1"))
    assert posted[0] == 200 and SERVED[-1][1:3] == ("POST", "/")


@pytest.mark.parametrize("method, verb", [("GET", "get"), ("HEAD", "get"), ("POST", "create"), ("PUT", "update"),
                                          ("PATCH", "patch"), ("DELETE", "delete"), ("OPTIONS", "options")])
def test_rbac_verbs_on_pods_proxy(notebook, kube_api, method, verb):
    notebook.advance(2)
    notebook.add_token("proxy-only", "proxy-only", [Rule(verbs=(verb,), resources=("pods/proxy",))])
    with wsgi_backend(app_for("jupyter")) as url, api_client(notebook, token="proxy-only") as api:
        notebook.serve_pod(NAMESPACE, "ci-nb-0", url)
        allowed = call(api, pod_path("ci-nb-0:8888", "/api"), method)
        notebook.forbid(verb, "pods/proxy")
        denied = call(api, pod_path("ci-nb-0:8888", "/api"), method)
    assert allowed[0] == 200
    assert denied[0] == 403
    if method != "HEAD":
        assert f'cannot {verb} resource "pods/proxy"' in json.loads(denied[2])["message"]
    assert call(kube_api, pod_path("ci-nb-0:8888", "/api"), token=False)[0] == 401


def test_a_pod_still_pulling_its_image_has_an_address_but_refuses(notebook, kube_api):
    notebook.plan_pods(labels={"dockyard.io/compute-instance": "nb"}, image_pull_error="ErrImagePull")
    client.CoreV1Api(kube_api).delete_namespaced_pod("ci-nb-0", NAMESPACE)
    notebook.advance(2)
    pod = notebook.get("pods", "ci-nb-0", NAMESPACE)
    with wsgi_backend(app_for("jupyter")) as url:
        notebook.serve_pod(NAMESPACE, "ci-nb-0", url)
        status, _, body = call(kube_api, pod_path("ci-nb-0:8888", "/api"))
    assert pod["status"]["phase"] == "Pending" and pod["status"]["podIP"]
    assert (status, json.loads(body)["message"]) == (
        503, f"error trying to reach service: dial tcp {pod['status']['podIP']}:8888: connect: connection refused")
