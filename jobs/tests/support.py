"""Helpers the jobs API and spec tests share: posting a job, what was written, a Kubernetes compute, valid spec bodies,
files served on loopback (plain or over TLS the test trusts)."""
import datetime
import http.server
import ipaddress
import ssl
import threading

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from compute.models import ComputeTarget
from compute.services import instance_types_create
from compute.tests.factories import as_checked, create_compute
from controlplane.specs import SpecErrors
from jobs import fetch
from jobs.models import Job, JobEvent
from jobs.spec import parse_job
from workspaces.models import AuditEvent

URL = "/api/v1/workspaces/team-a/jobs/"
IMAGE = "mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu20.04:latest"
SHAPE = {"name": "gpu-small", "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "4Gi"}}}
COMMAND = "python train.py"


def counts() -> tuple[int, int, int]:
    return Job.objects.count(), JobEvent.objects.count(), AuditEvent.objects.count()


def submit(api, **fields) -> dict:
    """A local job (fields replaced; None removes one), asserted created."""
    data = {key: value for key, value in {"command": "echo hi", "compute": "local", **fields}.items() if value is not None}
    response = api.post(URL, data, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def set_state(name: str, **fields) -> Job:
    Job.objects.filter(name=name).update(**fields)
    return Job.objects.get(name=name)


@pytest.fixture
def k8s(workspace, owner) -> ComputeTarget:
    """A kubernetes compute (with its Cluster) that has one instance type besides the default."""
    compute = as_checked(create_compute(workspace, owner, "kubernetes"))
    instance_types_create(user=owner, compute=compute, body=SHAPE)
    return compute


# files on loopback: this machine has no internet, so a test serves the files an https:// input names


def serve_files(files: dict[str, bytes], context: ssl.SSLContext | None = None) -> http.server.ThreadingHTTPServer:
    """A started server answering GET <path> with files[path] (else a small CSV), /big.bin with a 10 MB promise
    and /moved with a redirect inward; over TLS when a context is given. The caller shuts it down."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/big.bin":
                self.send_response(200)
                self.send_header("Content-Length", str(10 * 1024 * 1024))
                self.end_headers()
                return
            if self.path == "/moved":
                self.send_response(302)
                self.send_header("Location", "https://127.0.0.1:9/secret.txt")
                self.end_headers()
                return
            body = files.get(self.path, b"sepal,petal\n")
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if context:
        server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def tls_files() -> dict[str, bytes]:
    """What tls_server serves by path (a test module overrides it to serve its own files)."""
    return {}


@pytest.fixture
def tls_server(tmp_path, monkeypatch, tls_files):
    """https://files.test:<port>, on loopback, with a certificate Dockyard's fetch is made to trust."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "files.test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("files.test")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                         serialization.NoEncryption()))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    server = serve_files(tls_files, context)
    real = fetch.public_addresses

    def addresses(host, port_):
        if host == "files.test":  # the test's name for its loopback server; every other name is checked as ever
            return [ipaddress.ip_address("127.0.0.1")]
        return real(host, port_)

    monkeypatch.setattr(fetch, "public_addresses", addresses)
    monkeypatch.setattr(fetch, "tls_context", lambda: ssl.create_default_context(cafile=str(tmp_path / "cert.pem")))
    yield f"https://files.test:{server.server_address[1]}"
    server.shutdown()


# spec bodies (jobs/spec.py, no database)


def job(**fields) -> dict:
    """A valid minimal body with fields replaced (a value of None removes the field)."""
    data = {"command": COMMAND, **fields}
    return {key: value for key, value in data.items() if value is not None}


def targets_of(body) -> list[str]:
    with pytest.raises(SpecErrors) as info:
        parse_job(body)
    assert info.value.errors and all(message for _, message in info.value.errors)
    return [target for target, _ in info.value.errors]
