"""Endpoint and deployment reconcilers: the entry points tasks call."""
from controlplane.reconciling import ProvisioningState, record_status

from ..models import OnlineDeployment, OnlineEndpoint
from .kubernetes import delete_kube_deployment, delete_route, reconcile_kube_deployment, reconcile_route
from .local import LOOK_EVERY, delete_local, reconcile_local_deployment

__all__ = ["reconcile_endpoint", "reconcile_deployment", "LOOK_EVERY"]
LOOK_AGAIN = 2.0


def reconcile_deployment(deployment: OnlineDeployment) -> float | None:
    """Bring one deployment to its spec (or remove it); returns seconds until it wants another look."""
    local = deployment.endpoint.compute_id is None
    if deployment.provisioning_state == ProvisioningState.DELETING:
        if local:
            delete_local(deployment)
        elif not delete_kube_deployment(deployment):
            return LOOK_AGAIN
        deployment.delete()
        return None
    return reconcile_local_deployment(deployment) if local else reconcile_kube_deployment(deployment)


def reconcile_endpoint(endpoint: OnlineEndpoint) -> float | None:
    """Route the endpoint's traffic (an HTTPRoute on Kubernetes); a deleted endpoint goes once its deployments have."""
    if endpoint.provisioning_state == ProvisioningState.DELETING:
        if endpoint.deployments.exists():
            return LOOK_AGAIN
        if endpoint.compute_id:
            delete_route(endpoint)
        endpoint.delete()
        return None
    route = {"state": "Dockyard", "reason": "Scored through Dockyard's score URL.", "manifest": None}
    if endpoint.compute_id:
        route = reconcile_route(endpoint)
    manifests = [route.pop("manifest")] if route.get("manifest") else []
    record_status(endpoint, ProvisioningState.SUCCEEDED, [], status={"route": route}, manifests=manifests)
    return None

