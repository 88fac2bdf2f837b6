"""Read paths for online endpoints and deployments."""
from django.db.models import Prefetch, QuerySet

from compute.choices import ProvisioningState
from workspaces.models import Workspace

from .models import OnlineDeployment, OnlineEndpoint


def endpoint_list(*, workspace: Workspace) -> QuerySet[OnlineEndpoint]:
    deployments = Prefetch("deployments", queryset=OnlineDeployment.objects.only("id", "name", "endpoint_id", "provisioning_state"))
    return OnlineEndpoint.objects.filter(workspace=workspace).select_related("workspace", "created_by").prefetch_related(deployments)


def endpoint_get(*, workspace: Workspace, name: str) -> OnlineEndpoint:
    return OnlineEndpoint.objects.select_related("workspace", "compute", "compute__cluster", "created_by").get(workspace=workspace, name=name)


def deployment_list(*, endpoint: OnlineEndpoint) -> QuerySet[OnlineDeployment]:
    return OnlineDeployment.objects.filter(endpoint=endpoint).select_related("created_by")


def deployment_get(*, endpoint: OnlineEndpoint, name: str) -> OnlineDeployment:
    deployment = OnlineDeployment.objects.select_related("created_by").get(endpoint=endpoint, name=name)
    deployment.endpoint = endpoint
    return deployment


def scoring_target(*, workspace_name: str, endpoint_name: str) -> tuple[OnlineEndpoint, dict[str, OnlineDeployment]] | None:
    """An endpoint and its serving deployments by name, in two queries (the hot path of every score)."""
    endpoint = (OnlineEndpoint.objects.select_related("workspace", "compute", "compute__cluster")
                .filter(workspace__name=workspace_name, name=endpoint_name).first())
    if endpoint is None or endpoint.provisioning_state == ProvisioningState.DELETING:
        return None
    deployments = {}
    for deployment in OnlineDeployment.objects.filter(endpoint=endpoint).exclude(provisioning_state=ProvisioningState.DELETING):
        deployment.endpoint = endpoint
        deployments[deployment.name] = deployment
    return endpoint, deployments
