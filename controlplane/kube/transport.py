"""A Connection as plain TLS settings and headers, for clients other than the `kubernetes` package.

The browser proxy to compute instances (compute/instance_proxy/) streams HTTP and relays WebSockets through the API
server's service proxy with asyncio clients (httpx, websockets), which the `kubernetes` package cannot do; it reaches
the API server with the same credentials as client.py, read from the same kubeconfig here. Only the standard library:
`kubernetes` stays imported by client.py alone (docs/layout.md).

The kubeconfig was checked when it was saved (compute/validators.py): no exec, auth-provider, token or certificate
files, no proxy-url — only inline credentials are read here.
"""
import base64
import os
import ssl
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from .connection import Connection

IN_CLUSTER = Path("/var/run/secrets/kubernetes.io/serviceaccount")
_contexts: dict[tuple, ssl.SSLContext] = {}
_lock = threading.Lock()


class TransportError(ValueError):
    """The kubeconfig does not say how to reach and authenticate to its cluster; the message is Dockyard's sentence."""


@dataclass(frozen=True)
class ApiServer:
    """Where the API server is and how to talk to it: scheme, host (as written), port, TLS context, auth headers."""

    scheme: str
    host: str
    port: int
    tls: ssl.SSLContext | None = field(compare=False)
    headers: dict = field(compare=False)
    server_name: str = ""  # the name the certificate is checked against (tls-server-name, else the host)

    @property
    def origin(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


def _chosen(kubeconfig: dict, context: str | None) -> tuple[dict, dict]:
    """The (cluster, user) entries the context names."""
    def named(key: str) -> dict:
        return {item.get("name"): item.get(key.rstrip("s")) or {} for item in kubeconfig.get(key) or []
                if isinstance(item, dict)}

    chosen = context or kubeconfig.get("current-context")
    entry = named("contexts").get(chosen)
    if entry is None:
        raise TransportError(f"The kubeconfig has no context '{chosen}'.")
    cluster, user = named("clusters").get(entry.get("cluster")), named("users").get(entry.get("user"))
    if cluster is None or user is None:
        raise TransportError(f"The kubeconfig's context '{chosen}' names a cluster or user it does not define.")
    return cluster, user


def _decoded(value: str, what: str) -> bytes:
    try:
        return base64.b64decode(value, validate=False)
    except (ValueError, TypeError):
        raise TransportError(f"The kubeconfig's {what} is not base64.") from None


def _tls(cluster: dict, user: dict) -> ssl.SSLContext:
    """Verify the server with the kubeconfig's CA (else the system's), present its client certificate if it has one."""
    ca = cluster.get("certificate-authority-data")
    context = ssl.create_default_context(cadata=_decoded(ca, "certificate-authority-data").decode("ascii", "replace")
                                         if ca else None)
    if cluster.get("insecure-skip-tls-verify"):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    cert, key = user.get("client-certificate-data"), user.get("client-key-data")
    if cert and key:
        _load_client_certificate(context, _decoded(cert, "client-certificate-data"), _decoded(key, "client-key-data"))
    return context


def _load_client_certificate(context: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    # ssl loads a certificate chain from files only: a private folder, gone once loaded.
    with tempfile.TemporaryDirectory(prefix="dockyard-kube-") as folder:
        path = Path(folder) / "client.pem"
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as out:
            out.write(cert.rstrip(b"\n") + b"\n" + key)
        try:
            context.load_cert_chain(path)
        except ssl.SSLError:
            raise TransportError("The kubeconfig's client certificate and key do not load.") from None


def _auth_headers(user: dict) -> dict:
    if user.get("token"):
        return {"Authorization": f"Bearer {user['token']}"}
    if user.get("username") and user.get("password"):
        basic = base64.b64encode(f"{user['username']}:{user['password']}".encode()).decode()
        return {"Authorization": f"Basic {basic}"}
    return {}


def _split(server: str) -> tuple[str, str, int]:
    parts = urlsplit(server or "")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TransportError("The kubeconfig's cluster has no http(s) server URL.")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise TransportError("The kubeconfig's server URL has an invalid port.") from None
    return parts.scheme, parts.hostname, port


def _cached_context(conn: Connection, cluster: dict, user: dict) -> ssl.SSLContext:
    # Building a context parses certificates (milliseconds): once per credentials, not per proxied request.
    key = (conn.key, conn.credential_version)
    with _lock:
        context = _contexts.get(key)
    if context is None:
        context = _tls(cluster, user)
        with _lock:
            if len(_contexts) > 64:
                _contexts.clear()
            _contexts[key] = context
    return context


def api_server(conn: Connection) -> ApiServer:
    """How to reach `conn`'s API server: its address, a TLS context for https, and the Authorization header."""
    if conn.in_cluster:
        return _in_cluster(conn)
    cluster, user = _chosen(conn.kubeconfig, conn.context)
    scheme, host, port = _split(str(cluster.get("server") or ""))
    context = _cached_context(conn, cluster, user) if scheme == "https" else None
    return ApiServer(scheme, host, port, context, _auth_headers(user), cluster.get("tls-server-name") or host)


def _in_cluster(conn: Connection) -> ApiServer:
    """Dockyard's own pod: the service address and the projected token, read again each time (the kubelet rotates it)."""
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST", ""), os.environ.get("KUBERNETES_SERVICE_PORT", "443")
    if not host:
        raise TransportError("Dockyard does not run in a Kubernetes pod (no KUBERNETES_SERVICE_HOST).")
    try:
        token = (IN_CLUSTER / "token").read_text().strip()
    except OSError:
        raise TransportError("The pod's service account token cannot be read.") from None
    key = (conn.key, "in-cluster")
    with _lock:
        context = _contexts.get(key)
    if context is None:
        context = ssl.create_default_context(cafile=str(IN_CLUSTER / "ca.crt"))
        with _lock:
            _contexts[key] = context
    return ApiServer("https", host.strip("[]"), int(port), context, {"Authorization": f"Bearer {token}"}, host.strip("[]"))
