"""The API client: httpx with the bearer token, the contract's error shape, pagination and rate limits."""
import time
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

import httpx

from .config import API_SUFFIX, Connection
from .errors import ApiError, ConnectionFailed

TIMEOUT_SECONDS = 30.0
MAX_RATE_LIMIT_RETRIES = 3
MAX_RETRY_AFTER_SECONDS = 30.0


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

    def _same_server(self, url: str) -> str:
        """Keep only the path and query of a `next` link: the token goes to our server only, over our scheme."""
        parts = urlsplit(url)
        relative = parts.path.split(API_SUFFIX + "/", 1)[-1]
        return relative + (f"?{parts.query}" if parts.query else "")

    def request(self, method: str, path: str, **kwargs) -> Response:
        for attempt in range(MAX_RATE_LIMIT_RETRIES + 1):
            response = self._send(method, path, **kwargs)
            wait = retry_after(response)
            if response.status_code != 429 or wait is None or attempt == MAX_RATE_LIMIT_RETRIES:
                break
            time.sleep(wait)
        if response.status_code >= 400:
            raise api_error(response)
        return Response(body=json_or_none(response), etag=response.headers.get("ETag"))

    def _send(self, method: str, path: str, **kwargs) -> httpx.Response:
        try:
            return self._http.request(method, path, **kwargs)
        except httpx.TimeoutException:
            raise ConnectionFailed(
                f"Timed out after {TIMEOUT_SECONDS:.0f}s waiting for {self.base_url}.", code="Timeout"
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
