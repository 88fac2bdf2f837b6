"""Fixtures the endpoints API tests share: deployment folders under tmp_path, the owner's client, a Kubernetes compute."""
import pytest

from compute.models import InstanceType
from compute.tests.factories import as_checked, create_compute


@pytest.fixture
def deployment_folders(settings, tmp_path):
    """Deployments write under tmp_path, and the local compute is on in settings (API test files use it for every test)."""
    settings.DOCKYARD_DEPLOYMENT_DIR = tmp_path / "deployments"
    settings.DOCKYARD_LOCAL_COMPUTE = True


@pytest.fixture
def api(owner_api, workspace):
    return owner_api


@pytest.fixture
def k8s(workspace, owner):
    """A Kubernetes compute record (no cluster behind it) whose cluster has three instance types."""
    compute = as_checked(create_compute(workspace, owner, "kubernetes", name="k8s"))
    cluster = compute.cluster
    InstanceType.objects.create(cluster=cluster, name="small", requests={"cpu": "1", "memory": "2Gi"}, limits={"cpu": "4", "memory": "8Gi"})
    InstanceType.objects.create(cluster=cluster, name="big", requests={"cpu": "2", "memory": "4Gi"}, limits={"cpu": "8", "memory": "32Gi"})
    InstanceType.objects.create(cluster=cluster, name="gpu-small", node_selector={"accelerator": "nvidia"},
                                requests={"cpu": "700m", "memory": "1500Mi"}, limits={"cpu": "4", "memory": "16Gi"}, gpu=2)
    return compute
