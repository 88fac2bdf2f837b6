"""Compute records: attachments of Kubernetes clusters are checked, compute clusters get their node pool, compute
instances on a cluster their StatefulSet; other types are records only (for now)."""
import logging
import time

from django.utils import timezone

from controlplane.kube import client as kube
from controlplane.kube.connection import Connection
from controlplane.reconciling import ProvisioningState, problem, record_status

from ..choices import SSH_TYPES, ComputeType
from ..connections import connection_for, on_cluster
from ..manifests import INSTANCE_TYPE_CRD_NAME, INSTANCE_TYPE_GROUP, instance_type_crd
from ..models import Cluster, ComputeTarget
from . import local_instances
from .clusters import delete_compute_cluster, reconcile_compute_cluster
from .instances import delete_compute_instance, reconcile_compute_instance
from .vms import reconcile_virtual_machine

logger = logging.getLogger(__name__)

# What Dockyard must be allowed to do: (verb, group, resource, namespaced).
REQUIRED_ACCESS = [
    ("list", INSTANCE_TYPE_GROUP, "instancetypes", False),
    ("patch", INSTANCE_TYPE_GROUP, "instancetypes", False),
    ("delete", INSTANCE_TYPE_GROUP, "instancetypes", False),
    ("create", "batch", "jobs", True),
    ("delete", "batch", "jobs", True),
    ("list", "", "pods", True),
    # every job's signed URLs live in a Secret of its own, applied at submit and deleted with the job
    ("patch", "", "secrets", True),
    ("delete", "", "secrets", True),
]
CRD_POLLS, CRD_POLL_SECONDS = 20, 0.25


def reconcile_compute(compute: ComputeTarget) -> None:
    """Reconcile one compute record (the caller holds its row lock)."""
    if local_instances.is_local_instance(compute):
        return local_instances.reconcile_local_instance(compute)  # JupyterLab in the sandbox here (deleting too)
    if compute.provisioning_state == ProvisioningState.DELETING:
        if compute.type == ComputeType.AMLCOMPUTE and not delete_compute_cluster(compute):
            raise kube.KubeTransient(f"The node pool of compute cluster '{compute.name}' is being deleted.", retry_after=5)
        if on_cluster(compute) and not delete_compute_instance(compute):
            raise kube.KubeTransient(f"The objects of compute instance '{compute.name}' are being deleted.", retry_after=2)
        logger.info("Deleted compute %s", compute.name)
        compute.delete()
        return
    if compute.type == ComputeType.KUBERNETES:
        check_attachment(compute)
    elif compute.type == ComputeType.AMLCOMPUTE:
        reconcile_compute_cluster(compute)
    elif on_cluster(compute):
        reconcile_compute_instance(compute)
    elif compute.type in SSH_TYPES:
        reconcile_virtual_machine(compute)
    else:
        # Managed and attached types are records until their runners arrive: nothing outside the database yet.
        record_status(compute, ProvisioningState.SUCCEEDED, [])


def check_attachment(compute: ComputeTarget) -> None:
    """Reach the API server, check the namespace, the credentials' rights, the cluster's identity and the CRD.

    Only an attachment that passes is linked to the Cluster its kube-system namespace identifies (and so sees the
    instance types other passing attachments of that cluster made); one that is refused is unlinked. The messages
    are Dockyard's own sentences: what a server answers is never shown (it may be anything at that address).
    """
    conn = connection_for(compute)
    namespace = compute.properties.get("namespace", "default")
    try:
        version = _version(conn, compute)
        errors = _namespace_problems(conn, namespace) + _access_problems(conn, namespace)
        uid = _cluster_uid(conn, errors) if not errors else None
        crd_ready = not errors and _ensure_crd(conn, errors)
    except kube.KubeTransient as exc:
        # Kept linked: being unreachable says nothing about the credentials. Failed, with the reason, while retrying.
        record_status(compute, ProvisioningState.FAILED, [problem("Unreachable", _retrying(exc, compute))])
        raise
    except kube.KubeRejected as exc:
        record_status(compute, ProvisioningState.FAILED, [problem(*_refusal(exc, compute))])
        _unlink(compute)
        return
    state = ProvisioningState.SUCCEEDED if not errors else ProvisioningState.FAILED
    record_status(compute, state, errors, checked_at=timezone.now())
    if state == ProvisioningState.SUCCEEDED:
        _link(compute, uid, version, crd_ready)
    else:
        _unlink(compute)


def _version(conn: Connection, compute: ComputeTarget) -> str:
    answer = kube.request(conn, "GET", "/version")
    if not isinstance(answer, dict) or not isinstance(answer.get("gitVersion"), str):
        raise kube.KubeRejected(_not_kubernetes(compute), 502, "NotKubernetes")
    return answer["gitVersion"][:64]


def _retrying(exc: kube.KubeTransient, compute: ComputeTarget) -> str:
    """A transient failure's sentence; an answer's text is not repeated before the server proved to be a cluster."""
    if exc.status is None:
        return f"{exc} Retrying."
    return f"The API server at {_where(compute)} answered the checks with a temporary error (HTTP {exc.status}). Retrying."


def _where(compute: ComputeTarget) -> str:
    return kube.endpoint_of(compute.properties.get("server", "")).where


def _not_kubernetes(compute: ComputeTarget) -> str:
    return f"The server at {_where(compute)} did not answer as a Kubernetes API server."


def _refusal(exc: kube.KubeRejected, compute: ComputeTarget) -> tuple[str, str]:
    """(code, sentence) for a refused check, by class; the server's own words are not repeated."""
    if exc.reason in ("AddressRefused", "NotTLS", "CertificateRejected", "TLSFailure", "NotKubernetes", "InvalidKubeconfig",
                      "AnswerTooLarge"):
        return exc.reason, str(exc)  # sentences controlplane/kube/client.py wrote itself
    if exc.status == 401:
        return "Unauthorized", "The cluster refused the credentials (401)."
    if exc.status == 403:
        return "Forbidden", "The cluster forbade the credentials a call the checks need (403)."
    return "NotKubernetes", f"{_not_kubernetes(compute)[:-1]} (it answered HTTP {exc.status})."


def _cluster_uid(conn: Connection, errors: list[dict]) -> str | None:
    """The kube-system namespace's uid: what identifies a cluster, whatever URL it is reached at."""
    try:
        namespace = kube.get(conn, "v1", "Namespace", "kube-system")
    except kube.KubeRejected as exc:
        if exc.status != 403:
            raise
        errors.append(problem("Forbidden", "The credentials may not read the kube-system namespace, which identifies "
                                           "the cluster; allow get on namespaces/kube-system."))
        return None
    uid = ((namespace or {}).get("metadata") or {}).get("uid")
    if not isinstance(uid, str) or not 0 < len(uid) <= 64:
        errors.append(problem("NotKubernetes", "The cluster has no kube-system namespace with a uid to identify it by."))
        return None
    return uid


def _unlink(compute: ComputeTarget) -> None:
    if compute.cluster_id is not None:
        compute.cluster = None
        compute.save(update_fields=["cluster"])


def _namespace_problems(conn: Connection, namespace: str) -> list[dict]:
    if kube.get(conn, "v1", "Namespace", namespace) is None:
        return [problem("NamespaceNotFound", f"Namespace '{namespace}' does not exist; create it (kubectl create namespace {namespace}).")]
    return []


def _access_problems(conn: Connection, namespace: str) -> list[dict]:
    denied = [
        f"{verb} {resource}" for verb, group, resource, namespaced in REQUIRED_ACCESS
        if not kube.can_i(conn, verb, group, resource, namespace if namespaced else None)
    ]
    if denied:
        return [problem("Forbidden", f"The credentials may not {', '.join(denied)} (checked with SelfSubjectAccessReview).")]
    return []


def _ensure_crd(conn: Connection, errors: list[dict]) -> bool:
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


def _link(compute: ComputeTarget, uid: str, version: str, crd_ready: bool) -> None:
    """Link a passing attachment to the Cluster of its uid (a record from before uids takes the uid it now proves)."""
    server = compute.properties["server"]
    current = compute.cluster if compute.cluster_id else None
    if current is not None and current.uid is None and not Cluster.objects.filter(uid=uid).exists():
        cluster = current
    else:
        cluster = Cluster.objects.get_or_create(uid=uid, defaults={"server": server})[0]
    values = {"uid": uid, "server": server, "version": version, "crd_installed": crd_ready}
    changed = [key for key, value in values.items() if getattr(cluster, key) != value]
    if changed:
        for key in changed:
            setattr(cluster, key, values[key])
        cluster.checked_at = timezone.now()
        cluster.save(update_fields=[*changed, "checked_at"])
    if compute.cluster_id != cluster.pk:
        compute.cluster = cluster
        compute.save(update_fields=["cluster"])
