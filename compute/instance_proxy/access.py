"""Who may open which instance, and where its server is: the proxy's database side (synchronous; the ASGI app runs it
in a thread with sync_to_async).

The studio's login is the credential: the Django session cookie, read through the session engine and
`django.contrib.auth.get_user` (which also ends a session whose password changed), without Django's request cycle.
"""
from dataclasses import dataclass, field
from importlib import import_module
from types import SimpleNamespace

from django.conf import settings
from django.contrib.auth import get_user
from django.db import connections

from compute import instances
from compute.choices import ComputeType, InstanceState
from compute.connections import connection_for, namespace_of
from compute.manifests.instances import code_server_hash, instance_names
from compute.models import ComputeTarget
from compute.runners.notebooks import local_instance_socket
from controlplane import addresses
from controlplane.kube import transport
from workspaces.access import role_of
from workspaces.models import Workspace

from .rules import CODE_SERVER_COOKIE, Route, service_proxy_prefix

LOCAL = "local"  # properties.kubernetes_compute of a local (sandboxed) instance
PORTS = {"jupyter": "jupyter", "vscode": "vscode"}  # the headless Service's named ports (compute/manifests/instances.py)


@dataclass(frozen=True)
class Upstream:
    """Where one server answers and what the proxy adds to reach it; the secrets here never go to the browser."""

    origin: str  # scheme://address:port the client connects to ("http://localhost" on a Unix socket: Jupyter takes only a local Host there)
    path_prefix: str = ""  # the API server's service proxy path ("" for a local server)
    headers: dict = field(default_factory=dict)  # Host and the API server's Authorization
    token: str | None = None  # Jupyter's, sent as ?token=
    cookies: dict = field(default_factory=dict)  # code-server's session cookie
    ssl: object = None  # ssl.SSLContext for an https API server
    server_name: str = ""  # the name its certificate is checked against
    unix_socket: str = ""

    @property
    def secrets(self) -> tuple[str, ...]:
        """The credentials the proxy adds, scrubbed from whatever comes back (Jupyter echoes its token into pages)."""
        return tuple(value for value in (self.token or "", *self.cookies.values()) if value)


@dataclass(frozen=True)
class Opening:
    """The answer to "may this session open this instance now": 200 with the upstream, or a status and a sentence."""

    status: int
    code: str = ""
    message: str = ""
    state: str = ""
    upstream: Upstream | None = None


def session_user(session_key: str | None):
    """The signed-in user of a session cookie, or None (anonymous, expired, or a session ended by a password change)."""
    if not session_key:
        return None
    store = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    user = get_user(SimpleNamespace(session=store))
    return user if user.is_authenticated and user.is_active else None


def may_open(user, compute: ComputeTarget) -> bool:
    """Members only, and of them the instance's assigned user or staff (Azure ML's single owner): the services' rule."""
    return instances.open_allowed(user, compute)


def local_socket(compute: ComputeTarget) -> str | None:
    """A local instance's server socket, or None while none runs."""
    path = local_instance_socket(compute)
    return str(path) if path else None


def code_server_cookie(token: str) -> str:
    """code-server's session cookie: equal to the HASHED_PASSWORD the instance's Secret gives it."""
    return code_server_hash(token)


def open_instance(session_key: str | None, target: Route) -> Opening:
    """Authenticate, authorise and locate: 401 anonymous, 404 not a member (or no such instance), 403 a member who
    is neither the assigned user nor staff, 409 not Running, 502 when the cluster cannot be reached."""
    try:
        return _open_instance(session_key, target)
    finally:
        # Run in a worker thread outside Django's request cycle, which would close it: as Django does under ASGI
        # (DATABASE_CONN_MAX_AGE=0), the thread's connection does not outlive the decision.
        connections.close_all()


def _open_instance(session_key: str | None, target: Route) -> Opening:
    user = session_user(session_key)
    if user is None:
        return Opening(401, "Unauthorized", "Sign in to open a compute instance.")
    workspace = Workspace.objects.filter(name=target.workspace).first()
    if workspace is None or role_of(user, workspace) is None:
        return Opening(404, "NotFound", "Not found.")
    compute = ComputeTarget.objects.select_related("workspace", "instance").filter(
        workspace=workspace, name=target.name, type=ComputeType.COMPUTEINSTANCE).first()
    if compute is None or getattr(compute, "instance", None) is None:
        return Opening(404, "NotFound", f"Workspace '{workspace.name}' has no compute instance '{target.name}'.")
    if not may_open(user, compute):
        return Opening(403, "Forbidden", f"Only the assigned user of compute instance '{compute.name}' (or staff) may "
                                         "open it.")
    state = compute.instance.state
    if state != InstanceState.RUNNING:
        return Opening(409, "InstanceNotRunning", f"Compute instance '{compute.name}' is {state}"
                       + (f": {compute.instance.state_reason}" if compute.instance.state_reason else "")
                       + ("." if state not in (InstanceState.STOPPED,) else "; start it to open it."), state)
    try:
        upstream = _upstream(compute, target)
    except (transport.TransportError, addresses.AddressRefused, OSError) as exc:
        return Opening(502, "InstanceUnreachable", f"Compute instance '{compute.name}' cannot be reached: {exc}", state)
    if upstream is None:
        return Opening(503, "InstanceNotServing", f"Compute instance '{compute.name}' has no server answering yet.", state)
    return Opening(200, upstream=upstream, state=state)


def _credentials(compute: ComputeTarget, app: str) -> dict:
    token = compute.secrets.get("token", "")
    if app == "jupyter":
        return {"token": token}
    return {"cookies": {CODE_SERVER_COOKIE: code_server_cookie(token)}}


def _upstream(compute: ComputeTarget, target: Route) -> Upstream | None:
    if compute.properties.get("kubernetes_compute") == LOCAL:
        if target.app != "jupyter":
            return None  # the local mode runs JupyterLab only
        path = local_socket(compute)
        return Upstream("http://localhost", unix_socket=path, **_credentials(compute, "jupyter")) if path else None
    server = transport.api_server(connection_for(compute))
    # The address is checked (SSRF) and connected to as checked; the name stays for Host, SNI and the certificate.
    try:
        address = addresses.checked_addresses(server.host, server.port)[0]
    except OSError as exc:  # socket.gaierror
        raise OSError(f"the API server {server.host} does not resolve") from exc
    literal = f"[{address}]" if address.version == 6 else str(address)
    default_port = 443 if server.scheme == "https" else 80
    host = server.host if server.port == default_port else f"{server.host}:{server.port}"
    prefix = service_proxy_prefix(namespace_of(compute), instance_names(compute.name).service, PORTS[target.app])
    return Upstream(f"{server.scheme}://{literal}:{server.port}", prefix, {"Host": host, **server.headers},
                    ssl=server.tls, server_name=server.server_name, **_credentials(compute, target.app))
