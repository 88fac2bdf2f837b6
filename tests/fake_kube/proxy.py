"""The API server's service proxy: /api/v1/namespaces/{ns}/services/[scheme:]{name}[:{port}]/proxy/{path}.

As kube-apiserver's ResourceLocation does it: the id is split into scheme, name and port (`%3A` is a ':'); a port
number is looked up among the Service's ports and stands for that port's name; the request goes to a ready pod
behind the Service (what the Endpoints of the Service list: Running, Ready, not terminating, selected, with the
target port) whose endpoint port has that name — a Service with named ports therefore needs `name:port` in the
id. No such pod: 503 `no endpoints available for service "name"`. The caller's Authorization header is not passed
on (the authentication filter drops it). The backend's answer (status, headers, body) comes back as it is.

Nothing listens on a fake pod's IP, so a test attaches a real HTTP server to a Service with
`FakeKube.serve_service(namespace, name, url)`: requests for any of its pods go there. Without one, or when it
refuses the connection, the answer is the apiserver's 503 `error trying to reach service: dial tcp IP:PORT:
connect: connection refused`.
"""
from __future__ import annotations

import http.client
import random
import re
import socket
import traceback
from urllib.parse import parse_qsl, unquote, urlsplit

from .auth import forbidden_message
from .errors import ApiError, bad_request, not_found, unauthorized
from .selectors import labels_match, selector_terms

PATH = re.compile(r"^/api/v1/namespaces/(?P<namespace>[^/]+)/services/(?P<id>[^/]+)/proxy(?P<rest>/.*)?$")
HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
              "transfer-encoding", "upgrade", "content-length", "host", "authorization"}
VERBS = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete",
         "OPTIONS": "get"}


def handles(raw_path: str) -> bool:
    """Whether a request line's path is a service proxy request."""
    return PATH.match(urlsplit(raw_path).path) is not None


def unavailable(message: str) -> ApiError:
    """apierrors.NewServiceUnavailable: 503, reason ServiceUnavailable, no details."""
    return ApiError(503, "ServiceUnavailable", message)


def split_id(service_id: str) -> tuple[str, str, str]:
    """SplitSchemeNamePort: name, name:port or scheme:name:port (scheme http or https)."""
    parts = service_id.split(":")
    if len(parts) > 3:
        raise bad_request(f'invalid service request "{service_id}"')
    scheme, name, port = parts if len(parts) == 3 else ("", parts[0], parts[1] if len(parts) == 2 else "")
    if not name or scheme not in ("", "http", "https"):
        raise bad_request(f'invalid service request "{service_id}"')
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
    """ResourceLocation: (scheme, ready endpoints for the port) or the apiserver's error."""
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


def forward(handler, url: str, method: str, rest: str, query: str, body: bytes) -> tuple[int, list, bytes]:
    """Send the request to the attached backend; (status, headers, body) as it answered."""
    target = urlsplit(url)
    path = (target.path.rstrip("/") + (rest or "/")) + (f"?{query}" if query else "")
    connection = http.client.HTTPConnection(target.hostname, target.port or 80, timeout=300)
    headers = {key: value for key, value in handler.headers.items() if key.lower() not in HOP_BY_HOP}
    headers["X-Forwarded-For"] = handler.client_address[0]
    try:
        connection.request(method, path, body=body or None, headers=headers)
        response = connection.getresponse()
        return response.status, response.getheaders(), response.read()
    finally:
        connection.close()


def serve(handler) -> None:
    """Answer one proxy request on `handler` (the fake's request handler): route, authorise, fault, forward."""
    kube = handler.server.kube
    url = urlsplit(handler.path)
    match = PATH.match(url.path)
    namespace, service_id, rest = unquote(match["namespace"]), unquote(match["id"]), match["rest"] or ""
    length = int(handler.headers.get("Content-Length") or 0)
    body = handler.rfile.read(length) if length else b""
    query = dict(parse_qsl(url.query, keep_blank_values=True))
    parts = {"group": "", "version": "v1", "plural": "services", "namespace": namespace, "name": service_id,
             "subresource": "proxy"}
    record = handler._record(url.path, query, b"", parts)  # the body is the backend's business, not logged
    record.verb = VERBS.get(handler.command, handler.command.lower())
    kube.requests.add(record)
    fault = kube.faults.pick(handler.command, record.verb, record.resource, url.path)
    if fault and not fault[1].after:
        return handler._inject(fault, record)
    try:
        status, headers, payload = _answer(handler, kube, namespace, service_id, rest, url.query, body, record)
    except ApiError as error:
        if fault:
            return handler._inject(fault, record)
        return handler._send(error.code, error.status(), dict(error.headers), record)
    except Exception as error:  # a bug in the fake: answer 500 and keep it for the test to see
        kube.server_errors.append(traceback.format_exc())
        return handler._send(500, ApiError(500, "InternalError", f"fake-kube bug: {error!r}").status(), {}, record)
    if fault:
        return handler._inject(fault, record)
    record.status = status
    try:
        handler.send_response(status)
        for key, value in headers:
            if key.lower() not in HOP_BY_HOP:
                handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)
    except OSError:
        handler.close_connection = True


def _answer(handler, kube, namespace: str, service_id: str, rest: str, query: str, body: bytes, record):
    user = kube.auth.authenticate(handler.headers.get("Authorization"))
    if user is None:
        raise unauthorized()
    record.user = user.name
    if not kube.auth.allowed(user, record.verb, "", "services", "proxy", namespace, service_id):
        raise ApiError(403, "Forbidden", forbidden_message(user, record.verb, "", "services", "proxy", namespace,
                                                           service_id),
                       {"name": service_id, "kind": "services"})
    _, found = locate(kube, namespace, service_id)
    pod, port = random.choice(found)
    ip = (pod.get("status") or {}).get("podIP", "")
    name = split_id(service_id)[1]
    backend = kube.proxy_backends.get((namespace, name))
    refused = unavailable(f"error trying to reach service: dial tcp {ip}:{port}: connect: connection refused")
    if backend is None:
        raise refused
    try:
        return forward(handler, backend, handler.command, rest, query, body)
    except (ConnectionRefusedError, socket.gaierror):
        raise refused from None
    except (OSError, http.client.HTTPException) as exc:
        raise unavailable(f"error trying to reach service: {exc}") from None
