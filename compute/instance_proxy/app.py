"""The ASGI app in front of Django for /instances/<workspace>/<name>/<jupyter|vscode>/…: HTTP streamed both ways,
WebSockets relayed frame by frame.

Every request and every WebSocket is authenticated (the studio's session), authorised (a member, and the assigned
user or staff) and, when it could change something (unsafe methods, WebSockets), checked to come from Dockyard's own
origin: the proxy adds the server's credentials, and Jupyter skips its own XSRF check for token-authenticated requests.
"""
import asyncio
import contextlib
import dataclasses
import json
import logging
import time
from html import escape
from http.cookies import SimpleCookie
from urllib.parse import quote, urlsplit

import httpx
import websockets
from asgiref.sync import sync_to_async
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.urls import reverse

from controlplane.api import error_body
from controlplane.middleware import studio_body_limit

from . import rules
from .access import Opening, Upstream, open_instance

logger = logging.getLogger(__name__)

SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}
CONNECT_SECONDS = 10
WS_MAX_BYTES = 64 * 2**20  # one kernel message (a plot, a large output) may be big; the browser leg's cap is uvicorn's
DECISION_SECONDS = 5.0
_clients: dict[tuple, httpx.AsyncClient] = {}
_decisions: dict[tuple, tuple[float, Opening]] = {}
clock = time.monotonic  # the decisions' clock (a test moves it)


def dockyard_cookies() -> set[str]:
    return {settings.SESSION_COOKIE_NAME, settings.CSRF_COOKIE_NAME, settings.LANGUAGE_COOKIE_NAME}


def _headers(scope) -> dict[str, str]:
    """The request's headers, lower-case names; a repeated header keeps its first value."""
    found: dict[str, str] = {}
    for name, value in scope.get("headers") or []:
        found.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
    return found


def _session_key(headers: dict[str, str]) -> str | None:
    cookie = SimpleCookie()
    try:
        cookie.load(headers.get("cookie", ""))
    except Exception:  # http.cookies.CookieError: a malformed Cookie header is no session
        return None
    morsel = cookie.get(settings.SESSION_COOKIE_NAME)
    return morsel.value if morsel else None


def _own_origins(scope, headers: dict[str, str]) -> set[str]:
    """Dockyard's origin as this request reached it (its Host, if allowed), plus CSRF_TRUSTED_ORIGINS."""
    origins = set(settings.CSRF_TRUSTED_ORIGINS)
    host = headers.get("host", "")
    domain, _port = split_domain_port(host)
    allowed = settings.ALLOWED_HOSTS or (["localhost", "127.0.0.1", "[::1]"] if settings.DEBUG else [])
    if domain and validate_host(domain, allowed):
        secure = scope.get("scheme") in ("https", "wss")
        origins.add(f"{'https' if secure else 'http'}://{host.lower()}")
    return origins


def same_origin(scope, headers: dict[str, str]) -> bool:
    """The request came from a page of Dockyard itself (Origin, else Referer, as Django's CSRF check reads them)."""
    origin = headers.get("origin")
    if not origin or origin == "null":
        referer = urlsplit(headers.get("referer", ""))
        origin = f"{referer.scheme}://{referer.netloc}" if referer.scheme and referer.netloc else ""
    return bool(origin) and origin.lower() in _own_origins(scope, headers)


def _raw_path(scope) -> str:
    raw = scope.get("raw_path")
    return raw.decode("latin-1") if raw else quote(scope.get("path", ""), safe="/:@!$&'()*+,;=-._~%")


def _wants_page(scope, headers: dict[str, str]) -> bool:
    return scope.get("method", "GET") in ("GET", "HEAD") and "text/html" in headers.get("accept", "")


async def _send_simple(send, status: int, body: bytes, content_type: str, extra: list | None = None) -> None:
    headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode()),
               (b"cache-control", b"no-store"), (b"content-security-policy", settings.DOCKYARD_CSP.encode()),
               *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _refuse(scope, send, headers: dict[str, str], opening: Opening) -> None:
    """The refusal in the API's error shape, or for a page: the sign-in redirect or a short page with the sentence."""
    if _wants_page(scope, headers):
        if opening.status == 401:
            target = f"{reverse(settings.LOGIN_URL)}?next={quote(_raw_path(scope))}"
            return await _send_simple(send, 302, b"", "text/plain", [(b"location", target.encode("latin-1"))])
        page = (f"<!doctype html><title>Dockyard</title><p>{escape(opening.message)}</p>"
                f"<p><a href=\"/\">Back to the studio</a></p>")
        return await _send_simple(send, opening.status, page.encode(), "text/html; charset=utf-8")
    body = error_body(opening.status, opening.message, code=opening.code)
    if opening.state:
        body["error"]["details"] = [{"target": "state", "message": opening.state}]
    await _send_simple(send, opening.status, json.dumps(body).encode(), "application/json")


async def _decide(scope, headers: dict[str, str], target: rules.Route) -> Opening:
    """The decision for this session and instance server: a granted one is reused for DECISION_SECONDS (JupyterLab
    loads dozens of files at once and polls every few seconds; each fresh decision is a database round of its own), so
    a sign-out, a removed membership or a stop takes effect within that time."""
    session_key = _session_key(headers)
    key = (session_key, target.workspace, target.name, target.app)
    cached = _decisions.get(key)
    if cached is not None and cached[0] > clock():
        return cached[1]
    opening = await sync_to_async(open_instance, thread_sensitive=False)(session_key, target)
    if opening.upstream is not None and session_key:
        if len(_decisions) > 4096:
            _decisions.clear()
        _decisions[key] = (clock() + DECISION_SECONDS, opening)
    return opening


async def application(scope, receive, send) -> None:
    """ASGI entry: HTTP and WebSocket scopes under /instances/."""
    target = rules.route(_raw_path(scope))
    headers = _headers(scope)
    if scope["type"] == "websocket":
        return await _websocket(scope, receive, send, headers, target)
    if target is None:
        return await _refuse(scope, send, headers, Opening(404, "NotFound", "Not found."))
    if scope["method"] not in SAFE_METHODS and not same_origin(scope, headers):
        return await _refuse(scope, send, headers, Opening(403, "Forbidden", "The request did not come from a page of "
                                                                             "Dockyard (Origin); refused."))
    declared = headers.get("content-length", "0")
    if not declared.isdigit() and "transfer-encoding" not in headers:
        return await _refuse(scope, send, headers, Opening(400, "BadRequest", "The Content-Length header is not a number."))
    if declared.isdigit() and int(declared) > studio_body_limit():
        return await _refuse(scope, send, headers, Opening(413, "PayloadTooLarge",
                                                           f"The request body is larger than {studio_body_limit()} bytes."))
    opening = await _decide(scope, headers, target)
    if opening.upstream is None:
        return await _refuse(scope, send, headers, opening)
    await _relay_http(scope, receive, send, headers, target, opening.upstream)


# HTTP


def _client(upstream: Upstream) -> httpx.AsyncClient:
    """One pooled client per server and credentials, per event loop (keep-alive to the API server across requests)."""
    key = (id(asyncio.get_running_loop()), upstream.origin, upstream.unix_socket, id(upstream.ssl))
    client = _clients.get(key)
    if client is None or client.is_closed:
        transport = httpx.AsyncHTTPTransport(uds=upstream.unix_socket or None, verify=upstream.ssl or True, retries=0)
        # trust_env off: never through a proxy the environment names (the address was checked, not the proxy's)
        client = httpx.AsyncClient(transport=transport, trust_env=False, follow_redirects=False,
                                   timeout=httpx.Timeout(CONNECT_SECONDS, read=None, write=None, pool=CONNECT_SECONDS))
        if len(_clients) > 256:
            _clients.clear()
        _clients[key] = client
    return client


def _upstream_url(scope, target: rules.Route, upstream: Upstream) -> str:
    query = rules.upstream_query(scope.get("query_string", b"").decode("latin-1"), upstream.token)
    return upstream.origin + upstream.path_prefix + rules.upstream_path(target) + (f"?{query}" if query else "")


async def _request_body(receive, limit: int):
    """The browser's body as it arrives (a chunked one is cut off at the limit)."""
    sent = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ConnectionResetError("the browser went away")
        chunk = message.get("body", b"")
        sent += len(chunk)
        if sent > limit:
            raise ValueError("body too large")
        if chunk:
            yield chunk
        if not message.get("more_body"):
            return


async def _relay_http(scope, receive, send, headers: dict[str, str], target: rules.Route, upstream: Upstream) -> None:
    method = scope["method"]
    outgoing = rules.request_headers(scope.get("headers") or [], dockyard_cookies(), upstream.cookies, upstream.headers)
    if headers.get("content-length", "").isdigit():
        outgoing.append(("content-length", headers["content-length"]))  # streamed with its length, not chunked
    has_body = method not in ("GET", "HEAD") or "content-length" in headers or "transfer-encoding" in headers
    content = _request_body(receive, studio_body_limit()) if has_body else None
    extensions = {"sni_hostname": upstream.server_name} if upstream.ssl is not None and upstream.server_name else {}
    client = _client(upstream)
    request = client.build_request(method, _upstream_url(scope, target, upstream), headers=outgoing, content=content,
                                   extensions=extensions)
    try:
        response = await client.send(request, stream=True)
    except ValueError:
        return await _refuse(scope, send, headers, Opening(413, "PayloadTooLarge",
                                                           f"The request body is larger than {studio_body_limit()} bytes."))
    except (httpx.HTTPError, OSError):
        return await _refuse(scope, send, headers, Opening(502, "InstanceUnreachable", f"Compute instance "
                                                           f"'{target.name}' did not answer (is its server starting?)."))
    try:
        if upstream.path_prefix and response.status_code >= 400 and await _is_cluster_error(response):
            return await _refuse(scope, send, headers, Opening(502, "InstanceUnreachable", (
                f"Compute instance '{target.name}' cannot be reached through the cluster (its API server answered "
                f"{response.status_code}); is its pod ready?")))
        await _relay_response(send, response, target, upstream)
    finally:
        await response.aclose()


async def _is_cluster_error(response: httpx.Response) -> bool:
    """Whether an error came from the API server itself (a Kubernetes Status: no endpoints, forbidden, ...) rather
    than from the instance's server; its words are the cluster's and are not shown."""
    if not response.headers.get("content-type", "").startswith("application/json"):
        return False
    declared = response.headers.get("content-length", "")
    if not declared.isdigit() or int(declared) > rules.STATUS_BYTES:
        return False
    return rules.is_kube_status(await response.aread())


async def _relay_response(send, response: httpx.Response, target: rules.Route, upstream: Upstream) -> None:
    if response.is_stream_consumed:  # read to tell a cluster error from the server's own
        out = rules.response_headers(response.headers.multi_items(), target, upstream.path_prefix, dockyard_cookies(),
                                     True, upstream.secrets)
        body = response.content
        for secret in upstream.secrets:
            body = body.replace(secret.encode(), b"")
        out.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": response.status_code, "headers": out})
        return await send({"type": "http.response.body", "body": body})
    encoding = response.headers.get("content-encoding", "")
    secrets = upstream.secrets
    replacements = rules.body_replacements(response.headers.get("content-type", ""), encoding, upstream.path_prefix,
                                           secrets)
    body_filter = rules.BodyFilter(replacements, encoding) if replacements else None
    out = rules.response_headers(response.headers.multi_items(), target, upstream.path_prefix, dockyard_cookies(),
                                 body_filter is not None, secrets)
    if body_filter is None and "content-length" in response.headers:
        out.append((b"content-length", response.headers["content-length"].encode("latin-1")))
    await send({"type": "http.response.start", "status": response.status_code, "headers": out})
    try:
        async for chunk in response.aiter_raw():
            data = body_filter.feed(chunk) if body_filter else chunk
            if data:
                await send({"type": "http.response.body", "body": data, "more_body": True})
        tail = body_filter.close() if body_filter else b""
    except (httpx.HTTPError, OSError):
        logger.info("The server of %s/%s broke off an answer.", target.workspace, target.name)
        tail = b""
    await send({"type": "http.response.body", "body": tail, "more_body": False})


# WebSockets


async def _ws_close(send, code: int = 1008, reason: str = "") -> None:
    """Refuse before accepting (the browser sees the handshake fail with 403) or close an accepted socket."""
    await send({"type": "websocket.close", "code": code, "reason": reason[:120]})


async def _websocket(scope, receive, send, headers: dict[str, str], target: rules.Route | None) -> None:
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    if target is None:
        return await _ws_close(send)
    # Cross-site WebSocket hijacking: a page elsewhere could open one with the user's cookie; browsers always send
    # Origin on a WebSocket handshake.
    if not same_origin(scope, {key: value for key, value in headers.items() if key != "referer"}):
        return await _ws_close(send, reason="origin refused")
    opening = await _decide(scope, headers, target)
    if opening.upstream is None:
        return await _ws_close(send, reason=opening.message)
    upstream = opening.upstream
    try:
        if upstream.path_prefix and target.app == "jupyter":
            upstream = await _with_login_cookie(target, upstream)
        server = await _ws_connect(scope, target, upstream)
    except (TimeoutError, OSError, websockets.exceptions.WebSocketException):
        return await _ws_close(send, reason="the instance did not accept the connection")
    async with server:
        await send({"type": "websocket.accept", "subprotocol": server.subprotocol})
        await _pump(receive, send, server)


async def _with_login_cookie(target: rules.Route, upstream: Upstream) -> Upstream:
    """The API server drops the query string of an upgrade (kubernetes#77142), so `?token=` cannot authenticate a
    WebSocket through it: Jupyter's own login cookie, which it sets on a token-authenticated request (here one to
    /api/status, which does not count as activity), goes with the upgrade instead. It never reaches the browser."""
    status = rules.Route(target.workspace, target.name, target.app, "/api/status")
    client = _client(upstream)
    extensions = {"sni_hostname": upstream.server_name} if upstream.ssl is not None and upstream.server_name else {}
    headers = rules.request_headers([], set(), {}, upstream.headers)
    query = rules.upstream_query("", upstream.token)
    response = await client.get(upstream.origin + upstream.path_prefix + rules.upstream_path(status) + f"?{query}",
                                headers=headers, extensions=extensions)
    cookies = dict(upstream.cookies)
    for value in response.headers.get_list("set-cookie"):
        name, _, rest = value.partition("=")
        if name.startswith(rules.SERVER_LOGIN_COOKIES["jupyter"]):
            cookies[name] = rest.split(";", 1)[0]
    return dataclasses.replace(upstream, cookies=cookies)


def _ws_connect(scope, target: rules.Route, upstream: Upstream):
    url = _upstream_url(scope, target, upstream)
    headers = rules.request_headers(scope.get("headers") or [], dockyard_cookies(), upstream.cookies, upstream.headers)
    headers = [(name, value) for name, value in headers if name not in ("host", "user-agent")]
    subprotocols = list(scope.get("subprotocols") or []) or None
    common = {"subprotocols": subprotocols, "additional_headers": headers, "open_timeout": CONNECT_SECONDS,
              "max_size": WS_MAX_BYTES, "compression": None, "proxy": None, "ping_interval": 20, "ping_timeout": 60,
              "user_agent_header": None}
    if upstream.unix_socket:
        return websockets.unix_connect(upstream.unix_socket, "ws://localhost" + url.removeprefix(upstream.origin), **common)
    parts = urlsplit(upstream.origin)
    host = upstream.headers.get("Host", parts.hostname)
    scheme = "wss" if parts.scheme == "https" else "ws"
    uri = f"{scheme}://{host}" + url.removeprefix(upstream.origin)
    extra = {"ssl": upstream.ssl, "server_hostname": upstream.server_name} if scheme == "wss" else {}
    # Connect to the checked address; the URI's host is the name (Host header, certificate).
    return websockets.connect(uri, host=parts.hostname.strip("[]"), port=parts.port, **extra, **common)


async def _pump(receive, send, server) -> None:
    """Frames both ways until either side closes; the other side is then closed with the same code."""

    async def browser_to_server():
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                await server.close(code=_closable(message.get("code", 1000)))
                return
            if message.get("text") is not None:
                await server.send(message["text"])
            elif message.get("bytes") is not None:
                await server.send(message["bytes"])

    async def server_to_browser():
        try:
            async for frame in server:
                key = "text" if isinstance(frame, str) else "bytes"
                await send({"type": "websocket.send", key: frame})
        except websockets.exceptions.ConnectionClosedError:
            pass
        code = server.close_code or 1000
        with contextlib.suppress(Exception):  # the browser may already be gone
            await _ws_close(send, _closable(code), server.close_reason or "")

    tasks = [asyncio.ensure_future(browser_to_server()), asyncio.ensure_future(server_to_browser())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _closable(code: int) -> int:
    """A close code one may send (1005, 1006 and 1015 are only ever reported, never sent)."""
    return 1000 if code in (1005, 1006, 1015) or not (1000 <= code < 5000) else code
