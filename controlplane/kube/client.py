"""The only module that talks to Kubernetes: one client per cluster, rate-limited, errors sorted in two classes.

It knows Kubernetes, not our models: callers pass a `Connection` (kubeconfig dict + context) and plain dicts.
Raw paths instead of the dynamic client: discovery would add calls to every reconcile and resync.
"""
import json
import ssl
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

import urllib3
from django.conf import settings
from django.core.cache import cache
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from controlplane import addresses

from .connection import Connection

# Callers catch the errors and build paths as kube.KubeTransient, kube.path_for: one name for the whole client.
from .errors import KubeError, KubeNotFound, KubeRejected, KubeTransient  # noqa: F401
from .objects import FIELD_MANAGER
from .paths import path_for

TIMEOUT = (5, 20)  # seconds: connect, read
# Per cluster, per process; the Python client has no limiter of its own.
QPS = float(settings.DOCKYARD_KUBE_QPS)
BURST = int(settings.DOCKYARD_KUBE_BURST)
TRANSIENT_STATUSES = {408, 409, 429, 500, 502, 503, 504}
RESOLVE_SECONDS = 30  # a client keeps the address it checked this long; then its name is resolved and checked again
MAX_ANSWER_BYTES = 64 * 2**20  # one answer held in memory at most; Dockyard's lists and logs stay far below
STATUS_MESSAGE_CHARS = 300  # of a Kubernetes Status message kept in errors; anything else the server says is dropped
NOT_TLS = ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "record layer failure", "HTTP_REQUEST", "http request",
           "packet length too long", "unknown protocol", "wrong version number")
CERTIFICATE = ("CERTIFICATE_VERIFY_FAILED", "certificate verify failed", "Hostname mismatch", "doesn't match")
# kube-apiserver answers an apply it cannot type or convert with a 500 (kubernetes#122480): the object is at fault, so
# retrying cannot help. A field the schema lacks or of the wrong JSON type fails the typing; a quantity that does not
# parse in a built-in kind fails the conversion to its Go type.
PERMANENT_500 = ("failed to create typed patch object", "failed to convert new object")
POD_OWNERS = {"Job", "Deployment", "StatefulSet"}  # deleted in the foreground (see delete)



class AnswerTooLarge(urllib3.exceptions.HTTPError):
    """The server sent more than MAX_ANSWER_BYTES: the rest is not read (a hostile server must not fill memory)."""


class _BoundedPool:
    """The client's pool manager, but every answer is read into memory only up to MAX_ANSWER_BYTES.

    The client reads whole bodies (error bodies too, into ApiException) before any code of ours sees them.
    """

    def __init__(self, pool: urllib3.PoolManager):
        self.pool = pool

    def request(self, method: str, url: str, *args, **kwargs) -> urllib3.HTTPResponse:
        kwargs["preload_content"] = False
        raw = self.pool.request(method, url, *args, **kwargs)
        body = raw.read(MAX_ANSWER_BYTES + 1)
        if len(body) > MAX_ANSWER_BYTES:
            raw.close()  # unread bytes: the connection cannot be reused
            raw.release_conn()
            raise AnswerTooLarge(f"more than {MAX_ANSWER_BYTES} bytes")
        raw.release_conn()
        return urllib3.HTTPResponse(body=body, headers=raw.headers, status=raw.status, reason=raw.reason,
                                    request_method=method, request_url=url)

    def __getattr__(self, name: str):
        return getattr(self.pool, name)


class TokenBucket:
    """A client-side rate limit: `rate` calls per second with bursts of `burst`."""

    def __init__(self, rate: float, burst: int):
        self.rate, self.burst = rate, burst
        self.tokens, self.stamp = float(burst), time.monotonic()
        self.lock = threading.Lock()

    def wait(self) -> None:
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
            self.stamp = now
            delay = 0.0 if self.tokens >= 1 else (1 - self.tokens) / self.rate
            self.tokens -= 1
        if delay:
            time.sleep(delay)


@dataclass
class _Pinned:
    """A client bound to the address that was checked, until `expires` (then the name is resolved and checked again)."""

    api: k8s.ApiClient
    endpoint: addresses.Endpoint
    expires: float


_clients: dict[tuple[str, str], _Pinned] = {}
_buckets: dict[str, TokenBucket] = {}
_lock = threading.Lock()


def _client(conn: Connection) -> k8s.ApiClient:
    return _pinned(conn).api


def _pinned(conn: Connection) -> _Pinned:
    cache_key = (conn.key, conn.credential_version)
    with _lock:
        pinned = _clients.get(cache_key)
        if pinned is not None and pinned.expires >= time.monotonic():
            return pinned
    pinned = _new_client(conn)  # resolves the name: outside the lock, so a slow lookup holds up no other cluster
    with _lock:
        _clients[cache_key] = pinned
        _buckets.setdefault(conn.key, TokenBucket(QPS, BURST))
    return pinned


def _new_client(conn: Connection) -> _Pinned:
    configuration = k8s.Configuration()
    try:
        if conn.in_cluster:
            k8s_config.load_incluster_config(client_configuration=configuration)
        else:
            k8s_config.load_kube_config_from_dict(conn.kubeconfig, context=conn.context, client_configuration=configuration)
    except (ConfigException, ValueError, TypeError):
        raise KubeRejected("The kubeconfig cannot be used (its cluster, user or context is incomplete).", 400, "InvalidKubeconfig") from None
    configuration.retries = False  # retries are ours: classified, with backoff, honouring Retry-After
    configuration.proxy = None  # never through a proxy the kubeconfig names (the serializer refuses proxy-url too)
    if conn.in_cluster:  # Dockyard's own pod (staff only): its service address, and its token refreshed by the hook
        endpoint = endpoint_of(configuration.host)
    else:
        # The loader's hook copies the kubeconfig's server back into the configuration before every call, which would
        # undo the pinned address; it exists to refresh exec/auth-provider tokens, which the kubeconfig check refuses.
        configuration.refresh_api_key_hook = None
        endpoint = _pin_address(configuration)
    api = k8s.ApiClient(configuration)
    api.rest_client.pool_manager = _BoundedPool(api.rest_client.pool_manager)
    return _Pinned(api, endpoint, time.monotonic() + RESOLVE_SECONDS)


def _pin_address(configuration: k8s.Configuration) -> addresses.Endpoint:
    """Check the server's URL and every address its name resolves to; point the client at the checked address.

    The TLS certificate is still verified against the name (SNI and hostname match use `tls_server_name`), so
    pinning the address changes where the connection goes, not whom it trusts; no second lookup can rebind it.
    """
    try:
        endpoint = addresses.parse_server_url(configuration.host)
        checked = addresses.checked_addresses(endpoint.host, endpoint.port)
    except addresses.AddressRefused as exc:
        raise KubeRejected(str(exc), 400, "AddressRefused") from None
    except (OSError, UnicodeError):  # socket.gaierror: the name does not resolve (now)
        raise KubeTransient(unreachable(endpoint_of(configuration.host))) from None
    address = checked[0]
    literal = f"[{address}]" if address.version == 6 else str(address)
    if literal.strip("[]") != endpoint.host:
        if endpoint.scheme == "https" and not configuration.tls_server_name:
            configuration.tls_server_name = endpoint.host
        configuration.host = f"{endpoint.scheme}://{literal}:{endpoint.port}"
    return endpoint


def endpoint_of(url: str) -> addresses.Endpoint:
    """HOST:PORT of a URL for messages, leniently (it may be one the strict parser refused)."""
    parts = urlsplit(url or "")
    try:
        port = parts.port
    except ValueError:
        port = None
    return addresses.Endpoint(parts.scheme, parts.hostname or "?", port or (443 if parts.scheme == "https" else 80))


def unreachable(endpoint: addresses.Endpoint) -> str:
    """One sentence for refused, timed out, reset and unresolvable alike: the error kind must not map a network."""
    return f"Cannot reach the API server at {endpoint.where}."


def _backoff_key(conn: Connection) -> str:
    return f"kube-retry-after:{conn.key}"


def _respect_retry_after(conn: Connection) -> None:
    """No call to a cluster that asked us to wait, from any worker process, until the wait is over."""
    until = cache.get(_backoff_key(conn))
    if until and until > time.time():
        raise KubeTransient("The cluster asked us to wait (Retry-After).", retry_after=until - time.time())


def _remember_retry_after(conn: Connection, seconds: float) -> None:
    cache.set(_backoff_key(conn), time.time() + seconds, timeout=int(seconds) + 1)


def request(conn: Connection, method: str, path: str, *, query: list | None = None, body=None, content_type: str | None = None,
            text: bool = False):
    """One call; returns the decoded JSON body (or None; the text when `text`), raises KubeTransient / KubeRejected / KubeNotFound."""
    pinned = _pinned(conn)
    _buckets[conn.key].wait()
    _respect_retry_after(conn)  # after the rate limiter's sleep, so the check is as fresh as it can be
    accept = "text/plain, */*" if text else "application/json"
    headers = {"Accept": accept, **({"Content-Type": content_type} if content_type else {})}
    try:
        response = pinned.api.call_api(
            path, method, query_params=query or [], header_params=headers, body=body,
            auth_settings=["BearerToken"], _preload_content=False, _request_timeout=TIMEOUT,
        )
    except ApiException as exc:
        raise _classified(conn, exc, pinned.endpoint) from None
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise _transport_error(pinned.endpoint, exc) from None
    except AttributeError as exc:
        # The client wraps a TLS failure in an ApiException without a body, then calls `e.body.decode()` on it: the
        # AttributeError escaped every handler and left the compute Creating with no error (issue 9, finding 9).
        if isinstance(exc.__context__, ApiException):
            raise _classified(conn, exc.__context__, pinned.endpoint) from None
        raise
    data = response[0].data if isinstance(response, tuple) else response.data
    if text:
        return (data or b"").decode("utf-8", errors="replace")
    try:
        return json.loads(data) if data else None
    except ValueError:
        raise KubeRejected(not_kubernetes(pinned.endpoint), 502, "NotKubernetes") from None


def not_kubernetes(endpoint: addresses.Endpoint) -> str:
    return f"The server at {endpoint.where} did not answer as a Kubernetes API server."


def _transport_error(endpoint: addresses.Endpoint, exc: BaseException) -> KubeError:
    """Dockyard's sentence for a failure below HTTP; only TLS problems differ from 'cannot reach'."""
    if isinstance(exc, urllib3.exceptions.SSLError | ssl.SSLError):
        return _tls_failure(endpoint, f"{exc!r} {exc}")
    if isinstance(exc, AnswerTooLarge):
        return KubeRejected(f"The API server at {endpoint.where} sent an answer larger than "
                            f"{MAX_ANSWER_BYTES // 2**20} MB; Dockyard did not read it.", 502, "AnswerTooLarge")
    return KubeTransient(unreachable(endpoint))


def _tls_failure(endpoint: addresses.Endpoint, text: str) -> KubeError:
    if any(marker in text for marker in NOT_TLS):
        return KubeRejected(f"The server at {endpoint.where} did not speak TLS (is it a plain http:// server?).", 0, "NotTLS")
    if any(marker in text for marker in CERTIFICATE):
        return KubeRejected(f"The API server at {endpoint.where} presented a certificate that does not verify "
                            "(an untrusted authority, or issued for another name).", 0, "CertificateRejected")
    if "EOF" in text or "timed out" in text:
        return KubeTransient(unreachable(endpoint))
    return KubeRejected(f"The TLS handshake with the API server at {endpoint.where} failed.", 0, "TLSFailure")


def _classified(conn: Connection, exc: ApiException, endpoint: addresses.Endpoint) -> KubeError:
    if exc.status == 0:  # the client's own wrapping of a transport failure (SSLError, an unpreparable request)
        reason = str(exc.reason or "")
        return _tls_failure(endpoint, reason) if reason.startswith("SSLError") else KubeTransient(unreachable(endpoint))
    message, reason = _status_message(exc)
    if exc.status == 500 and message.startswith(PERMANENT_500):
        return KubeRejected(message, 422, "Invalid")
    if exc.status in TRANSIENT_STATUSES:
        retry_after = _retry_after(exc)
        if retry_after:
            _remember_retry_after(conn, retry_after)
        return KubeTransient(f"The API server at {endpoint.where} answered {exc.status}: {message}", retry_after=retry_after,
                             status=exc.status)
    if exc.status == 404:
        return KubeNotFound(message, 404, reason)
    return KubeRejected(message, exc.status, reason)


def _status_message(exc: ApiException) -> tuple[str, str]:
    """Message and reason of a Kubernetes `Status` body (shortened); anything else the server sent is not repeated."""
    try:
        status = json.loads(exc.body or "{}")
    except (TypeError, ValueError):
        status = {}
    if not isinstance(status, dict) or status.get("kind") != "Status":
        return f"HTTP {exc.status} without a Kubernetes Status.", ""
    message, reason = status.get("message"), status.get("reason")
    message = message[:STATUS_MESSAGE_CHARS] if isinstance(message, str) and message else f"HTTP {exc.status}."
    reason = reason if isinstance(reason, str) and reason.isalnum() and len(reason) <= 64 else ""
    return message, reason


def _retry_after(exc: ApiException) -> float | None:
    value = (exc.headers or {}).get("Retry-After")
    try:
        return max(float(value), 0.0) if value is not None else None
    except ValueError:
        return None


def server_version(conn: Connection) -> str:
    return (request(conn, "GET", "/version") or {}).get("gitVersion", "unknown")


def get(conn: Connection, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict | None:
    """The object, or None when it does not exist."""
    try:
        return request(conn, "GET", path_for(api_version, kind, name, namespace))
    except KubeNotFound:
        return None


def apply(conn: Connection, manifest: dict) -> dict:
    """Server-side apply as field manager `dockyard` (forced: these fields are ours); returns the live object."""
    metadata = manifest["metadata"]
    path = path_for(manifest["apiVersion"], manifest["kind"], metadata["name"], metadata.get("namespace"))
    query = [("fieldManager", FIELD_MANAGER), ("force", "true")]
    return request(conn, "PATCH", path, query=query, body=manifest, content_type="application/apply-patch+yaml")


def replace_spec(conn: Connection, manifest: dict) -> dict:
    """Replace the live object's whole spec (JSON patch, field manager `dockyard`); returns the live object.

    An apply only removes fields that `dockyard` applied before: fields another manager added (`kubectl edit`)
    survive it. Replacing the spec drops them too.
    """
    metadata = manifest["metadata"]
    path = path_for(manifest["apiVersion"], manifest["kind"], metadata["name"], metadata.get("namespace"))
    operations = [{"op": "replace", "path": "/spec", "value": manifest["spec"]}]
    return request(conn, "PATCH", path, query=[("fieldManager", FIELD_MANAGER)], body=operations,
                   content_type="application/json-patch+json")


def delete(conn: Connection, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
    """Start the deletion; an object that is already gone is fine.

    Owners of pods are deleted in the foreground: they stay readable (deletionTimestamp, the foregroundDeletion
    finalizer) until their pods are gone, so "gone" means the pods are too; callers look again until then. Other kinds
    have no dependents: deleted in the background, they go at once (unless a finalizer of someone else's holds them).
    """
    policy = "Foreground" if kind in POD_OWNERS else "Background"
    body = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": policy}
    try:
        request(conn, "DELETE", path_for(api_version, kind, name, namespace), body=body, content_type="application/json")
    except KubeNotFound:
        pass


def pod_log(conn: Connection, namespace: str, pod: str, container: str, since_time: str | None = None,
            tail_lines: int | None = None) -> str:
    """A container's log with RFC 3339 timestamps, from `since_time` (whole seconds: the API's precision) on."""
    query = [("container", container), ("timestamps", "true")] + ([("sinceTime", since_time)] if since_time else [])
    query += [("tailLines", str(tail_lines))] if tail_lines else []
    return request(conn, "GET", path_for("v1", "Pod", pod, namespace, sub="log"), query=query, text=True)


def proxy_post(conn: Connection, namespace: str, service: str, port: int, path: str, body: bytes, headers: dict,
               timeout: float) -> tuple[int, str, bytes]:
    """POST through the API server's service proxy; returns the backend's (status, content type, body) as it answered."""
    pinned = _pinned(conn)
    api = pinned.api
    _buckets[conn.key].wait()
    _respect_retry_after(conn)
    target = f"{path_for('v1', 'Service', f'{service}:{port}', namespace, sub='proxy')}/{path.lstrip('/')}"
    # The body goes as the bytes it is: ApiClient.call_api would json.dumps() it for a JSON content type (TypeError
    # on bytes, a JSON string literal on str). So the request is sent on the client's own pool, with its auth.
    sent = {**api.default_headers, **headers}
    api.update_params_for_auth(sent, [], ["BearerToken"])
    try:
        raw = api.rest_client.pool_manager.request(
            "POST", api.configuration.host + target, body=body, headers=sent, retries=False, preload_content=True,
            timeout=urllib3.Timeout(connect=TIMEOUT[0], read=timeout))
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise _transport_error(pinned.endpoint, exc) from None
    # 2xx or not, the backend's answer (or the proxy's own Status) is passed on as it is.
    return raw.status, raw.headers.get("Content-Type", "application/json"), raw.data


PROXY_GET_SECONDS = 5.0  # a probe must not hold a worker: the backend answers quickly or counts as failed


def proxy_get(conn: Connection, namespace: str, kind: str, name_port: str, path: str,
              query: list[tuple[str, str]]) -> tuple[int, str, bytes]:
    """GET through the API server's pod or service proxy with a query string (the generated proxy helpers cannot send
    one); returns the backend's (status, content type, body), no larger than the pool's cap."""
    if kind not in ("pods", "services"):
        raise ValueError(f"no proxy for {kind}")
    pinned = _pinned(conn)
    api = pinned.api
    _buckets[conn.key].wait()
    _respect_retry_after(conn)
    target = f"{path_for('v1', 'Pod' if kind == 'pods' else 'Service', name_port, namespace, sub='proxy')}/{path.lstrip('/')}"
    sent = dict(api.default_headers)
    api.update_params_for_auth(sent, [], ["BearerToken"])
    url = api.configuration.host + target + (f"?{urlencode(query)}" if query else "")
    try:  # the pool reads the answer whole, up to its own cap (_Pinned)
        raw = api.rest_client.pool_manager.request(
            "GET", url, headers=sent, retries=False, timeout=urllib3.Timeout(connect=TIMEOUT[0], read=PROXY_GET_SECONDS))
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise _transport_error(pinned.endpoint, exc) from None
    return raw.status, raw.headers.get("Content-Type", "application/json"), raw.data


def list_objects(conn: Connection, api_version: str, kind: str, namespace: str | None = None, selector: str = "") -> list[dict]:
    """One LIST call (no paging: the sets Dockyard lists are small)."""
    query = [("labelSelector", selector)] if selector else []
    return (request(conn, "GET", path_for(api_version, kind, namespace=namespace), query=query) or {}).get("items", [])


def can_i(conn: Connection, verb: str, group: str, resource: str, namespace: str | None = None) -> bool:
    """SelfSubjectAccessReview: may these credentials do `verb` on `resource`?"""
    attributes = {"verb": verb, "group": group, "resource": resource, **({"namespace": namespace} if namespace else {})}
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {"resourceAttributes": attributes}}
    answer = request(conn, "POST", path_for("authorization.k8s.io/v1", "SelfSubjectAccessReview"), body=review, content_type="application/json")
    return bool((answer or {}).get("status", {}).get("allowed"))
