"""What the browser proxy changes on the way through (pure): the route, headers both ways, cookies, the API server's
HTML rewriting undone.

The browser sees `/instances/<workspace>/<name>/<app>/…` only. Upstream, the API server's service proxy prepends
`/api/v1/namespaces/<ns>/services/<svc>:<port>/proxy` to absolute links in text/html and to `Location`
(k8s.io/apimachinery `pkg/util/proxy/transport.go`); the proxy takes that prefix off again, so the browser stays on
Dockyard's route and never learns the cluster's paths.
"""
import json
import re
import zlib
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode

ROOT = "/instances/"
APPS = ("jupyter", "vscode")
SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$")
# Hop-by-hop headers (RFC 9110 §7.6.1) and what the proxy sets itself: never copied from one side to the other.
HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "trailers",
              "transfer-encoding", "upgrade", "host", "content-length"}
# Credentials and origin are Dockyard's business: checked here, never passed on (the API server drops Authorization
# anyway; Jupyter and code-server would refuse an Origin that is not their Host).
REQUEST_DROPPED = HOP_BY_HOP | {"authorization", "cookie", "origin", "forwarded", "x-forwarded-for",
                                "x-forwarded-host", "x-forwarded-proto", "x-real-ip", "accept-encoding"}
# Only encodings the proxy can read back: it scrubs the server's credentials out of the text it sends.
UPSTREAM_ACCEPT_ENCODING = "gzip, deflate"
# The servers' own login cookies: the proxy authenticates every request, so the browser never holds one.
SERVER_LOGIN_COOKIES = {"jupyter": ("username-",), "vscode": ("code-server-session",)}
CODE_SERVER_COOKIE = "code-server-session"  # coder/code-server src/common/http.ts CookieKeys.Session
STATUS_BYTES = 64 * 1024  # an API server's Status is small; an error answer larger than this is the server's own


@dataclass(frozen=True)
class Route:
    """One proxied request's place: whose instance, which server, and the rest of the path (raw, as sent)."""

    workspace: str
    name: str
    app: str
    rest: str  # "" or "/…", percent-encoding kept

    @property
    def prefix(self) -> str:
        return f"{ROOT}{self.workspace}/{self.name}/{self.app}"


def route(raw_path: str) -> Route | None:
    """The route of a request path under /instances/, or None when it is not one (unknown app, odd names)."""
    if not raw_path.startswith(ROOT):
        return None
    parts = raw_path[len(ROOT):].split("/", 3)
    if len(parts) < 3 or parts[2] not in APPS or not all(SEGMENT.match(part) for part in parts[:2]):
        return None
    return Route(parts[0], parts[1], parts[2], "/" + parts[3] if len(parts) == 4 else "")


def upstream_path(target: Route) -> str:
    """The path the server is asked for: JupyterLab serves under its base_url (the same route), code-server at its
    root (it writes relative links only, so any prefix in front of it works)."""
    if target.app == "jupyter":
        return target.prefix + (target.rest or "/")
    return target.rest or "/"


def service_proxy_prefix(namespace: str, service: str, port_name: str) -> str:
    """The API server's service proxy path for a named port (no trailing slash)."""
    return f"/api/v1/namespaces/{namespace}/services/{service}:{port_name}/proxy"


def upstream_query(query: str, token: str | None) -> str:
    """The browser's query string, with the server's token as `?token=` for Jupyter (the API server drops
    Authorization); a `token` the browser sent is not passed on."""
    if token is None:
        return query
    kept = [(key, value) for key, value in parse_qsl(query, keep_blank_values=True) if key != "token"]
    return urlencode(kept + [("token", token)])


def cookie_header(header: str, dropped: set[str], added: dict[str, str]) -> str:
    """The Cookie header for the server: Dockyard's own cookies and the servers' login cookies taken out, the
    proxy's credential cookie put in."""
    kept = []
    for part in header.split(";"):
        name = part.split("=", 1)[0].strip()
        if name and name not in dropped and name not in added:
            kept.append(part.strip())
    kept += [f"{name}={value}" for name, value in added.items()]
    return "; ".join(kept)


def request_headers(headers: list[tuple[bytes, bytes]], dropped_cookies: set[str], added_cookies: dict[str, str],
                    extra: dict[str, str]) -> list[tuple[str, str]]:
    """Headers for the server: hop-by-hop, credentials and origin out; cookies filtered; `extra` (Host, the API
    server's Authorization) in."""
    out, cookies = [], []
    for raw_name, raw_value in headers:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        if name == "cookie":
            cookies.append(value)
        elif name not in REQUEST_DROPPED and not name.startswith("sec-websocket-"):
            out.append((name, value))
    cookie = cookie_header("; ".join(cookies), dropped_cookies, added_cookies)
    if cookie:
        out.append(("cookie", cookie))
    out.append(("accept-encoding", UPSTREAM_ACCEPT_ENCODING))
    return out + [(name.lower(), value) for name, value in extra.items()]


def strip_prefix(url: str, prefix: str) -> str:
    """A Location the API server rewrote, back on Dockyard's route (other URLs are left as they are)."""
    if prefix and url.startswith(prefix + "/"):
        return url[len(prefix):]
    return url


def set_cookie(value: str, target: Route, dropped: set[str]) -> str | None:
    """A server's Set-Cookie as the browser may keep it: never one of Dockyard's cookies or a server login cookie,
    always scoped to this instance's route (Path forced under it, no Domain) so it cannot reach Dockyard or another
    instance. None drops it."""
    first, *attributes = [part.strip() for part in value.split(";")]
    name = first.split("=", 1)[0].strip()
    if not name or name in dropped or name.startswith(SERVER_LOGIN_COOKIES[target.app]):
        return None
    path = ""
    kept = []
    for attribute in attributes:
        key = attribute.split("=", 1)[0].strip().lower()
        if key == "path":
            path = attribute.split("=", 1)[1].strip() if "=" in attribute else ""
        elif key != "domain" and attribute:
            kept.append(attribute)
    if not (path == target.prefix or path.startswith(target.prefix + "/")):
        path = target.prefix + "/"
    return "; ".join([first, f"Path={path}", *kept])


def response_headers(headers: list[tuple[str, str]], target: Route, kube_prefix: str, dropped_cookies: set[str],
                     rewrites_body: bool, secrets: tuple[str, ...] = ()) -> list[tuple[bytes, bytes]]:
    """The server's headers for the browser: hop-by-hop out, Location back on the route, cookies scoped; when the
    body is rewritten its length and encoding are the proxy's to say."""
    out = []
    for name, value in headers:
        lowered = name.lower()
        if lowered in HOP_BY_HOP or (rewrites_body and lowered == "content-encoding"):
            continue
        if lowered == "location":
            value = without_secrets(strip_prefix(value, kube_prefix), secrets)
        if lowered == "set-cookie":
            value = set_cookie(value, target, dropped_cookies)
            if value is None:
                continue
        out.append((lowered.encode("latin-1"), value.encode("latin-1")))
    return out


def is_kube_status(body: bytes) -> bool:
    """Whether a body is a Kubernetes `Status` (the API server's own error), not an instance server's answer."""
    try:
        data = json.loads(body)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("kind") == "Status" and data.get("apiVersion") == "v1"


def is_html(content_type: str) -> bool:
    return content_type.split(";", 1)[0].strip().lower() == "text/html"


def is_text(content_type: str) -> bool:
    """Text a server writes itself (pages, scripts, JSON): where Jupyter echoes its token (data-jupyter-api-token,
    the page config), so the proxy scrubs it there."""
    kind = content_type.split(";", 1)[0].strip().lower()
    main, _, sub = kind.partition("/")
    return main == "text" or sub in ("json", "javascript", "x-javascript", "xml") or sub.endswith(("+json", "+xml"))


FILTERABLE_ENCODINGS = ("", "identity", "gzip", "deflate")  # what the proxy asks servers for (Accept-Encoding)


def body_replacements(content_type: str, content_encoding: str, kube_prefix: str,
                      secrets: tuple[str, ...]) -> list[tuple[bytes, bytes]]:
    """What to change in a body on its way to the browser: the server's credentials out of any text it wrote, and on
    an HTML page from the API server its link prefix off (it rewrote text/html only, and only in the encodings it
    can re-encode). Empty: the body passes as it is."""
    if content_encoding.strip().lower() not in FILTERABLE_ENCODINGS or not is_text(content_type):
        return []
    replacements = [(secret.encode(), b"") for secret in secrets if secret]
    if kube_prefix and is_html(content_type):
        replacements.append((kube_prefix.encode() + b"/", b"/"))
    return replacements


def without_secrets(url: str, secrets: tuple[str, ...]) -> str:
    """A Location without query parameters that carry one of the server's credentials."""
    if not any(secret and secret in url for secret in secrets):
        return url
    path, _, query = url.partition("?")
    query, hash_mark, fragment = query.partition("#")
    kept = [(key, value) for key, value in parse_qsl(query, keep_blank_values=True) if value not in secrets]
    return path + (f"?{urlencode(kept)}" if kept else "") + (f"#{fragment}" if hash_mark else "")


class BodyFilter:
    """Replaces byte strings in a streamed body, chunk by chunk (no body is held whole): the token out, the API
    server's prefix off links (`prefix/` becomes `/`: no page of the instance's own writes the cluster's proxy path).

    A gzip or deflate body is decoded on the way and sent as identity (deflate is raw, as Go's compress/flate writes
    it when the API server re-encodes a page it rewrote; a zlib-wrapped one is told apart by its header).
    """

    def __init__(self, replacements: list[tuple[bytes, bytes]], content_encoding: str = ""):
        self.replacements = replacements
        self.longest = max(len(pattern) for pattern, _ in replacements)
        self.held = self.pending = b""
        self.encoding = content_encoding.strip().lower()
        self.decoder = zlib.decompressobj(31) if self.encoding == "gzip" else None

    def _decode(self, chunk: bytes) -> bytes:
        if self.encoding == "deflate" and self.decoder is None:
            self.pending += chunk  # two bytes tell a zlib header from raw deflate
            if len(self.pending) < 2:
                return b""
            first, second = self.pending[0], self.pending[1]
            zlib_header = first & 0x0F == 8 and (first << 8 | second) % 31 == 0
            self.decoder = zlib.decompressobj(15 if zlib_header else -15)
            chunk, self.pending = self.pending, b""
        return self.decoder.decompress(chunk) if self.decoder is not None else chunk

    def _replaced(self, text: bytes) -> bytes:
        for pattern, replacement in self.replacements:
            text = text.replace(pattern, replacement)
        return text

    def feed(self, chunk: bytes) -> bytes:
        text = self._replaced(self.held + self._decode(chunk))
        # Keep back the tail that could be the start of a pattern split across two chunks.
        cut = len(text)
        for start in range(max(len(text) - self.longest + 1, 0), len(text)):
            if any(pattern.startswith(text[start:]) for pattern, _ in self.replacements):
                cut = start
                break
        self.held = text[cut:]
        return text[:cut]

    def close(self) -> bytes:
        tail = self.decoder.flush() if self.decoder is not None else self.pending
        text = self._replaced(self.held + tail)
        self.held = b""
        return text
