"""The service proxy (/api/v1/namespaces/{ns}/services/{name}[:{port}]/proxy/...) through the real client."""
import json

import pytest
from kubernetes import client

from .backends import wsgi_backend

NAMESPACE = "default"
SERVED = []  # what the backend saw: (method, path, query, headers, body)


def echo_app(environ, start_response):
    """A backend that tells what it received; /fail answers 500 with its own body."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    headers = {key[5:].replace("_", "-").lower(): value for key, value in environ.items() if key.startswith("HTTP_")}
    SERVED.append((environ["REQUEST_METHOD"], environ["PATH_INFO"], environ.get("QUERY_STRING", ""), headers, body))
    if environ["PATH_INFO"] == "/fail":
        start_response("500 INTERNAL SERVER ERROR", [("Content-Type", "text/plain"), ("X-Backend", "yes")])
        return [b"model exploded"]
    answer = json.dumps({"path": environ["PATH_INFO"], "echo": body.decode()}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("X-Backend", "yes")])
    return [answer]


@pytest.fixture
def web(fake_kube, kube_api):
    """A Deployment of 2 pods (port named http on 5001) behind a Service `web` (port 80 named http)."""
    SERVED.clear()
    labels = {"app": "web"}
    client.AppsV1Api(kube_api).create_namespaced_deployment(NAMESPACE, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": {
            "containers": [{"name": "server", "image": "model:1", "ports": [{"name": "http", "containerPort": 5001}]}]}}}})
    client.CoreV1Api(kube_api).create_namespaced_service(NAMESPACE, {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": labels, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}})
    return fake_kube


def post(api: client.ApiClient, service_id: str, path: str = "score", body=None, token: bool = True, query=None):
    """POST through the proxy with the client's own request path; returns (status, headers, body)."""
    target = f"/api/v1/namespaces/{NAMESPACE}/services/{service_id}/proxy/{path}"
    try:
        response = api.call_api(target, "POST", query_params=query or [], header_params={"Content-Type": "application/json"},
                                body=body if body is not None else {"x": 1}, auth_settings=["BearerToken"] if token else [],
                                _preload_content=False)
    except client.ApiException as exc:
        return exc.status, exc.headers, exc.body
    raw = response[0] if isinstance(response, tuple) else response
    return raw.status, raw.headers, raw.data


def test_no_ready_pod_is_a_503_no_endpoints(web, kube_api):
    status, _, body = post(kube_api, "web:80")  # the pods are still starting
    answer = json.loads(body)
    assert status == 503 and answer["reason"] == "ServiceUnavailable"
    assert answer["message"] == 'no endpoints available for service "web"'


def test_a_ready_pod_without_a_listening_server_refuses(web, kube_api):
    web.advance(2)
    status, _, body = post(kube_api, "web:80")
    answer = json.loads(body)
    assert status == 503 and answer["reason"] == "ServiceUnavailable"
    assert answer["message"].startswith("error trying to reach service: dial tcp 10.244.")
    assert answer["message"].endswith(":5001: connect: connection refused")  # the pod's IP and target port


def test_requests_reach_the_attached_server_as_sent(web, kube_api):
    web.advance(2)
    with wsgi_backend(echo_app) as url:
        web.serve_service(NAMESPACE, "web", url)
        status, headers, body = post(kube_api, "web:80", "score", {"numbers": [1, 2]}, query=[("verbose", "1")])
    assert status == 200 and headers["X-Backend"] == "yes" and headers["Content-Type"] == "application/json"
    assert json.loads(body) == {"path": "/score", "echo": '{"numbers": [1, 2]}'}
    method, path, query, seen, sent = SERVED[-1]
    assert (method, path, query, sent) == ("POST", "/score", "verbose=1", b'{"numbers": [1, 2]}')
    assert "authorization" not in seen  # the apiserver does not pass the caller's token on
    record = web.requests.find(resource="services")[-1]
    assert (record.verb, record.subresource, record.name, record.status) == ("create", "proxy", "web:80", 200)


@pytest.mark.parametrize("service_id", ["web:80", "web:http", "http:web:80", "web%3A80", "http%3Aweb%3Ahttp"])
def test_every_spelling_of_the_port_reaches_the_pods(web, kube_api, service_id):
    web.advance(2)
    with wsgi_backend(echo_app) as url:
        web.serve_service(NAMESPACE, "web", url)
        status, _, _ = post(kube_api, service_id)
    assert status == 200


@pytest.mark.parametrize("service_id, code, message", [
    ("web", 503, 'no endpoints available for service "web"'),  # the port is named: "" matches no endpoint port
    ("web:8080", 503, 'no service port 8080 found for service "web"'),
    ("nope:80", 404, 'services "nope" not found'),
    ("nope", 404, 'endpoints "nope" not found'),
    ("ftp:web:80", 400, 'invalid service request "ftp:web:80"'),
])
def test_what_the_apiserver_answers_for_wrong_ids(web, kube_api, service_id, code, message):
    web.advance(2)
    with wsgi_backend(echo_app) as url:
        web.serve_service(NAMESPACE, "web", url)
        status, _, body = post(kube_api, service_id)
    assert (status, json.loads(body)["message"]) == (code, message)


def test_the_backends_own_errors_pass_through_unchanged(web, kube_api):
    web.advance(2)
    with wsgi_backend(echo_app) as url:
        web.serve_service(NAMESPACE, "web", url)
        status, headers, body = post(kube_api, "web:80", "fail")
    assert (status, body, headers["Content-Type"], headers["X-Backend"]) == (500, "model exploded", "text/plain", "yes")


def test_pods_that_are_not_ready_or_gone_are_not_endpoints(web, kube_api):
    plan = web.plan_pods(labels={"app": "web"}, ready=False)
    assert plan.ready is False
    core = client.CoreV1Api(kube_api)
    for pod in core.list_namespaced_pod(NAMESPACE, label_selector="app=web").items:
        core.delete_namespaced_pod(pod.metadata.name, NAMESPACE)
    web.advance(2)  # the replacements run but never become ready
    with wsgi_backend(echo_app) as url:
        web.serve_service(NAMESPACE, "web", url)
        status, _, body = post(kube_api, "web:80")
    assert status == 503 and json.loads(body)["message"] == 'no endpoints available for service "web"'


def test_the_proxy_needs_a_token_and_the_proxy_permission(web, kube_api):
    web.advance(2)
    with wsgi_backend(echo_app) as url:
        web.serve_service(NAMESPACE, "web", url)
        assert post(kube_api, "web:80", token=False)[0] == 401
        web.forbid("create", "services/proxy")
        status, _, body = post(kube_api, "web:80")
    assert status == 403 and 'cannot create resource "services/proxy"' in json.loads(body)["message"]


def test_a_detached_or_stopped_backend_refuses(web, kube_api):
    web.advance(2)
    with wsgi_backend(echo_app) as url:
        web.serve_service(NAMESPACE, "web", url)
    status, _, body = post(kube_api, "web:80")  # the server is gone: connection refused
    assert status == 503 and json.loads(body)["message"].endswith("connect: connection refused")
    web.serve_service(NAMESPACE, "web", None)
    assert post(kube_api, "web:80")[0] == 503


def test_faults_apply_to_proxy_requests(web, kube_api):
    web.advance(2)
    with wsgi_backend(echo_app) as url:
        web.serve_service(NAMESPACE, "web", url)
        web.faults.once("429", resource="services")
        first, second = post(kube_api, "web:80"), post(kube_api, "web:80")
    assert (first[0], first[1]["Retry-After"], second[0]) == (429, "1", 200)


def test_the_clients_connect_helpers_use_the_same_path(web, kube_api):
    web.advance(2)
    with wsgi_backend(echo_app) as url:
        web.serve_service(NAMESPACE, "web", url)
        text = client.CoreV1Api(kube_api).connect_get_namespaced_service_proxy_with_path("web:http", NAMESPACE, "healthz")
    assert "/healthz" in text and SERVED[-1][:2] == ("GET", "/healthz")
