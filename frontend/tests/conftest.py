import pytest
from django.test import Client

from compute.models import Cluster, ComputeTarget, InstanceType
from controlplane.reconciling import ProvisioningState
from endpoints.models import OnlineEndpoint
from endpoints.services import deployment_create, endpoint_create, endpoint_update

from .endpoint_pages import add


@pytest.fixture
def client_as(users):
    """client_as("reader") -> a Django test client with a session of that role's user (anonymous: not logged in)."""

    def make(role: str) -> Client:
        client = Client()
        if users[role] is not None:
            client.force_login(users[role])
        return client

    return make


@pytest.fixture
def owner_client(client_as):
    return client_as("owner")


# Endpoints and deployments (test_endpoint_views.py, test_deployment_views.py)


@pytest.fixture
def local_endpoints(settings, tmp_path, workspace):
    """Local compute on, for the server and the workspace; local deployments under this test's folder."""
    settings.DOCKYARD_LOCAL_COMPUTE = True
    workspace.local_compute_enabled = True  # off by default: enabled as staff would
    workspace.save(update_fields=["local_compute_enabled"])
    settings.DOCKYARD_DEPLOYMENT_DIR = tmp_path / "deployments"


@pytest.fixture
def endpoint(owner, workspace):
    """A local endpoint `adder` with key authentication (its keys are thrown away)."""
    made, _ = endpoint_create(user=owner, workspace=workspace, data={"name": "adder", "compute": "local"})
    return made


@pytest.fixture
def blue_green(owner, endpoint):
    """Two serving deployments with traffic 90/10."""
    add(owner, endpoint, "blue")
    add(owner, endpoint, "green")
    endpoint_update(user=owner, endpoint=endpoint, patch={"traffic": {"blue": 90, "green": 10}})
    OnlineEndpoint.objects.filter(pk=endpoint.pk).update(provisioning_state=ProvisioningState.SUCCEEDED)
    return OnlineEndpoint.objects.get(pk=endpoint.pk)


@pytest.fixture
def kubernetes(workspace, owner):
    """A Kubernetes compute whose cluster has one instance type besides the default (no cluster is contacted)."""
    cluster = Cluster.objects.create(server="https://k8s.example.internal:6443")
    InstanceType.objects.create(cluster=cluster, name="cpu-large", requests={"cpu": "2", "memory": "4Gi"},
                                limits={"cpu": "4", "memory": "8Gi"}, gpu=0, provisioning_state=ProvisioningState.SUCCEEDED)
    return ComputeTarget.objects.create(
        workspace=workspace, name="k8s", type="kubernetes", cluster=cluster, created_by=owner,
        provisioning_state=ProvisioningState.SUCCEEDED, properties={"server": cluster.server, "namespace": "ml"})


@pytest.fixture
def kube_endpoint(owner, workspace, kubernetes):
    made, _ = endpoint_create(user=owner, workspace=workspace, data={"name": "fraud", "compute": "azureml:k8s"})
    deployment_create(user=owner, endpoint=made, data={
        "name": "blue", "code_configuration": {"code": "/var/azureml-app", "scoring_script": "score.py"},
        "environment": {"image": "python:3.11-slim"}, "instance_type": "cpu-large", "instance_count": 2})
    return made
