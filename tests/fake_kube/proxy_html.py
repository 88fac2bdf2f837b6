"""What the API server's proxy transport does to answers (k8s.io/apimachinery pkg/util/proxy/transport.go).

The pod and service proxy handlers are built with wrapTransport=true, so every answer passes through two layers:
`corsRemovingTransport` drops the backend's CORS headers, and the rewriting `Transport`:

- a `Location` header (any status) is rewritten with `rewrite_url`; the body is then left alone;
- else a `text/html` body (by its media type) is tokenised as golang.org/x/net/html does and written back: every
  start tag is re-serialised (`Token.String()`: lower-case names, every attribute `key="value"` with `& ' < > " \\r`
  escaped as `&amp; &#39; &lt; &gt; &#34; &#13;`), other tokens are copied byte for byte; in the tags and
  attributes of `ATOMS_TO_ATTRS` the URL is rewritten with `rewrite_url`. A gzip (or raw deflate) body is
  decompressed, rewritten and compressed again; another encoding is passed through untouched.

`rewrite_url` (Transport.rewriteURL): a URL on another host, or whose path is relative (no leading `/`: `x/y`, `#f`,
`?q`, `mailto:`), stays; else scheme and host are cleared (the transport's own are empty on a server request) unless
the host is the request's `Host` header, and the path gets the proxy prefix (`/api/v1/namespaces/<ns>/services/<id>/
proxy`, or `pods/<id>`) with `path.Join` — cleaned, trailing slash kept — unless it already starts with the prefix.
"""
from __future__ import annotations

import gzip
import html
import io
import posixpath
import re
import zlib
from html.entities import html5
from urllib.parse import quote, unquote

# atomsToAttrs: which attributes of which tags hold a URL the transport rewrites.
ATOMS_TO_ATTRS = {
    "a": {"href"}, "applet": {"codebase"}, "area": {"href"}, "audio": {"src"}, "base": {"href"},
    "blockquote": {"cite"}, "body": {"background"}, "button": {"formaction"}, "command": {"icon"}, "del": {"cite"},
    "embed": {"src"}, "form": {"action"}, "frame": {"longdesc", "src"}, "head": {"profile"}, "html": {"manifest"},
    "iframe": {"longdesc", "src"}, "img": {"longdesc", "src", "usemap"}, "input": {"src", "usemap", "formaction"},
    "ins": {"cite"}, "link": {"href"}, "object": {"classid", "codebase", "data", "usemap"}, "q": {"cite"},
    "script": {"src"}, "source": {"src"}, "video": {"poster", "src"},
}
CORS_HEADERS = {"access-control-allow-credentials", "access-control-allow-headers", "access-control-allow-methods",
                "access-control-allow-origin"}
RAW_TAGS = {"iframe", "noembed", "noframes", "noscript", "plaintext", "script", "style", "textarea", "title", "xmp"}
SPACE = " \n\r\t\f"
URL_RE = re.compile(r"^(?:(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*):)?(?://(?P<authority>[^/?#]*))?(?P<path>[^?#]*)"
                    r"(?P<rest>[?#].*)?$", re.S)
PATH_SAFE = "$&+,/:;=@"  # Go's url.URL.EscapedPath leaves these (and unreserved characters) alone


class RewriteError(Exception):
    """The body could not be decoded: the apiserver answers 500 with this message."""


def go_escape_path(path: str) -> str:
    """url.URL{Path: p}.EscapedPath(): what goes on the wire for a decoded path."""
    return quote(path, safe=PATH_SAFE)


def rewrite_url(value: str, prefix: str, source_host: str, request_host: str) -> str:
    """Transport.rewriteURL for one URL found on a page served from `source_host` (the pod's ip:port)."""
    match = URL_RE.match(value)
    if match is None or any(ord(c) < 0x20 or c == "\x7f" for c in value) or _bad_escape(match["path"]):
        return value  # url.Parse fails: the transport leaves the value as it is
    scheme, authority, raw_path, rest = match["scheme"], match["authority"], match["path"], match["rest"] or ""
    host = (authority or "").rsplit("@", 1)[-1]
    if scheme and authority is None and not raw_path.startswith("/"):
        return value  # opaque (mailto:x, javascript:...): relative by the transport's test
    if (host and host not in (source_host, request_host)) or not raw_path.startswith("/"):
        return value
    keep_origin = host == request_host
    origin = f"{scheme}://{authority}" if keep_origin and scheme else (f"//{authority}" if keep_origin else "")
    path = unquote(raw_path)
    if path.startswith(prefix):
        return origin + raw_path + rest  # already through the proxy: only scheme and host are cleared
    joined = posixpath.normpath(prefix + "/" + path)  # path.Join: cleaned
    if raw_path.endswith("/") and not joined.endswith("/"):
        joined += "/"  # path.Join drops it; rewriteURL puts it back
    return origin + go_escape_path(joined) + rest


def _bad_escape(path: str) -> bool:
    return re.search(r"%(?![0-9A-Fa-f]{2})", path) is not None


def unescape_attribute(value: str) -> str:
    """html.UnescapeString in attribute mode: `&name` without `;` before `=` or not an entity stays literal."""
    def one(match: re.Match) -> str:
        text = match.group(0)
        if text.startswith("&#"):
            return html.unescape(text)
        name = match.group(1)
        if not name.endswith(";") and match.end() < len(value) and value[match.end()] == "=":
            return text
        return html5.get(name, text)
    value = value.replace("\r\n", "\n").replace("\r", "\n")  # convertNewlines
    return re.sub(r"&(?:#[xX][0-9A-Fa-f]+;?|#[0-9]+;?|([A-Za-z0-9]+;?))", one, value)


def escape_attribute(value: str) -> str:
    """x/net/html's escape: & ' < > " and carriage return."""
    return (value.replace("&", "&amp;").replace("'", "&#39;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&#34;").replace("\r", "&#13;"))


def _read_tag(text: str, i: int) -> tuple[str, list[tuple[str, str]], int, bool] | None:
    """Tokenizer.readTag from the character after `<`: (name, attributes, end index, self-closing); None at EOF."""
    n = len(text)
    j = i
    while j < n and text[j] not in SPACE + "/>":
        j += 1
    name = text[i:j].lower()
    attrs: list[tuple[str, str]] = []
    while True:
        while j < n and text[j] in SPACE:
            j += 1
        if j >= n:
            return None
        if text[j] == ">":
            return name, attrs, j + 1, text[j - 1] == "/" and j - 1 > i
        if text[j] == "/":
            j += 1  # the solidus of a self-closing tag (or a stray one): no attribute
            continue
        k = j  # attribute key: a leading '=' is part of it
        j += 1
        while j < n and text[j] not in SPACE + "=/>":
            j += 1
        key = text[k:j].lower()
        value = ""
        m = j
        while m < n and text[m] in SPACE:
            m += 1
        if m < n and text[m] == "=":
            m += 1
            while m < n and text[m] in SPACE:
                m += 1
            if m < n and text[m] in "'\"":
                end = text.find(text[m], m + 1)
                if end < 0:
                    return None
                value, j = text[m + 1:end], end + 1
            elif m < n and text[m] != ">":
                end = m
                while end < n and text[end] not in SPACE + ">":
                    end += 1
                value, j = text[m:end], end
            else:
                j = m
        elif m < n and text[m] == "/":
            j = m + 1
        if key:
            attrs.append((key, unescape_attribute(value)))


def _raw_end(text: str, start: int, tag: str) -> int:
    """Where the raw text of a script/style/... element ends (its closing tag)."""
    if tag == "plaintext":
        return len(text)
    pattern = re.compile(r"</" + tag + r"(?=[\s/>])", re.I)
    found = pattern.search(text, start)
    return found.start() if found else len(text)


def rewrite_html(text: str, rewrite) -> str:
    """rewriteHTML: re-serialise start tags (rewriting URL attributes), copy everything else as it is."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        lt = text.find("<", i)
        if lt < 0:
            out.append(text[i:])
            break
        out.append(text[i:lt])
        nxt = text[lt + 1:lt + 2]
        if nxt.isascii() and nxt.isalpha():
            tag = _read_tag(text, lt + 1)
            if tag is None:
                break  # a tag cut off by the end of the body is dropped, as the tokenizer's error ends the copy
            name, attrs, end, closing = tag
            urls = ATOMS_TO_ATTRS.get(name, set())
            attrs = [(k, rewrite(v) if k in urls else v) for k, v in attrs]
            body = name + "".join(f' {k}="{escape_attribute(v)}"' for k, v in attrs)
            out.append(f"<{body}/>" if closing else f"<{body}>")
            i = end
            if name in RAW_TAGS and not closing:
                stop = _raw_end(text, i, name)
                out.append(text[i:stop])
                i = stop
            continue
        if text.startswith("<!--", lt):
            close = re.compile(r"--!?>").search(text, lt + 2)  # from "<!" so "<!-->" and "<!--->" end at once
            stop = close.end() if close else n
        elif nxt in ("!", "?") or (nxt == "/" and not text[lt + 2:lt + 3].isalpha()):
            close = text.find(">", lt + 1)
            stop = close + 1 if close >= 0 else n
        elif nxt == "/":
            close = text.find(">", lt + 2)
            stop = close + 1 if close >= 0 else n
        else:
            out.append("<")
            i = lt + 1
            continue
        out.append(text[lt:stop])
        i = stop
    return "".join(out)


def rewrite_body(body: bytes, encoding: str, rewrite) -> bytes | None:
    """rewriteResponse: the rewritten body, compressed again as it came; None for an encoding it leaves alone."""
    encoding = encoding.strip()
    if encoding == "gzip":
        try:
            plain = gzip.GzipFile(fileobj=io.BytesIO(body)).read()
        except gzip.BadGzipFile:
            raise RewriteError("errorf making gzip reader: gzip: invalid header") from None
        except (OSError, EOFError):
            raise RewriteError("unexpected EOF") from None
        return gzip.compress(_rewrite_bytes(plain, rewrite), mtime=0)
    if encoding == "deflate":  # Go's flate: raw DEFLATE, no zlib header
        try:
            plain = zlib.decompress(body, -15)
        except zlib.error:
            raise RewriteError("flate: corrupt input before offset 0") from None
        packer = zlib.compressobj(9, zlib.DEFLATED, -15)
        return packer.compress(_rewrite_bytes(plain, rewrite)) + packer.flush()
    if encoding == "":
        return _rewrite_bytes(body, rewrite)
    return None


def _rewrite_bytes(body: bytes, rewrite) -> bytes:
    # The tokenizer works on bytes assumed UTF-8; surrogateescape keeps any other byte as it was.
    return rewrite_html(body.decode("utf-8", "surrogateescape"), rewrite).encode("utf-8", "surrogateescape")
