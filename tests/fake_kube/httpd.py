"""The HTTP face of the fake: routing, authentication, authorization, faults, recording, streaming."""
from __future__ import annotations

import json
import socket
import struct
import time
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

from . import deletion, discovery
from . import proxy as service_proxy
from .auth import access_review, forbidden_message
from .errors import ApiError, method_not_allowed, not_served, unauthorized
from .faults import RequestRecord
from .request import Call
from .subresources import flag, limit_bytes, log_container, scale_of, select_lines, write_scale
from .watch import watch_events

OPEN_PATHS = ("/healthz", "/livez", "/readyz", "/version")  # anonymous access, as with default RBAC
VERB_OF = {"POST": "create", "PUT": "update", "PATCH": "patch"}
WRITES = ("create", "update", "patch", "delete", "deletecollection")


def parse_resource_path(path: str) -> dict | None:
    """Split /api/v1/namespaces/ns/pods/name/log into its parts (None if not a resource path)."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    return {"group": group, "version": version, "plural": rest[0], "namespace": namespace,
            "name": rest[1] if len(rest) > 1 else None, "subresource": rest[2] if len(rest) > 2 else None}


class FakeHTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that knows its FakeKube and can cut every open connection on stop."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, kube, tls=None):
        super().__init__(address, Handler)
        self.kube = kube
        self.tls = tls  # an ssl.SSLContext: serve HTTPS (the handshake runs in the connection's own thread)
        self.sockets: set = set()

    def finish_request(self, request, client_address):
        if self.tls is not None:
            try:
                request = self.tls.wrap_socket(request, server_side=True)
            except OSError:  # a client that does not speak TLS, or gives up: as a real server, just close
                return
        super().finish_request(request, client_address)

    def process_request(self, request, client_address):
        self.sockets.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        self.sockets.discard(request)
        super().shutdown_request(request)

    def close_all(self) -> None:
        """Cut open keep-alive and streaming connections."""
        for sock in list(self.sockets):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Handler(BaseHTTPRequestHandler):
    """One connection; HTTP/1.1 keep-alive like a real API server."""

    protocol_version = "HTTP/1.1"
    server: FakeHTTPServer

    def log_message(self, format, *args):  # noqa: A002 - keep test output quiet
        pass

    def do_GET(self):  # noqa: N802
        self._serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_GET  # noqa: N815

    def do_HEAD(self):  # noqa: N802 - the proxies take HEAD; elsewhere a bodiless 405
        if service_proxy.handles(self.path):
            return service_proxy.serve(self)
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def setup(self):
        super().setup()
        # Headers and body go out in separate writes: without NODELAY, Nagle + delayed ACK add ~40 ms each.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def finish(self):
        try:
            super().finish()
        except OSError:
            pass

    # --- the pipeline ---------------------------------------------------------------------------

    def _serve(self) -> None:
        kube = self.server.kube
        if service_proxy.handles(self.path):
            return service_proxy.serve(self)  # /api/v1/namespaces/{ns}/{services|pods}/{id}/proxy/...
        url = urlsplit(self.path)
        path = url.path.rstrip("/") or "/"  # /version/ is /version
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = parse_resource_path(path)
        record = self._record(path, query, body, parts)
        kube.requests.add(record)
        fault = kube.faults.pick(self.command, record.verb, record.resource, path)
        if fault and not fault[1].after:
            return self._inject(fault, record)
        try:
            status, payload, headers = self._dispatch(path, query, body, parts, record)
        except ApiError as error:
            status, payload, headers = error.code, error.status(), dict(error.headers)
        except Exception as error:  # a bug in the fake: answer 500 and keep it for the test to see
            kube.server_errors.append(traceback.format_exc())
            status, payload, headers = 500, ApiError(500, "InternalError", f"fake-kube bug: {error!r}").status(), {}
        if fault:
            return self._inject(fault, record)
        if payload is not None:
            self._send(status, payload, headers, record)
        if record.verb in WRITES and 200 <= status < 300:
            try:
                kube.after_write()
            except Exception:  # a bug in a simulated controller
                kube.server_errors.append(traceback.format_exc())

    def _record(self, path: str, query: dict, body: bytes, parts: dict | None) -> RequestRecord:
        content_type = self.headers.get("Content-Type", "")
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = body.decode("utf-8", "replace")
        record = RequestRecord(self.command, path, query, content_type, parsed, time.time(), time.monotonic(),
                               headers=dict(self.headers))
        if parts:
            record.group, record.resource = parts["group"], parts["plural"]
            record.namespace, record.name = parts["namespace"] or "", parts["name"] or ""
            record.subresource = parts["subresource"] or ""
            if self.command == "GET":
                watching = query.get("watch") in ("true", "1", "True")
                record.verb = "get" if parts["name"] else ("watch" if watching else "list")
            elif self.command == "DELETE":
                record.verb = "delete" if parts["name"] else "deletecollection"
            else:
                record.verb = VERB_OF.get(self.command, self.command.lower())
        return record

    def _dispatch(self, path: str, query: dict, body: bytes, parts: dict | None, record: RequestRecord):
        kube = self.server.kube
        header = self.headers.get("Authorization")
        user = kube.auth.authenticate(header)
        if user is None and (header or path not in OPEN_PATHS):
            raise unauthorized()
        record.user = user.name if user else "system:anonymous"
        if parts is None:
            return 200, self._discovery(path), {}
        rt = kube.registry.find(parts["group"], parts["version"], parts["plural"])
        if rt is None or (parts["subresource"] and parts["subresource"] not in rt.subresources) \
                or (parts["namespace"] and not rt.namespaced) or (rt.namespaced and parts["name"] and not parts["namespace"]):
            raise not_served()
        verb = record.verb
        allowed = ("get",) if parts["subresource"] == "log" else ("get", "update", "patch") if parts["subresource"] \
            else rt.verbs
        if verb not in allowed or (verb == "create" and parts["name"]):
            raise method_not_allowed(self.command)
        everyone = rt.plural == "selfsubjectaccessreviews"  # system:basic-user lets anybody ask
        if not everyone and not kube.auth.allowed(user, verb, rt.group, rt.plural, parts["subresource"] or "",
                                                  parts["namespace"] or "", parts["name"] or ""):
            raise ApiError(403, "Forbidden", forbidden_message(user, verb, rt.group, rt.plural, parts["subresource"] or "",
                                                               parts["namespace"] or "", parts["name"] or ""),
                           {"name": parts["name"], "group": rt.group, "kind": rt.plural} if parts["name"] else
                           {"group": rt.group, "kind": rt.plural})
        call = Call(rt, parts["namespace"], parts["name"], parts["subresource"], query, body,
                    self.headers.get("Content-Type", "application/json"), user.name,
                    self.headers.get("User-Agent", ""))
        status, payload = self._resource(call, verb, user, record)
        headers = {"Warning": call.warnings} if call.warnings else {}
        return status, payload, headers

    def _resource(self, call: Call, verb: str, user, record: RequestRecord):
        kube, api = self.server.kube, self.server.kube.api
        sub = call.subresource
        if sub == "log":
            self._logs(call, record)
            return 200, None
        if sub == "scale":
            return 200, scale_of(api, call) if verb == "get" else write_scale(api, call)
        if verb == "get":
            return 200, api.get(call)
        if verb == "list":
            return 200, api.list(call)
        if verb == "watch":
            self._watch(call, record)
            return 200, None
        if verb == "create":
            if call.rt.plural == "selfsubjectaccessreviews":
                return 201, access_review(kube.auth, user, json.loads(call.body or b"{}"))
            return 201, api.create(call)
        if verb == "update":
            return 200, api.update(call)
        if verb == "patch":
            before = kube.store.get(call.rt.key, call.namespace or "", call.name)
            result = api.patch(call)
            return (201 if before is None else 200), result
        if verb == "delete":
            return 200, deletion.delete(api, call)
        return 200, deletion.delete_collection(api, call)

    def _discovery(self, path: str) -> dict:
        kube = self.server.kube
        registry = kube.registry
        if path in ("/healthz", "/livez", "/readyz"):
            return "ok"
        if path == "/version":
            return discovery.VERSION
        if path == "/api":
            return discovery.api_versions(f"127.0.0.1:{kube.port}")
        if path == "/apis":
            return discovery.api_groups(registry)
        if path == "/api/v1":
            return discovery.resource_list(registry, "", "v1")
        if path in ("/openapi/v2",):
            return discovery.openapi_v2(registry)
        if path == "/openapi/v3":
            return {"paths": {}}
        parts = [p for p in path.split("/") if p]
        if len(parts) == 2 and parts[0] == "apis":
            found = discovery.api_group(registry, parts[1])
        elif len(parts) == 3 and parts[0] == "apis":
            found = discovery.resource_list(registry, parts[1], parts[2])
        else:
            found = None
        if found is None:
            raise not_served()
        return found

    # --- responses ------------------------------------------------------------------------------

    def _send(self, status: int, payload, headers: dict, record: RequestRecord) -> None:
        text = payload if isinstance(payload, str) else json.dumps(payload)
        data = text.encode("utf-8", "surrogateescape")  # a log's raw bytes go out as they came (Logs: bytes)
        record.status = status  # before writing: the client may look at the log as soon as it has the answer
        record.headers = {k: v for k, v in headers.items()}
        try:
            self.send_response(status)
            plain = isinstance(payload, str)
            self.send_header("Content-Type", "text/plain; charset=utf-8" if plain else "application/json")
            self.send_header("Content-Length", str(len(data)))
            self._common_headers(headers)
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self.close_connection = True

    def _common_headers(self, headers: dict) -> None:
        self.send_header("Audit-Id", str(uuid.uuid4()))
        self.send_header("Cache-Control", "no-cache, private")
        for key, value in headers.items():
            for item in value if isinstance(value, list) else [value]:
                if key == "Warning":  # RFC 7234 warn-text: a quoted string with \" escapes
                    item = '299 - "' + str(item).replace("\\", "\\\\").replace('"', '\\"') + '"'
                self.send_header(key, str(item))

    def _start_stream(self, content_type: str, record: RequestRecord) -> None:
        record.status = 200
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self._common_headers({})
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _end_stream(self) -> None:
        try:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def _watch(self, call: Call, record: RequestRecord) -> None:
        kube = self.server.kube
        events = watch_events(kube.api, call, kube.stopping, kube.bookmark_interval, kube.watch_timeout)
        first = next(events, None)  # raises selector errors before the 200 goes out
        self._start_stream("application/json", record)
        try:
            if first is not None:
                self._chunk(json.dumps(first).encode() + b"\n")
                for event in events:
                    self._chunk(json.dumps(event).encode() + b"\n")
        except OSError:
            self.close_connection = True
            return
        self._end_stream()

    def _logs(self, call: Call, record: RequestRecord) -> None:
        kube = self.server.kube
        pod, container = log_container(kube.api, call, kube.sim.kubelet.log_failures)
        if container is None:
            self._send(200, "", {}, record)
            return
        key = (call.namespace, call.name, container)
        lines = kube.sim.kubelet.logs.get(key)
        text = "".join(line + "\n" for line in select_lines(lines, call.query, kube.clock.now()))
        if not flag(call.query.get("follow")):
            self._send(200, limit_bytes(text, call.query), {}, record)
            return
        self._follow(call, record, key, text, len(lines))

    def _follow(self, call: Call, record: RequestRecord, key: tuple, text: str, sent: int) -> None:
        kube = self.server.kube
        logs = kube.sim.kubelet.logs
        self._start_stream("text/plain", record)
        try:
            if text:
                self._chunk(text.encode("utf-8", "surrogateescape"))
            while not kube.stopping.is_set():
                with logs.changed:
                    logs.changed.wait(0.2)
                lines = logs.get(key)
                if len(lines) > sent:
                    stamps = flag(call.query.get("timestamps"))
                    fresh = select_lines(lines[sent:], {"timestamps": "true"} if stamps else {}, kube.clock.now())
                    self._chunk("".join(line + "\n" for line in fresh).encode("utf-8", "surrogateescape"))
                    sent = len(lines)
                pod = kube.store.get(("", "pods"), call.namespace, call.name)
                if pod is None or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                    break
        except OSError:
            self.close_connection = True
            return
        self._end_stream()

    # --- faults ---------------------------------------------------------------------------------

    def _inject(self, fault, record: RequestRecord) -> None:
        kind, rule = fault
        record.fault = kind
        if kind in ("500", "503", "504", "429"):
            code = int(kind)
            reasons = {500: ("InternalError", "Internal error occurred: injected fault"),
                       503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
                       504: ("Timeout", "Timeout: request did not complete within requested timeout - context deadline exceeded"),
                       429: ("TooManyRequests", "Too many requests, please try again later.")}
            reason, message = reasons[code]
            error = ApiError(code, reason, message, {"retryAfterSeconds": rule.retry_after}
                             if code in (429, 503) and rule.retry_after is not None else {})
            headers = {"Retry-After": str(rule.retry_after)} if code in (429, 503) and rule.retry_after is not None else {}
            record.retry_after = rule.retry_after if headers else None
            self._send(code, error.status(), headers, record)
            return
        if kind == "timeout":
            self.server.kube.stopping.wait(rule.hang)
        self._cut(reset=kind != "drop")

    def _cut(self, reset: bool) -> None:
        """Close the connection without an answer (RST for `reset`/`timeout`, FIN for `drop`)."""
        self.close_connection = True
        try:
            if reset:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            else:
                self.connection.shutdown(socket.SHUT_RDWR)
            self.connection.close()
        except OSError:
            pass
