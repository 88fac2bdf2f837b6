"""The API client: httpx with the bearer token, the contract's error shape, pagination, rate limits and event streams."""
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

import httpx

from .config import API_SUFFIX, Connection
from .errors import ApiError, ConnectionFailed
from .sse import ServerEvent, parse_events

TIMEOUT_SECONDS = 30.0
MAX_RATE_LIMIT_RETRIES = 3
MAX_RETRY_AFTER_SECONDS = 30.0
# A quiet event stream still gets a keepalive every 15 s: four missed ones mean the connection is gone.
STREAM_READ_SECONDS = 60.0
MAX_PAGE_SIZE = 500


def path_of(*segments: str) -> str:
    """An API path from segments, each escaped, with the trailing slash DRF's routers expect."""
    return "/".join(quote(str(segment), safe="") for segment in segments) + "/"


@dataclass
class Response:
    """A successful answer: its JSON body (or None) and the ETag, for If-Match."""

    body: object
    etag: str | None


class ApiClient:
    """Calls /api/v1 of one server with one token; raises ApiError / ConnectionFailed instead of returning them."""

    def __init__(self, connection: Connection, *, transport: httpx.BaseTransport | None = None):
        self.base_url = connection.url
        self.token = connection.token  # also the credential of aml_token endpoints (`online-endpoint invoke`)
        self.api_url = connection.url + API_SUFFIX + "/"
        self._http = httpx.Client(
            base_url=self.api_url,
            headers={"Authorization": f"Bearer {connection.token}", "Accept": "application/json"},
            timeout=TIMEOUT_SECONDS,
            transport=transport,
        )

    def close(self) -> None:
        self._http.close()

    def get(self, path: str, params: dict | None = None) -> Response:
        return self.request("GET", path, params=params)

    def post(self, path: str, body: dict) -> Response:
        return self.request("POST", path, json=body)

    def post_yaml(self, path: str, text: str) -> Response:
        """POST a YAML document as written (the API reads `application/yaml` bodies)."""
        return self.request("POST", path, content=text.encode(), headers={"Content-Type": "application/yaml"})

    def patch(self, path: str, body: dict, *, etag: str | None = None) -> Response:
        headers = {"If-Match": etag} if etag else None
        return self.request("PATCH", path, json=body, headers=headers)

    def put(self, path: str, body: dict, *, etag: str | None = None) -> Response:
        headers = {"If-Match": etag} if etag else None
        return self.request("PUT", path, json=body, headers=headers)

    def delete(self, path: str) -> Response:
        return self.request("DELETE", path)

    def list_all(self, path: str, params: dict | None = None) -> list:
        """Every item of a collection, following `next` links page by page."""
        items: list = []
        page = self.get(path, params=params).body
        while True:
            items.extend(page.get("results", []))
            next_url = page.get("next")
            if not next_url:
                return items
            page = self.get(self._same_server(next_url)).body

    def list_up_to(self, path: str, limit: int, params: dict | None = None) -> tuple[list, int | None]:
        """At most `limit` items, following `next` links, and the total the API reports."""
        page = self.get(path, params={**(params or {}), "page_size": min(limit, MAX_PAGE_SIZE)}).body
        items: list = []
        while True:
            items.extend(page.get("results", []))
            next_url = page.get("next")
            if len(items) >= limit or not next_url:
                return items[:limit], page.get("count")
            page = self.follow_link(next_url).body

    def follow_link(self, url: str) -> Response:
        """GET a `next`/`previous` link the API gave out."""
        return self.get(self._same_server(url))

    def download(self, path: str, params: dict, write: Callable[[bytes], object]) -> None:
        """Stream a (text) response body into `write`, chunk by chunk, without holding it in memory."""
        with self._opened_stream(path, params, {}, TIMEOUT_SECONDS) as response:
            for chunk in response.iter_bytes():
                write(chunk)

    def events(self, path: str, params: dict, last_event_id: str | None = None,
               on_open: Callable[[], object] | None = None) -> Iterator[ServerEvent]:
        """The Server-Sent Events of a stream; `last_event_id` asks the server to resume after that event."""
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-cache"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        with self._opened_stream(path, params, headers, STREAM_READ_SECONDS) as response:
            if on_open is not None:
                on_open()
            yield from parse_events(response.iter_lines())

    @contextmanager
    def _opened_stream(self, path: str, params: dict, headers: dict, read_seconds: float) -> Iterator[httpx.Response]:
        """A streamed GET whose error statuses and transport failures raise like `request`'s."""
        timeout = httpx.Timeout(TIMEOUT_SECONDS, read=read_seconds)
        try:
            with self._http.stream("GET", path, params=params, headers=headers, timeout=timeout) as response:
                if response.status_code >= 400:
                    response.read()
                    raise api_error(response)
                yield response
        except httpx.TimeoutException:
            raise ConnectionFailed(f"{self.base_url} sent nothing for {read_seconds:.0f}s.", code="Timeout") from None
        except httpx.TransportError as exc:
            raise ConnectionFailed(f"Lost the connection to {self.base_url}: {exc}") from None

    def _same_server(self, url: str) -> str:
        """Keep only the path and query of a `next` link: the token goes to our server only, over our scheme."""
        parts = urlsplit(url)
        relative = parts.path.split(API_SUFFIX + "/", 1)[-1]
        return relative + (f"?{parts.query}" if parts.query else "")

    def request(self, method: str, path: str, **kwargs) -> Response:
        response = self.raw(method, path, **kwargs)
        if response.status_code >= 400:
            raise api_error(response)
        return Response(body=json_or_none(response), etag=response.headers.get("ETag"))

    def get_text(self, path: str, params: dict | None = None) -> str:
        """A text answer (a deployment's log), as it came."""
        response = self.raw("GET", path, params=params, headers={"Accept": "text/plain, application/json"})
        if response.status_code >= 400:
            raise api_error(response)
        return response.text

    def raw(self, method: str, path: str, **kwargs) -> httpx.Response:
        """The answer whatever its status (a 429 retried first); `headers` given here override the client's."""
        for attempt in range(MAX_RATE_LIMIT_RETRIES + 1):
            response = self._send(method, path, **kwargs)
            wait = retry_after(response)
            if response.status_code != 429 or wait is None or attempt == MAX_RATE_LIMIT_RETRIES:
                return response
            time.sleep(wait)
        return response

    def _send(self, method: str, path: str, **kwargs) -> httpx.Response:
        try:
            return self._http.request(method, path, **kwargs)
        except httpx.TimeoutException:
            seconds = kwargs.get("timeout")
            seconds = seconds if isinstance(seconds, int | float) else TIMEOUT_SECONDS
            raise ConnectionFailed(
                f"Timed out after {seconds:.0f}s waiting for {self.base_url}.", code="Timeout"
            ) from None
        except httpx.TransportError as exc:
            raise ConnectionFailed(f"Cannot connect to {self.base_url}: {exc}") from None


def retry_after(response: httpx.Response) -> float | None:
    """Seconds to wait before retrying a 429, if the server said and it is short enough to wait."""
    try:
        seconds = float(response.headers.get("Retry-After", ""))
    except ValueError:
        return None
    return seconds if 0 <= seconds <= MAX_RETRY_AFTER_SECONDS else None


def json_or_none(response: httpx.Response):
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return None


def api_error(response: httpx.Response) -> ApiError:
    """Read the contract's {"error": {code, message, details}}; anything else (a proxy's page) gets a plain message."""
    body = json_or_none(response)
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        reason = response.reason_phrase or "error"
        return ApiError(
            response.status_code,
            f"The server answered {response.status_code} {reason} to {response.request.method} {response.request.url}.",
            code=f"Http{response.status_code}",
        )
    details = [detail for detail in error.get("details") or [] if isinstance(detail, dict)]
    return ApiError(
        response.status_code,
        str(error.get("message") or "The request failed."),
        code=str(error.get("code") or f"Http{response.status_code}"),
        details=details,
    )
