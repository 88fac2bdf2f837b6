"""The two classes of Kubernetes errors (DESIGN §1): transient ones are retried, rejected ones fail the record.

Pure: tasks and the shared reconcile machinery catch these without importing the client (and so the `kubernetes`
package); only `controlplane.kube.client` raises them.
"""


class KubeError(Exception):
    """Base of everything controlplane.kube.client raises."""


class KubeTransient(KubeError):
    """Worth retrying: timeouts, dropped connections, 409, 429, 5xx. `retry_after` in seconds when the server said."""

    def __init__(self, message: str, retry_after: float | None = None, status: int | None = None):
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status  # the HTTP status when the server answered (its message is then in the text)


class KubeRejected(KubeError):
    """The server refused the request as such (400/401/403/404/422): retrying will not help until it changes."""

    def __init__(self, message: str, status: int, reason: str = ""):
        super().__init__(message)
        self.status = status
        self.reason = reason


class KubeNotFound(KubeRejected):
    """404: the object (or the kind) does not exist."""
