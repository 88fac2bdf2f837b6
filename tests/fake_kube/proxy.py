"""The API server's pod and service proxies: /api/v1/namespaces/{ns}/{pods|services}/{id}/proxy[/{path}].

As kube-apiserver does it (pkg/registry/core/{pod,service} ResourceLocation, then k8s.io/apimachinery's
UpgradeAwareHandler with wrapTransport=true):

- the id is `[scheme:]name[:port]` (`%3A` is a ':'); anything else is 400 `invalid pod|service request "<id>"`.
- a pod: the port is the id's (a number; a name is dialled as such and fails unless it is `http`/`https`), else the
  first declared container port; the pod's first `status.podIPs` entry must be a global unicast address, else 400
  `address not allowed` (a pod without an IP yet). Readiness does not matter; a pod that is not Running refuses.
- a service: a port number stands for that Service port's name; a ready endpoint with that port name is picked.
- the backend path is the decoded path after `/proxy`, cleaned (`path.Join`), trailing slash kept; the query string
  passes untouched; a GET/HEAD of `.../proxy` with no path is a 301 to `.../proxy/`.
- the caller's `Authorization` is not passed on (the authentication filter removed it); the `Host` header is the
  caller's (the reverse proxy does not rewrite it); `X-Forwarded-For` and `X-Forwarded-Uri` are added.
- answers go through proxy_html (CORS headers dropped, `Location` and HTML links rewritten).
- `Connection: Upgrade` requests are dialled directly and, on 101, bytes are piped both ways until one side closes
  — **without the query string** (kubernetes#77142: h.Location has no RawQuery) and without X-Forwarded-Uri.

Nothing listens on a fake pod's IP: a test attaches a real HTTP server with `FakeKube.serve_pod(ns, pod, url,
port=None)` or `FakeKube.serve_service(ns, name, url, port=None)` (every pod the Service selects; `port` is the pod's
port the request reaches, None for any). A pod's own server wins over its Service's. Without one, or when it
refuses, the answer is the transport's 503 `error trying to reach service: dial tcp IP:PORT: connect: connection
refused`.
"""
from __future__ import annotations

import http.client
import ipaddress
import posixpath
import random
import re
import socket
import threading
import traceback
import uuid
from urllib.parse import parse_qsl, unquote, urlsplit

from . import proxy_html
from .auth import forbidden_message
from .errors import ApiError, bad_request, not_found, unauthorized
from .selectors import labels_match, selector_terms

PATH = re.compile(r"^/api/v1/namespaces/(?P<namespace>[^/]+)/(?P<plural>services|pods)/(?P<id>[^/]+)/proxy"
                  r"(?P<rest>/.*)?$")
HOP_BY_HOP = {"connection", "proxy-connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
              "trailer", "trailers", "transfer-encoding", "upgrade"}
VERBS = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")  # ProxyREST.ConnectMethods
WELL_KNOWN_PORTS = {"http": 80, "https": 443}  # what the apiserver host's /etc/services resolves


def handles(raw_path: str) -> bool:
    """Whether a request line's path is a pod or service proxy request."""
    return PATH.match(urlsplit(raw_path).path) is not None


def unavailable(message: str) -> ApiError:
    """apierrors.NewServiceUnavailable: 503, reason ServiceUnavailable, no details."""
    return ApiError(503, "ServiceUnavailable", message)


def plain_error(message: str) -> ApiError:
    """An error that is not an API status: 500 without a reason."""
    return ApiError(500, "", message)


def split_id(object_id: str, kind: str = "service") -> tuple[str, str, str]:
    """SplitSchemeNamePort: name, name:port or scheme:name:port (scheme http or https)."""
    parts = object_id.split(":")
    if len(parts) > 3:
        raise bad_request(f'invalid {kind} request "{object_id}"')
    scheme, name, port = parts if len(parts) == 3 else ("", parts[0], parts[1] if len(parts) == 2 else "")
    if not name or scheme not in ("", "http", "https"):
        raise bad_request(f'invalid {kind} request "{object_id}"')
    return scheme, name, port


def _ready(pod: dict) -> bool:
    status = pod.get("status") or {}
    return (status.get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp")
            and any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []))


def _container_port(pod: dict, target) -> int | None:
    if isinstance(target, int):
        return target
    for container in pod["spec"].get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("name") == target:
                return port.get("containerPort")
    return None


def endpoints(kube, namespace: str, service: dict, port_name: str) -> list[tuple[dict, int]]:
    """(pod, pod port) of the ready addresses the Service's Endpoints would list for the port named `port_name`."""
    selector = (service.get("spec") or {}).get("selector")
    if not selector:
        return []  # no selector: the endpoints controller leaves the Service alone
    terms = selector_terms({"matchLabels": selector})
    ports = [p for p in service["spec"].get("ports") or [] if p.get("name", "") == port_name]
    found = []
    for pod in kube.list("pods", namespace):
        if not _ready(pod) or not labels_match(terms, pod["metadata"].get("labels")):
            continue
        for port in ports:
            number = _container_port(pod, port.get("targetPort", port.get("port")))
            if number:
                found.append((pod, number))
    return found


def locate(kube, namespace: str, service_id: str) -> tuple[str, list[tuple[dict, int]]]:
    """Service ResourceLocation: (scheme, ready endpoints for the port) or the apiserver's error."""
    scheme, name, port = split_id(service_id)
    service = kube.get("services", name, namespace)
    if port.isdigit():
        if service is None:
            raise not_found("services", "", name)
        named = [p.get("name", "") for p in service["spec"].get("ports") or [] if p.get("port") == int(port)]
        if not named:
            raise unavailable(f'no service port {int(port)} found for service "{name}"')
        port = named[0]
    elif service is None:
        raise not_found("endpoints", "", name)
    found = endpoints(kube, namespace, service, port)
    if not found:
        raise unavailable(f'no endpoints available for service "{name}"')
    return scheme or "http", found


def locate_pod(kube, namespace: str, pod_id: str) -> tuple[dict, str, str]:
    """Pod ResourceLocation: (pod, ip, port as the id or the first container port gives it) or the error."""
    _, name, port = split_id(pod_id, "pod")
    pod = kube.get("pods", name, namespace)
    if pod is None:
        raise not_found("pods", "", name)
    if not port:
        declared = [p["containerPort"] for c in pod["spec"].get("containers") or [] for p in c.get("ports") or []]
        port = str(declared[0]) if declared else ""
    ips = (pod.get("status") or {}).get("podIPs") or []
    ip = ips[0].get("ip", "") if ips else ""
    try:
        address = ipaddress.ip_address(ip)
        allowed = not (address.is_unspecified or address.is_loopback or address.is_multicast
                       or address.is_link_local or str(address) == "255.255.255.255")
    except ValueError:
        allowed = False
    if not allowed:  # net.IP.IsGlobalUnicast
        raise bad_request("address not allowed")
    return pod, ip, port


def _dial_port(ip: str, port: str, scheme: str) -> tuple[str, int]:
    """What Go's dialer makes of host:port: a number, a well-known name, or the DNS error it gives."""
    if not port:
        return f"{ip}", 443 if scheme == "https" else 80
    if port.isdigit():
        return f"{ip}:{port}", int(port)
    if port in WELL_KNOWN_PORTS:
        return f"{ip}:{port}", WELL_KNOWN_PORTS[port]
    raise _DialError(f"dial tcp: lookup tcp/{port}: unknown port")


class _DialError(Exception):
    pass


def _backend(kube, namespace: str, pod: dict, port: int, services: list[str]) -> str | None:
    """The real server attached to this pod's port: its own, else one of its Services'."""
    backends = kube.proxy_backends
    name = pod["metadata"]["name"]
    for key in (("pod", name, port), ("pod", name, None)):
        if (namespace, *key) in backends:
            return backends[(namespace, *key)]
    for service in services:
        for key in (("service", service, port), ("service", service, None)):
            if (namespace, *key) in backends:
                return backends[(namespace, *key)]
    return None


def _selecting_services(kube, namespace: str, pod: dict) -> list[str]:
    names = []
    for service in kube.list("services", namespace):
        selector = (service.get("spec") or {}).get("selector")
        if selector and labels_match(selector_terms({"matchLabels": selector}), pod["metadata"].get("labels")):
            names.append(service["metadata"]["name"])
    return names


class Target:
    """Where one proxy request goes: the pod's address as the apiserver dials it, and the test's real server."""

    def __init__(self, address: str, backend: str | None, scheme: str):
        self.address, self.backend, self.scheme = address, backend, scheme

    def refused(self) -> str:
        """Go's dial error for a pod address nothing listens on."""
        return f"dial tcp {self.address}: connect: connection refused"


def resolve(kube, namespace: str, plural: str, object_id: str) -> Target:
    """ResourceLocation for either kind, plus the attached real server (None: nothing listens)."""
    if plural == "services":
        scheme, found = locate(kube, namespace, object_id)
        pod, port = random.choice(found)
        ip = (pod.get("status") or {}).get("podIP", "")
        return Target(f"{ip}:{port}", _backend(kube, namespace, pod, port, [split_id(object_id)[1]]), scheme)
    pod, ip, port = locate_pod(kube, namespace, object_id)
    scheme = split_id(object_id, "pod")[0] or "http"
    try:
        address, number = _dial_port(ip, port, scheme)
    except _DialError as error:
        raise unavailable(f"error trying to reach service: {error}") from None
    running = (pod.get("status") or {}).get("phase") == "Running"
    backend = _backend(kube, namespace, pod, number, _selecting_services(kube, namespace, pod)) if running else None
    return Target(address if ":" in address else f"{address}:{number}", backend, scheme)


def backend_path(rest: str, raw_path: str) -> str:
    """PodProxyOptions.Path joined as the REST handler does: decoded, cleaned, leading and trailing slash kept."""
    inner = unquote(rest).strip("/")
    path = "/" + inner if inner else ""
    if raw_path.endswith("/") and not path.endswith("/"):
        path += "/"
    if not path:
        return ""
    cleaned = posixpath.normpath(path)
    cleaned = "/" + cleaned.lstrip("/")
    return cleaned + "/" if path.endswith("/") and not cleaned.endswith("/") else cleaned


def path_prepend(request_path: str, location_path: str) -> str:
    """defaultProxyTransport: the request path less the backend path (the prefix links get)."""
    suffix = location_path
    if request_path.endswith("/") and not suffix.endswith("/"):
        suffix += "/"
    return request_path[:-len(suffix)] if suffix and request_path.endswith(suffix) else request_path


# --- the handler ------------------------------------------------------------------------------

def serve(handler) -> None:
    """Answer one proxy request on `handler` (the fake's request handler): route, authorise, fault, forward."""
    kube = handler.server.kube
    url = urlsplit(handler.path)
    match = PATH.match(url.path)
    namespace, plural = unquote(match["namespace"]), match["plural"]
    object_id, rest = unquote(match["id"]), match["rest"] or ""
    length = int(handler.headers.get("Content-Length") or 0)
    body = handler.rfile.read(length) if length else b""
    query = dict(parse_qsl(url.query, keep_blank_values=True))
    parts = {"group": "", "version": "v1", "plural": plural, "namespace": namespace, "name": object_id,
             "subresource": "proxy"}
    record = handler._record(url.path, query, b"", parts)  # the body is the backend's business, not logged
    record.verb = VERBS.get(handler.command, handler.command.lower())  # RequestInfo: other methods, lower-cased
    kube.requests.add(record)
    fault = kube.faults.pick(handler.command, record.verb, record.resource, url.path)
    if fault and not fault[1].after:
        return handler._inject(fault, record)
    request = Request(handler, namespace, plural, object_id, rest, url, body, record)
    try:
        request.authorise()
        target = resolve(kube, namespace, plural, object_id)
        if fault:
            return handler._inject(fault, record)
        request.proxy(target)
    except ApiError as error:
        if fault:
            return handler._inject(fault, record)
        return _error(handler, error, record)
    except Exception as error:  # a bug in the fake: answer 500 and keep it for the test to see
        kube.server_errors.append(traceback.format_exc())
        return _error(handler, ApiError(500, "InternalError", f"fake-kube bug: {error!r}"), record)


def _error(handler, error: ApiError, record) -> None:
    if handler.command == "HEAD":
        record.status = error.code
        handler.send_response(error.code)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", "0")
        handler.end_headers()
        return
    handler._send(error.code, error.status(), dict(error.headers), record)


class Request:
    """One proxied request: its parts as the apiserver sees them and how it is forwarded."""

    def __init__(self, handler, namespace, plural, object_id, rest, url, body, record):
        self.handler, self.kube = handler, handler.server.kube
        self.namespace, self.plural, self.object_id = namespace, plural, object_id
        self.url, self.body, self.record = url, body, record
        self.request_path = unquote(url.path)  # req.URL.Path: decoded
        self.location_path = backend_path(rest, url.path)

    def authorise(self) -> None:
        """Authentication (the token), then RBAC on pods/proxy or services/proxy with the method's verb."""
        user = self.kube.auth.authenticate(self.handler.headers.get("Authorization"))
        if user is None:
            raise unauthorized()
        self.record.user = user.name
        if self.handler.command not in METHODS:
            raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested "
                                                    "resource", {"name": self.object_id, "kind": self.plural})
        verb = self.record.verb
        if not self.kube.auth.allowed(user, verb, "", self.plural, "proxy", self.namespace, self.object_id):
            raise ApiError(403, "Forbidden", forbidden_message(user, verb, "", self.plural, "proxy", self.namespace,
                                                               self.object_id),
                           {"name": self.object_id, "kind": self.plural})

    def proxy(self, target: Target) -> None:
        """UpgradeAwareHandler.ServeHTTP: upgrade, root redirect, or a round trip through the rewriting transport."""
        if "upgrade" in (self.handler.headers.get("Connection") or "").lower():
            return upgrade(self, target)
        if not self.location_path and self.handler.command in ("GET", "HEAD"):
            location = self.request_path + "/" + (f"?{self.url.query}" if self.url.query else "")
            return self._write(301, [("Location", location)], b"")
        status, headers, payload = self._round_trip(target)
        self._write(status, headers, payload)

    def outgoing_path(self) -> str:
        """The backend request's path and query as they go on the wire."""
        path = self.location_path
        if not path.endswith("/") and self.request_path.endswith("/"):
            path += "/"
        return proxy_html.go_escape_path(path or "/") + (f"?{self.url.query}" if self.url.query else "")

    def outgoing_headers(self, upgrading: bool) -> list[tuple[str, str]]:
        """The caller's headers less Authorization (and hop-by-hop ones unless upgrading), plus X-Forwarded-*."""
        connection = {t.strip().lower() for t in (self.handler.headers.get("Connection") or "").split(",")}
        dropped = {"authorization", "content-length"} | (set() if upgrading else HOP_BY_HOP | connection)
        headers = [(k, v) for k, v in self.handler.headers.items() if k.lower() not in dropped]
        client = self.handler.client_address[0]
        forwarded = self.handler.headers.get("X-Forwarded-For")
        headers = [(k, v) for k, v in headers if k.lower() != "x-forwarded-for"]
        headers.append(("X-Forwarded-For", f"{forwarded}, {client}" if forwarded else client))
        if not upgrading:
            prefix = path_prepend(self.request_path, self.location_path)
            escaped = self.outgoing_path().split("?", 1)[0]
            forwarded_uri = posixpath.normpath(prefix + "/" + escaped) + ("/" if escaped.endswith("/") else "")
            headers.append(("X-Forwarded-Uri", forwarded_uri.replace("//", "/")))
        if not any(k.lower() == "host" for k, _ in headers):
            headers.append(("Host", self.handler.headers.get("Host") or ""))
        return headers

    def _round_trip(self, target: Target) -> tuple[int, list, bytes]:
        if target.backend is None:
            raise unavailable(f"error trying to reach service: {target.refused()}")
        backend = urlsplit(target.backend)
        connection = http.client.HTTPConnection(backend.hostname, backend.port or 80, timeout=300)
        try:
            connection.putrequest(self.handler.command, backend.path.rstrip("/") + self.outgoing_path(),
                                  skip_host=True, skip_accept_encoding=True)
            for key, value in self.outgoing_headers(upgrading=False):
                connection.putheader(key, value)
            if self.body or self.handler.command in ("POST", "PUT", "PATCH"):
                connection.putheader("Content-Length", str(len(self.body)))
            connection.endheaders(self.body or None)
            response = connection.getresponse()
            status, headers, payload = response.status, response.getheaders(), response.read()
        except ConnectionRefusedError:
            raise unavailable(f"error trying to reach service: {target.refused()}") from None
        except (OSError, http.client.HTTPException) as exc:
            raise unavailable(f"error trying to reach service: {exc or type(exc).__name__}") from None
        finally:
            connection.close()
        return self._transport(status, headers, payload, target)

    def _transport(self, status: int, headers: list, payload: bytes, target: Target) -> tuple[int, list, bytes]:
        """corsRemovingTransport and the rewriting Transport, on the backend's answer."""
        connection = {t.strip().lower() for k, v in headers if k.lower() == "connection" for t in v.split(",")}
        headers = [(k, v) for k, v in headers if k.lower() not in HOP_BY_HOP | connection | proxy_html.CORS_HEADERS]
        prefix = path_prepend(self.request_path, self.location_path)
        host = self.handler.headers.get("Host") or ""

        def rewrite(value: str) -> str:
            return proxy_html.rewrite_url(value, prefix, target.address, host)
        location = next((v for k, v in headers if k.lower() == "location"), "")
        if location:
            return status, [(k, rewrite(v) if k.lower() == "location" else v) for k, v in headers], payload
        media = next((v for k, v in headers if k.lower() == "content-type"), "").split(";", 1)[0].strip()
        if media != "text/html" or self.handler.command == "HEAD":
            return status, headers, payload
        encoding = next((v for k, v in headers if k.lower() == "content-encoding"), "")
        try:
            rewritten = proxy_html.rewrite_body(payload, encoding, rewrite)
        except proxy_html.RewriteError as error:
            raise plain_error(str(error)) from None
        if rewritten is None:
            return status, headers, payload
        return status, [(k, v) for k, v in headers if k.lower() != "content-length"], rewritten

    def _write(self, status: int, headers: list, payload: bytes) -> None:
        handler = self.handler
        self.record.status = status
        try:
            handler.send_response_only(status)  # no Server header of our own; Date only if the backend gave none
            if not any(k.lower() == "date" for k, _ in headers):
                handler.send_header("Date", handler.date_time_string())
            handler.send_header("Audit-Id", str(uuid.uuid4()))
            handler.send_header("Cache-Control", "no-cache, private")  # WithCacheControl, before the backend's own
            length = None
            for key, value in headers:
                if key.lower() == "content-length":
                    length = value
                    continue
                handler.send_header(key, value)
            head = handler.command == "HEAD"
            handler.send_header("Content-Length", length if head and length is not None else str(len(payload)))
            handler.end_headers()
            if not head:
                handler.wfile.write(payload)
        except OSError:
            handler.close_connection = True


# --- Upgrade (WebSocket, SPDY) ------------------------------------------------------------------

def upgrade(request: Request, target: Target) -> None:
    """tryUpgrade: dial, send the request (no query string), relay the answer; on 101 pipe bytes both ways."""
    handler = request.handler
    if target.backend is None:
        raise plain_error(f"error dialing backend: {target.refused()}")
    backend = urlsplit(target.backend)
    try:
        upstream = socket.create_connection((backend.hostname, backend.port or 80), timeout=30)
    except OSError:
        raise plain_error(f"error dialing backend: {target.refused()}") from None
    path = backend.path.rstrip("/") + request.outgoing_path().split("?", 1)[0]  # kubernetes#77142
    lines = [f"{handler.command} {path} HTTP/1.1"]
    lines += [f"{k}: {v}" for k, v in request.outgoing_headers(upgrading=True)]
    if request.body:
        lines.append(f"Content-Length: {len(request.body)}")
    upstream.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + request.body)
    head = _read_head(upstream)
    status = _status_of(head)
    if status is None:
        upstream.close()
        raise plain_error("malformed HTTP response")
    if status != 101 and status < 400:
        upstream.close()
        raise plain_error(f"invalid upgrade response: status code {status}")
    request.record.status = status
    handler.close_connection = True  # hijacked: this connection is the tunnel's now
    client = handler.connection
    try:
        handler.wfile.flush()
        client.sendall(head)
        if status == 101:
            _pipe(client, upstream, handler.rfile)
        else:
            upstream.settimeout(10)
            _copy(upstream.recv, client)
    except OSError:
        pass
    finally:
        upstream.close()


def _read_head(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data and len(data) < 65536:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def _status_of(head: bytes) -> int | None:
    match = re.match(rb"HTTP/1\.[01] (\d{3})", head)
    return int(match.group(1)) if match else None


def _copy(read, sink: socket.socket) -> None:
    try:
        while chunk := read(65536):
            sink.sendall(chunk)
    except (OSError, ValueError):
        pass


def _pipe(client: socket.socket, upstream: socket.socket, client_reader) -> None:
    """Copy both ways until either side ends; then both connections close (the handler's deferred closes)."""
    upstream.settimeout(None)
    client.settimeout(None)
    done = threading.Event()

    def one_way(read, sink):
        _copy(read, sink)
        done.set()
    # The client side is read through the handler's buffer: frames sent right behind the request may be in it.
    for read, sink in ((client_reader.read1, upstream), (upstream.recv, client)):
        threading.Thread(target=one_way, args=(read, sink), daemon=True).start()
    done.wait()
    for sock in (client, upstream):
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
