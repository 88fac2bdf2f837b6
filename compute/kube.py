"""The only module that talks to Kubernetes: one client per cluster, rate-limited, errors sorted in two classes.

It knows Kubernetes, not our models: callers pass a `Connection` (kubeconfig dict + context) and plain dicts.
Raw paths instead of the dynamic client: discovery would add calls to every reconcile and resync.
"""
import json
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import quote

import urllib3
from django.conf import settings
from django.core.cache import cache
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from .manifests import FIELD_MANAGER

TIMEOUT = (5, 20)  # seconds: connect, read
# Per cluster, per process; the Python client has no limiter of its own.
QPS = float(settings.DOCKYARD_KUBE_QPS)
BURST = int(settings.DOCKYARD_KUBE_BURST)
TRANSIENT_STATUSES = {408, 409, 429, 500, 502, 503, 504}
UNTYPED_APPLY = "failed to create typed patch object"
PLURALS = {
    "Namespace": "namespaces", "Node": "nodes", "Pod": "pods", "Service": "services", "Job": "jobs",
    "Deployment": "deployments", "CustomResourceDefinition": "customresourcedefinitions",
    "InstanceType": "instancetypes", "SelfSubjectAccessReview": "selfsubjectaccessreviews",
    "HTTPRoute": "httproutes", "HorizontalPodAutoscaler": "horizontalpodautoscalers",
    "StatefulSet": "statefulsets", "PersistentVolumeClaim": "persistentvolumeclaims",
}


class KubeError(Exception):
    """Base of everything this module raises."""


class KubeTransient(KubeError):
    """Worth retrying: timeouts, dropped connections, 409, 429, 5xx. `retry_after` in seconds when the server said."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class KubeRejected(KubeError):
    """The server refused the request as such (400/401/403/404/422): retrying will not help until it changes."""

    def __init__(self, message: str, status: int, reason: str = ""):
        super().__init__(message)
        self.status = status
        self.reason = reason


class KubeNotFound(KubeRejected):
    """404: the object (or the kind) does not exist."""


@dataclass(frozen=True)
class Connection:
    """How to reach one cluster: a kubeconfig (dict) and the context to use; `key` names the cluster."""

    key: str
    kubeconfig: dict = field(hash=False, compare=False)
    context: str | None = None
    credential_version: str = ""
    in_cluster: bool = False  # the pod's service account instead of a kubeconfig


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


_clients: dict[tuple[str, str], k8s.ApiClient] = {}
_buckets: dict[str, TokenBucket] = {}
_lock = threading.Lock()


def _client(conn: Connection) -> k8s.ApiClient:
    cache_key = (conn.key, conn.credential_version)
    with _lock:
        if cache_key not in _clients:
            configuration = k8s.Configuration()
            try:
                if conn.in_cluster:
                    k8s_config.load_incluster_config(client_configuration=configuration)
                else:
                    k8s_config.load_kube_config_from_dict(conn.kubeconfig, context=conn.context, client_configuration=configuration)
            except (ConfigException, ValueError, TypeError) as exc:
                raise KubeRejected(f"The kubeconfig cannot be used: {exc}", 400) from None
            configuration.retries = False  # retries are ours: classified, with backoff, honouring Retry-After
            _clients[cache_key] = k8s.ApiClient(configuration)
            _buckets.setdefault(conn.key, TokenBucket(QPS, BURST))
        return _clients[cache_key]


def _backoff_key(conn: Connection) -> str:
    return f"kube-retry-after:{conn.key}"


def _respect_retry_after(conn: Connection) -> None:
    """No call to a cluster that asked us to wait, from any worker process, until the wait is over."""
    until = cache.get(_backoff_key(conn))
    if until and until > time.time():
        raise KubeTransient("The cluster asked us to wait (Retry-After).", retry_after=until - time.time())


def _remember_retry_after(conn: Connection, seconds: float) -> None:
    cache.set(_backoff_key(conn), time.time() + seconds, timeout=int(seconds) + 1)


def path_for(api_version: str, kind: str, name: str | None = None, namespace: str | None = None, sub: str | None = None) -> str:
    """The REST path of a kind (and object): /api/v1/... for the core group, /apis/<group>/<version>/... otherwise."""
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    parts = [base]
    if namespace:
        parts += ["namespaces", quote(namespace, safe="")]
    parts.append(PLURALS[kind])
    if name:
        parts.append(quote(name, safe=""))
    if sub:
        parts.append(sub)
    return "/".join(parts)


def request(conn: Connection, method: str, path: str, *, query: list | None = None, body=None, content_type: str | None = None,
            text: bool = False):
    """One call; returns the decoded JSON body (or None; the text when `text`), raises KubeTransient / KubeRejected / KubeNotFound."""
    api = _client(conn)
    _buckets[conn.key].wait()
    _respect_retry_after(conn)  # after the rate limiter's sleep, so the check is as fresh as it can be
    accept = "text/plain, */*" if text else "application/json"
    headers = {"Accept": accept, **({"Content-Type": content_type} if content_type else {})}
    try:
        response = api.call_api(
            path, method, query_params=query or [], header_params=headers, body=body,
            auth_settings=["BearerToken"], _preload_content=False, _request_timeout=TIMEOUT,
        )
    except ApiException as exc:
        raise _classified(conn, exc) from None
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise KubeTransient(f"The cluster did not answer ({type(exc).__name__}).") from None
    data = response[0].data if isinstance(response, tuple) else response.data
    if text:
        return (data or b"").decode("utf-8", errors="replace")
    return json.loads(data) if data else None


def _classified(conn: Connection, exc: ApiException) -> KubeError:
    message, reason = _status_message(exc)
    if exc.status == 500 and message.startswith(UNTYPED_APPLY):
        # kube-apiserver answers an apply with a field its schema lacks with a 500 (kubernetes#122480): not transient.
        return KubeRejected(message, 422, "Invalid")
    if exc.status in TRANSIENT_STATUSES or exc.status == 0:
        retry_after = _retry_after(exc)
        if retry_after:
            _remember_retry_after(conn, retry_after)
        return KubeTransient(f"{exc.status} {reason}: {message}", retry_after=retry_after)
    if exc.status == 404:
        return KubeNotFound(message, 404, reason)
    return KubeRejected(message, exc.status, reason)


def _status_message(exc: ApiException) -> tuple[str, str]:
    try:
        status = json.loads(exc.body or "{}")
    except (TypeError, ValueError):
        status = {}
    if not isinstance(status, dict):
        status = {}
    return status.get("message") or exc.reason or "no message", status.get("reason") or exc.reason or ""


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
    """Delete with foreground propagation; an object that is already gone is fine."""
    body = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Foreground"}
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
    api = _client(conn)
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
        raise KubeTransient(f"The cluster did not answer ({type(exc).__name__}).") from None
    # 2xx or not, the backend's answer (or the proxy's own Status) is passed on as it is.
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
