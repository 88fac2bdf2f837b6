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


def connection_for(compute: ComputeTarget) -> Connection:
    """The attachment's own connection: every call made for it uses its own credentials, never another's."""
    return connection(compute.properties.get("server", ""), **_credentials(compute))


def proven_attachments(cluster: Cluster):
    """The attachments of `cluster` whose own credentials currently pass the checks, most recently checked first."""
    return cluster.computes.filter(type=ComputeType.KUBERNETES, provisioning_state__in=PROVEN_STATES).order_by(
        "-checked_at", "pk")


def attachment_connection(cluster: Cluster, prefer: int | None = None) -> Connection | None:
    """Credentials for cluster-scoped work: those of attachment `prefer` if it passes, else of another that does."""
    attachments = list(proven_attachments(cluster)[:20])
    chosen = next((item for item in attachments if item.pk == prefer), None) or next(iter(attachments), None)
    return connection_for(chosen) if chosen else None
