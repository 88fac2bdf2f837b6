"""Compute records: attachments of Kubernetes clusters are checked; other types are records only (for now)."""
import hashlib
import logging
import time
from functools import lru_cache

from django.utils import timezone

from controlplane.parsers import load_yaml

from .. import kube
from ..choices import ComputeType, ProvisioningState
from ..manifests import INSTANCE_TYPE_CRD_NAME, INSTANCE_TYPE_GROUP, instance_type_crd
from ..models import Cluster, ComputeTarget
from .status import problem, record_status

logger = logging.getLogger(__name__)

# What Dockyard must be allowed to do: (verb, group, resource, namespaced).
REQUIRED_ACCESS = [
    ("list", INSTANCE_TYPE_GROUP, "instancetypes", False),
    ("patch", INSTANCE_TYPE_GROUP, "instancetypes", False),
    ("delete", INSTANCE_TYPE_GROUP, "instancetypes", False),
    ("create", "batch", "jobs", True),
    ("delete", "batch", "jobs", True),
    ("list", "", "pods", True),
]
CRD_POLLS, CRD_POLL_SECONDS = 20, 0.25


@lru_cache(maxsize=64)
def _parsed(kubeconfig: str) -> dict:
    # Every reconcile builds a connection; parsing a real kubeconfig (kilobytes of certificates) cost more than the apply.
    return load_yaml(kubeconfig or "{}") or {}


def connection(server: str, kubeconfig: str, context: str | None, in_cluster: bool = False) -> kube.Connection:
    """A connection keyed by the API server, so rate limits and Retry-After apply per cluster."""
    version = hashlib.sha256(f"{kubeconfig}\n{context}\n{in_cluster}".encode()).hexdigest()[:16]
    return kube.Connection(key=server, kubeconfig=_parsed(kubeconfig), context=context, credential_version=version, in_cluster=in_cluster)


def _credentials(compute: ComputeTarget) -> dict:
    return {
        "kubeconfig": compute.secrets.get("kubeconfig", ""), "context": compute.properties.get("context"),
        "in_cluster": bool(compute.properties.get("in_cluster")),
    }


def connection_for(compute: ComputeTarget) -> kube.Connection:
    return connection(compute.properties.get("server", ""), **_credentials(compute))


def cluster_connection(cluster: Cluster) -> kube.Connection | None:
    """The cluster's own connection, or None while no attachment has passed its checks."""
    credentials = cluster.credentials
    if not (credentials.get("kubeconfig") or credentials.get("in_cluster")):
        return None
    return connection(cluster.server, **credentials)


def reconcile_compute(compute: ComputeTarget) -> None:
    """Reconcile one compute record (the caller holds its row lock)."""
    if compute.provisioning_state == ProvisioningState.DELETING:
        logger.info("Deleted compute %s", compute.name)
        compute.delete()
        return
    if compute.type == ComputeType.KUBERNETES:
        check_attachment(compute)
    else:
        # Managed and attached types are records until their runners arrive: nothing outside the database yet.
        record_status(compute, ProvisioningState.SUCCEEDED, [])


def check_attachment(compute: ComputeTarget) -> None:
    """Reach the API server, check the namespace, the credentials' rights and the InstanceType CRD; say what failed."""
    conn = connection_for(compute)
    server = compute.properties.get("server")
    try:
        version = kube.server_version(conn)
        errors = _namespace_problems(conn, compute.properties.get("namespace", "default"))
        errors += _access_problems(conn, compute.properties.get("namespace", "default"))
        crd_ready = not errors and _ensure_crd(conn, errors)
    except kube.KubeTransient as exc:
        record_status(compute, ProvisioningState.FAILED, [problem("Unreachable", f"Cannot reach the API server at {server}: {exc}")])
        raise
    except kube.KubeRejected as exc:
        message = "The cluster refused the credentials (401)." if exc.status == 401 else str(exc)
        record_status(compute, ProvisioningState.FAILED, [problem(exc.reason or "Rejected", message)])
        return
    state = ProvisioningState.SUCCEEDED if not errors else ProvisioningState.FAILED
    record_status(compute, state, errors, checked_at=timezone.now())
    if state == ProvisioningState.SUCCEEDED:
        _adopt_credentials(compute, version, crd_ready)


def _namespace_problems(conn: kube.Connection, namespace: str) -> list[dict]:
    if kube.get(conn, "v1", "Namespace", namespace) is None:
        return [problem("NamespaceNotFound", f"Namespace '{namespace}' does not exist; create it (kubectl create namespace {namespace}).")]
    return []


def _access_problems(conn: kube.Connection, namespace: str) -> list[dict]:
    denied = [
        f"{verb} {resource}" for verb, group, resource, namespaced in REQUIRED_ACCESS
        if not kube.can_i(conn, verb, group, resource, namespace if namespaced else None)
    ]
    if denied:
        return [problem("Forbidden", f"The credentials may not {', '.join(denied)} (checked with SelfSubjectAccessReview).")]
    return []


def _ensure_crd(conn: kube.Connection, errors: list[dict]) -> bool:
    """Install the InstanceType CRD when it is missing and we may; wait until the server serves it."""
    crd = kube.get(conn, "apiextensions.k8s.io/v1", "CustomResourceDefinition", INSTANCE_TYPE_CRD_NAME)
    if crd is None:
        if not kube.can_i(conn, "create", "apiextensions.k8s.io", "customresourcedefinitions"):
            errors.append(problem("CrdMissing", f"The {INSTANCE_TYPE_CRD_NAME} CRD is not installed and these credentials may not install it."))
            return False
        crd = kube.apply(conn, instance_type_crd())
    # A new CRD is served only once the server marks it Established, usually within a second.
    for _ in range(CRD_POLLS):
        if _established(crd):
            return True
        time.sleep(CRD_POLL_SECONDS)
        crd = kube.get(conn, "apiextensions.k8s.io/v1", "CustomResourceDefinition", INSTANCE_TYPE_CRD_NAME) or {}
    raise kube.KubeTransient(f"The {INSTANCE_TYPE_CRD_NAME} CRD is not Established yet.", retry_after=5)


def _established(crd: dict) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(item.get("type") == "Established" and item.get("status") == "True" for item in conditions)


def _adopt_credentials(compute: ComputeTarget, version: str, crd_ready: bool) -> None:
    """The cluster manages cluster-scoped objects with the latest attachment's credentials that passed."""
    cluster = compute.cluster or Cluster.objects.get_or_create(server=compute.properties["server"])[0]
    credentials = _credentials(compute)
    changed = cluster.version != version or cluster.crd_installed != crd_ready or cluster.credentials != credentials
    if changed:
        cluster.version, cluster.crd_installed, cluster.credentials = version, crd_ready, credentials
        cluster.checked_at = timezone.now()
        cluster.save()
    if compute.cluster_id != cluster.pk:
        compute.cluster = cluster
        compute.save(update_fields=["cluster"])
