"""From a compute record to a `controlplane.kube` Connection: each attachment acts only with its own credentials.

Every app that reaches a cluster for a compute (compute's own checks, jobs, endpoints, the scoring data plane) builds
its connection here, so `controlplane.kube` never sees a model and no app borrows another's reconcile.
"""
from controlplane.kube.connection import Connection, connection
from controlplane.reconciling import ProvisioningState

from .choices import ComputeType
from .models import Cluster, ComputeTarget

# Linked attachments in these states passed their checks with the credentials they hold now (a change of
# credentials or server unlinks them until they pass again).
PROVEN_STATES = (ProvisioningState.SUCCEEDED, ProvisioningState.UPDATING)


def _credentials(compute: ComputeTarget) -> dict:
    return {
        "kubeconfig": compute.secrets.get("kubeconfig", ""), "context": compute.properties.get("context"),
        "in_cluster": bool(compute.properties.get("in_cluster")),
    }


# Properties key of a compute cluster (amlcompute) or a compute instance: the name of the `kubernetes` compute of its
# workspace it lives on. A compute instance may name LOCAL instead: the sandboxed local mode, on no cluster.
HOST_KEY = "kubernetes_compute"
LOCAL = "local"


def host_attachment(compute: ComputeTarget) -> ComputeTarget | None:
    """The `kubernetes` compute whose credentials and namespace act for `compute`: itself, or the attachment a compute
    cluster or compute instance names (None when that is gone, or for a local compute instance). Read once per record
    object."""
    if compute.type == ComputeType.KUBERNETES:
        return compute
    if "_host_attachment" not in compute.__dict__:
        name = compute.properties.get(HOST_KEY)
        name = None if name == LOCAL and compute.type == ComputeType.COMPUTEINSTANCE else name
        compute.__dict__["_host_attachment"] = ComputeTarget.objects.select_related("cluster").filter(
            workspace_id=compute.workspace_id, type=ComputeType.KUBERNETES, name=name).first() if name else None
    return compute.__dict__["_host_attachment"]


def on_cluster(compute: ComputeTarget) -> bool:
    """A compute instance that runs on a kubernetes compute (not in the sandboxed local mode)."""
    return compute.type == ComputeType.COMPUTEINSTANCE and compute.properties.get(HOST_KEY) != LOCAL


def namespace_of(compute: ComputeTarget) -> str:
    """The namespace a compute's work goes to: its attachment's."""
    host = host_attachment(compute) or compute
    return host.properties.get("namespace", "default")


def connection_for(compute: ComputeTarget) -> Connection:
    """The attachment's own connection: every call made for it uses its own credentials, never another's (a compute
    cluster acts with the credentials of the attachment it lives on)."""
    host = host_attachment(compute) or compute
    return connection(host.properties.get("server", ""), **_credentials(host))


def proven_attachments(cluster: Cluster):
    """The attachments of `cluster` whose own credentials currently pass the checks, most recently checked first."""
    return cluster.computes.filter(type=ComputeType.KUBERNETES, provisioning_state__in=PROVEN_STATES).order_by(
        "-checked_at", "pk")


def attachment_connection(cluster: Cluster, prefer: int | None = None) -> Connection | None:
    """Credentials for cluster-scoped work: those of attachment `prefer` if it passes, else of another that does."""
    attachments = list(proven_attachments(cluster)[:20])
    chosen = next((item for item in attachments if item.pk == prefer), None) or next(iter(attachments), None)
    return connection_for(chosen) if chosen else None
