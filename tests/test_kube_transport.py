"""controlplane/kube/transport.py: a Connection's kubeconfig as a TLS context and headers for asyncio clients, checked
against the fake API server serving https with its own certificate authority."""
import base64
import ssl

import httpx
import pytest
import yaml

from controlplane.kube import transport
from controlplane.kube.connection import connection
from tests.fake_kube.server import ADMIN_TOKEN
from tests.fake_kube.tls import self_signed, server_context


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def kubeconfig(server: str, cluster: dict | None = None, user: dict | None = None) -> str:
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": server, **(cluster or {})}}],
        "users": [{"name": "u", "user": user if user is not None else {"token": "t0ken"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]})


def test_a_token_becomes_a_bearer_header_and_plain_http_has_no_tls():
    server = transport.api_server(connection("http://127.0.0.1:8080", kubeconfig("http://127.0.0.1:8080"), None))
    assert (server.scheme, server.host, server.port, server.tls) == ("http", "127.0.0.1", 8080, None)
    assert server.headers == {"Authorization": "Bearer t0ken"} and server.origin == "http://127.0.0.1:8080"


def test_basic_auth_and_no_credentials():
    basic = transport.api_server(connection("s", kubeconfig("https://k.example", user={"username": "a", "password": "b"}), None))
    assert basic.headers == {"Authorization": "Basic " + b64(b"a:b")} and basic.port == 443
    assert transport.api_server(connection("s2", kubeconfig("https://k.example", user={}), None)).headers == {}


def test_the_kubeconfigs_authority_verifies_the_server(make_fake_kube):
    cert, key = self_signed("localhost")
    kube = make_fake_kube(tls=server_context(cert, key))
    text = kubeconfig(f"https://localhost:{kube.port}", {"certificate-authority-data": b64(cert)}, {"token": ADMIN_TOKEN})
    server = transport.api_server(connection(kube.url, text, None))
    assert server.server_name == "localhost" and server.tls.verify_mode == ssl.CERT_REQUIRED
    with httpx.Client(verify=server.tls, trust_env=False) as client:
        answer = client.get(f"{server.origin}/api/v1/namespaces/default", headers=server.headers)
    assert answer.status_code == 200 and answer.json()["metadata"]["name"] == "default"


def test_another_authority_is_refused(make_fake_kube):
    cert, key = self_signed("localhost")
    other, _ = self_signed("localhost")
    kube = make_fake_kube(tls=server_context(cert, key))
    text = kubeconfig(f"https://localhost:{kube.port}", {"certificate-authority-data": b64(other)})
    server = transport.api_server(connection(kube.url + "/other", text, None))
    with httpx.Client(verify=server.tls, trust_env=False) as client, pytest.raises(httpx.ConnectError):
        client.get(f"{server.origin}/version")


def test_a_client_certificate_loads_and_tls_server_name_is_kept():
    cert, key = self_signed("admin")
    text = kubeconfig("https://10.0.0.1:6443", {"tls-server-name": "kubernetes"},
                      {"client-certificate-data": b64(cert), "client-key-data": b64(key)})
    server = transport.api_server(connection("https://10.0.0.1:6443", text, None))
    assert server.tls is not None and server.server_name == "kubernetes" and server.headers == {}


def test_a_certificate_that_does_not_load_is_said_in_words():
    text = kubeconfig("https://10.0.0.2:6443", user={"client-certificate-data": b64(b"nope"), "client-key-data": b64(b"nope")})
    with pytest.raises(transport.TransportError, match="client certificate and key do not load"):
        transport.api_server(connection("https://10.0.0.2:6443", text, None))


def test_insecure_skip_tls_verify_is_honoured():
    text = kubeconfig("https://10.0.0.3:6443", {"insecure-skip-tls-verify": True})
    server = transport.api_server(connection("https://10.0.0.3:6443", text, None))
    assert server.tls.verify_mode == ssl.CERT_NONE and not server.tls.check_hostname


@pytest.mark.parametrize(("text", "context", "message"), [
    (kubeconfig("https://k.example"), "missing", "no context 'missing'"),
    (kubeconfig("ftp://k.example"), None, "no http\\(s\\) server URL"),
])
def test_incomplete_kubeconfigs_are_refused(text, context, message):
    with pytest.raises(transport.TransportError, match=message):
        transport.api_server(connection("x", text, context))


def test_in_cluster_needs_the_pods_environment(monkeypatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(transport.TransportError, match="does not run in a Kubernetes pod"):
        transport.api_server(connection("https://kubernetes.default.svc", "", None, in_cluster=True))
