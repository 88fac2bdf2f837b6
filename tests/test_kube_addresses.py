"""Issue 9, findings 3 and 9: where the worker connects and what it says when that fails.

The real kubernetes client against real sockets: the fake API server, a plain-HTTP server behind an https:// URL,
servers that answer with a huge HTML page, a closed port, a port that never answers. Errors are Dockyard's sentences.
"""
import base64
import ipaddress
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from compute import reconcile
from compute.models import ComputeTarget
from controlplane import addresses
from controlplane.kube import client as kube
from controlplane.kube.connection import connection
from controlplane.reconciling import ProvisioningState
from tests.e2e_support import BASE, fresh_client_state, in_process_worker, wait_for
from tests.fake_kube import tls
from tests.support import assert_error

MARKER = "INTERNAL-SECRET-7f3a"


def kubeconfig(server: str, token: str = "fake-kube-admin-token") -> str:
    return (f"apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{{name: c, cluster: {{server: '{server}'}}}}]\n"
            f"users: [{{name: c, user: {{token: {token}}}}}]\ncontexts: [{{name: c, context: {{cluster: c, user: c}}}}]\n")


def create(api, server: str, name: str = "k8s"):
    response = api.post(f"{BASE}/", {"name": name, "type": "kubernetes", "kubeconfig": kubeconfig(server)}, format="json")
    assert response.status_code == 201, response.json()
    return ComputeTarget.objects.get(name=name)


def check(compute) -> ComputeTarget:
    """One check as the worker runs it; a transient failure is what Celery would retry (its status is written)."""
    try:
        reconcile.reconcile_compute(ComputeTarget.objects.get(pk=compute.pk))
    except kube.KubeTransient:
        pass
    return ComputeTarget.objects.get(pk=compute.pk)


@pytest.fixture(autouse=True)
def fresh_clients():
    kube._clients.clear()
    yield
    kube._clients.clear()


@pytest.fixture
def owner_api(owner_api, workspace):
    return owner_api


class Canned(BaseHTTPRequestHandler):
    """Answers every request with the server's (status, content type, body)."""

    answer = (200, "text/html", b"")

    def _reply(self):
        status, kind, body = self.server.answer
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PATCH = _reply

    def log_message(self, *args):
        pass


@pytest.fixture
def canned():
    """A real HTTP server on loopback whose one answer the test sets: `server.answer = (status, type, body)`."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Canned)
    server.answer = Canned.answer
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


# --- at save time ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "server, problem",
    [
        ("http://%31%36%39.254.169.254", "percent-encoded host"),
        ("https://0xa9fea9fe", "non-standard form"),
        ("https://169.254.43518", "non-standard form"),
        ("https://[::ffff:169.254.169.254]", "cloud metadata address"),
        ("https://user:pw@k8s.example.com", "carries credentials"),
        ("https://k8s.example.com/?x", "query or a fragment"),
        ("https://k8s.example.com/#f", "query or a fragment"),
        ("https://k8s.example.com/proxy/prefix", "has a path"),
        ("https://100.100.100.200", "cloud metadata address"),
        ("https://168.63.129.16", "cloud metadata address"),
        ("https://0.0.0.0", "unspecified address"),
        ("https://224.0.0.1", "multicast address"),
        ("http://10.0.0.1:6443", "must use https://"),
    ],
)
def test_hostile_servers_are_refused_at_save_naming_the_kubeconfig(owner_api, server, problem):
    body = {"name": "k8s", "type": "kubernetes", "kubeconfig": kubeconfig(server)}
    error = assert_error(owner_api.post(f"{BASE}/", body, format="json"), 400, "ValidationError", "kubeconfig")
    assert problem in error["message"] and "server" in error["message"], error
    assert not ComputeTarget.objects.exists()


def test_a_name_resolving_to_loopback_is_refused_at_save_when_loopback_is_not_allowed(owner_api, settings):
    settings.DOCKYARD_ALLOW_LOOPBACK = False
    body = {"name": "k8s", "type": "kubernetes", "kubeconfig": kubeconfig("https://localhost:6443")}
    error = assert_error(owner_api.post(f"{BASE}/", body, format="json"), 400, "ValidationError", "kubeconfig")
    assert "localhost (127.0.0.1) is a loopback address" in error["message"]


def test_a_kubeconfig_proxy_is_refused(owner_api):
    text = kubeconfig("https://10.0.0.1:6443").replace("server: 'https://10.0.0.1:6443'",
                                                       "server: 'https://10.0.0.1:6443', proxy-url: 'http://169.254.169.254'")
    body = {"name": "k8s", "type": "kubernetes", "kubeconfig": text}
    assert "proxy-url" in assert_error(owner_api.post(f"{BASE}/", body, format="json"), 400, "ValidationError", "kubeconfig")["message"]


@pytest.mark.parametrize("address", ["169.254.169.254", "127.0.0.1", "100.100.100.200"])
def test_ssh_hosts_get_the_same_address_check(owner_api, settings, address):
    settings.DOCKYARD_ALLOW_LOOPBACK = False
    body = {"name": "vm", "type": "virtualmachine", "address": address, "admin_username": "u", "admin_password": "pw-123456"}
    assert_error(owner_api.post(f"{BASE}/", body, format="json"), 400, "ValidationError", "address")
    body["address"] = "0xa9fea9fe"
    assert "non-standard form" in assert_error(owner_api.post(f"{BASE}/", body, format="json"), 400, "ValidationError", "address")["message"]


# --- at every connection ---------------------------------------------------------------------------------------


def test_a_check_that_hits_a_refused_address_fails_with_dockyards_sentence(owner_api, fake_kube, settings):
    """Saved while the name was fine (DNS may change, a setting may): the worker checks again and connects nowhere."""
    compute = create(owner_api, f"https://localhost:{fake_kube.port}")
    settings.DOCKYARD_ALLOW_LOOPBACK = False
    fake_kube.requests.clear()
    compute = check(compute)
    assert compute.provisioning_state == ProvisioningState.FAILED
    assert compute.provisioning_errors == [{
        "code": "AddressRefused", "message": "localhost (127.0.0.1) is a loopback address; Dockyard does not connect to it."}]
    assert fake_kube.requests.all() == []  # not one byte went there


def test_the_client_connects_to_the_address_it_checked_and_verifies_tls_against_the_name(monkeypatch):
    """No second lookup (DNS rebinding): the client is pinned to the checked address until it checks again."""
    answers = {"cluster.example": "10.1.2.3"}
    monkeypatch.setattr(addresses.socket, "getaddrinfo", lambda host, port, **kwargs: [
        (socket.AF_INET, socket.SOCK_STREAM, 6, "", (answers[host], port))])
    conn = connection("https://cluster.example:6443", kubeconfig("https://cluster.example:6443"), None)
    configuration = kube._client(conn).configuration
    assert (configuration.host, configuration.tls_server_name) == ("https://10.1.2.3:6443", "cluster.example")
    answers["cluster.example"] = "169.254.169.254"  # the name now points at the metadata service
    assert kube._client(conn).configuration.host == "https://10.1.2.3:6443"  # the pinned client never looks again
    kube._clients[(conn.key, conn.credential_version)].expires = 0  # its time is up: resolved and checked again
    with pytest.raises(kube.KubeRejected, match=r"cluster.example \(169.254.169.254\) is a cloud metadata address"):
        kube._client(conn)


@pytest.fixture
def tls_fake(make_fake_kube):
    """The fake API server over TLS with a certificate for the name `localhost` only (no IP SAN)."""
    cert, key = tls.self_signed("localhost")
    kube_ = make_fake_kube(tls=tls.server_context(cert, key))
    kube_.ca = base64.b64encode(cert).decode()
    return kube_


def tls_kubeconfig(server: str, ca: str) -> str:
    return kubeconfig(server).replace(f"server: '{server}'", f"server: '{server}', certificate-authority-data: {ca}")


def test_a_pinned_address_still_verifies_the_certificate_against_the_name(owner_api, tls_fake):
    """https://localhost is pinned to 127.0.0.1, and the certificate (for `localhost`, no IP) must still verify."""
    body = {"name": "k8s", "type": "kubernetes", "kubeconfig": tls_kubeconfig(f"https://localhost:{tls_fake.port}", tls_fake.ca)}
    assert owner_api.post(f"{BASE}/", body, format="json").status_code == 201
    compute = check(ComputeTarget.objects.get(name="k8s"))
    assert compute.provisioning_state == ProvisioningState.SUCCEEDED, compute.provisioning_errors
    pinned = kube._clients[next(iter(kube._clients))].api.configuration
    assert (pinned.host, pinned.tls_server_name) == (f"https://127.0.0.1:{tls_fake.port}", "localhost")


def test_a_certificate_for_another_name_is_refused_with_a_sentence(owner_api, tls_fake):
    body = {"name": "k8s", "type": "kubernetes", "kubeconfig": tls_kubeconfig(f"https://127.0.0.1:{tls_fake.port}", tls_fake.ca)}
    assert owner_api.post(f"{BASE}/", body, format="json").status_code == 201
    compute = check(ComputeTarget.objects.get(name="k8s"))
    assert compute.provisioning_state == ProvisioningState.FAILED
    assert compute.provisioning_errors == [{"code": "CertificateRejected", "message": (
        f"The API server at 127.0.0.1:{tls_fake.port} presented a certificate that does not verify "
        "(an untrusted authority, or issued for another name).")}]


def test_an_https_server_speaking_plain_http_fails_with_a_sentence(owner_api, fake_kube):
    compute = check(create(owner_api, f"https://127.0.0.1:{fake_kube.port}"))
    assert compute.provisioning_state == ProvisioningState.FAILED
    assert compute.provisioning_errors == [{"code": "NotTLS", "message": (
        f"The server at 127.0.0.1:{fake_kube.port} did not speak TLS (is it a plain http:// server?).")}]


@pytest.mark.parametrize("status", [200, 401, 403, 404, 500, 503])
def test_a_huge_html_answer_does_not_reach_the_errors(owner_api, canned, status):
    canned.answer = (status, "text/html", f"<html><body>{MARKER}</body></html>".encode() + b"x" * 3_000_000)
    compute = check(create(owner_api, f"http://127.0.0.1:{canned.server_port}"))
    assert compute.provisioning_state == ProvisioningState.FAILED
    shown = str(compute.provisioning_errors)
    assert MARKER not in shown and "<html" not in shown and len(shown) < 300, shown
    assert f"127.0.0.1:{canned.server_port}" in shown or "401" in shown or "403" in shown


def test_an_answer_over_the_limit_is_not_read_into_memory(owner_api, canned, monkeypatch):
    monkeypatch.setattr(kube, "MAX_ANSWER_BYTES", 2**20)
    canned.answer = (200, "application/json", b'{"gitVersion": "' + b"v" * 3_000_000 + b'"}')
    compute = check(create(owner_api, f"http://127.0.0.1:{canned.server_port}"))
    assert compute.provisioning_errors == [{"code": "AnswerTooLarge", "message": (
        f"The API server at 127.0.0.1:{canned.server_port} sent an answer larger than 1 MB; Dockyard did not read it.")}]
    canned.answer = (500, "text/html", b"x" * 3_000_000)  # error bodies too: the client reads them before we see them
    compute = check(compute)
    assert compute.provisioning_errors[0]["code"] == "AnswerTooLarge"


def test_a_status_body_from_a_server_not_yet_proven_is_not_repeated(owner_api, canned):
    body = f'{{"kind": "Status", "status": "Failure", "message": "{MARKER}", "reason": "Unauthorized", "code": 401}}'
    canned.answer = (401, "application/json", body.encode())
    compute = check(create(owner_api, f"http://127.0.0.1:{canned.server_port}"))
    assert compute.provisioning_errors == [{"code": "Unauthorized", "message": "The cluster refused the credentials (401)."}]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def silent_port():
    """A port that accepts connections (the backlog) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]


@pytest.fixture
def hanging_up_port():
    """A port that accepts and closes every connection at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        stop = threading.Event()

        def serve():
            sock.settimeout(0.05)
            while not stop.is_set():
                try:
                    sock.accept()[0].close()
                except OSError:
                    continue

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        yield sock.getsockname()[1]
        stop.set()
        thread.join()


def test_refused_silent_and_hung_up_ports_read_alike(owner_api, monkeypatch, silent_port, hanging_up_port):
    """The error kind must not tell an open port from a closed one (a port scanner through the check)."""
    monkeypatch.setattr(kube, "TIMEOUT", (0.5, 0.5))
    messages = set()
    for name, port in (("refused", closed_port()), ("silent", silent_port), ("hangup", hanging_up_port)):
        compute = check(create(owner_api, f"http://127.0.0.1:{port}", name=name))
        assert compute.provisioning_state == ProvisioningState.FAILED
        (error,) = compute.provisioning_errors
        messages.add((error["code"], error["message"].replace(str(port), "PORT")))
    assert messages == {("Unreachable", "Cannot reach the API server at 127.0.0.1:PORT. Retrying.")}


def test_an_ipv6_literal_is_checked_like_its_ipv4_form(settings):
    settings.DOCKYARD_ALLOW_LINK_LOCAL = False
    assert addresses.refusal(ipaddress.ip_address("::ffff:a9fe:a9fe")) == "a cloud metadata address"


# --- through the worker: a failure is visible on every attempt --------------------------------------------------


@pytest.fixture
def worker(transactional_db, fake_kube):
    fresh_client_state(fake_kube)
    with in_process_worker():
        yield


def test_through_the_worker_plain_http_behind_https_ends_failed_not_creating(worker, owner_api, workspace, fake_kube):
    server = f"https://127.0.0.1:{fake_kube.port}"
    assert owner_api.post(f"{BASE}/", {"name": "k8s", "type": "kubernetes", "kubeconfig": kubeconfig(server)},
                          format="json").status_code == 201
    row = wait_for(lambda: (r := owner_api.get(f"{BASE}/k8s/").json())["provisioning_state"] == "Failed" and r,
                   what="the check to fail")
    assert row["provisioning_errors"][0]["code"] == "NotTLS"


def test_through_the_worker_an_unreachable_server_shows_why_while_it_retries(worker, owner_api, workspace):
    port = closed_port()
    assert owner_api.post(f"{BASE}/", {"name": "k8s", "type": "kubernetes",
                                       "kubeconfig": kubeconfig(f"http://127.0.0.1:{port}")}, format="json").status_code == 201
    row = wait_for(lambda: (r := owner_api.get(f"{BASE}/k8s/").json())["provisioning_state"] == "Failed" and r,
                   what="the first attempt's status")
    assert row["provisioning_errors"] == [{"code": "Unreachable",
                                           "message": f"Cannot reach the API server at 127.0.0.1:{port}. Retrying."}]
