"""How to reach one cluster (`Connection`), and how one is built from kubeconfig text."""
import hashlib
from dataclasses import dataclass, field
from functools import lru_cache

from controlplane.parsers import load_yaml


@dataclass(frozen=True)
class Connection:
    """How to reach one cluster: a kubeconfig (dict) and the context to use; `key` names the cluster."""

    key: str
    kubeconfig: dict = field(hash=False, compare=False)
    context: str | None = None
    credential_version: str = ""
    in_cluster: bool = False  # the pod's service account instead of a kubeconfig


@lru_cache(maxsize=64)
def _parsed(kubeconfig: str) -> dict:
    # Every reconcile builds a connection; parsing a real kubeconfig (kilobytes of certificates) cost more than the apply.
    return load_yaml(kubeconfig or "{}") or {}


def connection(server: str, kubeconfig: str, context: str | None, in_cluster: bool = False) -> Connection:
    """A connection keyed by the API server, so rate limits and Retry-After apply per cluster."""
    version = hashlib.sha256(f"{kubeconfig}\n{context}\n{in_cluster}".encode()).hexdigest()[:16]
    return Connection(key=server, kubeconfig=_parsed(kubeconfig), context=context, credential_version=version, in_cluster=in_cluster)
