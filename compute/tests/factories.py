"""Valid compute bodies per type, and compute rows for tests that need many of them."""
import factory
import yaml

from compute.choices import ComputeType
from compute.models import ComputeTarget
from compute.services import compute_create
from controlplane.reconciling import ProvisioningState
from workspaces.tests.factories import WorkspaceFactory

PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"
RESOURCE_ID = "/subscriptions/0000/resourceGroups/rg/providers/Microsoft.Synapse/workspaces/syn/bigDataPools/pool"


def kubeconfig(*, server: str = "https://10.0.0.1:6443", token: str = "t0ken", context: str = "dev", current: str | bool = True) -> str:
    """A kubeconfig with one context `context` -> cluster and user of the same name.

    current-context is that context (True), none (False), or another name.
    """
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": {"server": server}}],
        "users": [{"name": context, "user": {"token": token}}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context, "namespace": "ml"}}],
    }
    if current:
        config["current-context"] = context if current is True else current
    return yaml.safe_dump(config)


VALID_BODIES = {
    "kubernetes": {"name": "k8s", "type": "kubernetes", "kubeconfig": kubeconfig(), "namespace": "ml"},
    "amlcompute": {"name": "cpu-cluster", "type": "amlcompute", "size": "Standard_DS3_v2", "min_instances": 0, "max_instances": 4},
    "computeinstance": {"name": "notebook", "type": "computeinstance", "size": "Standard_DS3_v2", "idle_time_before_shutdown_minutes": 30},
    "virtualmachine": {"name": "vm", "type": "virtualmachine", "address": "10.0.0.5", "admin_username": "azureuser", "admin_password": "pw-123456"},
    "hdinsight": {"name": "hdi", "type": "hdinsight", "address": "hdi.example.com", "admin_username": "sshuser", "ssh_private_key": PRIVATE_KEY},
    "databricks": {"name": "dbx", "type": "databricks", "workspace_url": "https://adb-1.azuredatabricks.net", "access_token": "dapi123"},
    "batch": {"name": "batch", "type": "batch", "account_name": "mybatch", "account_key": "a2V5"},
    "synapsespark": {"name": "spark", "type": "synapsespark", "resource_id": RESOURCE_ID},
    "datalakeanalytics": {"name": "adla", "type": "datalakeanalytics", "resource_id": RESOURCE_ID},
}


def body(compute_type: str, **overrides) -> dict:
    """A valid create body of the type, with fields replaced (a value of None removes the field)."""
    data = {**VALID_BODIES[compute_type], **overrides}
    return {key: value for key, value in data.items() if value is not None}


def create_compute(workspace, user, compute_type: str = "amlcompute", **overrides) -> ComputeTarget:
    """A compute made the way the API makes it (validated, audited); a compute cluster or instance gets a kubernetes
    compute to live on (`host`) when the workspace has none."""
    if compute_type in ("amlcompute", "computeinstance") and "kubernetes_compute" not in overrides:
        host(workspace, "k8s-host" if overrides.get("name") == "k8s" else "k8s")
    return compute_create(user=user, workspace=workspace, data=body(compute_type, **overrides))


def host(workspace, name: str = "k8s") -> ComputeTarget:
    """The workspace's kubernetes compute a compute cluster lives on: the first one, or a stored `k8s` (unchecked)."""
    existing = ComputeTarget.objects.filter(workspace=workspace, type=ComputeType.KUBERNETES).order_by("pk").first()
    if existing is not None:
        return existing
    return ComputeTarget.objects.create(workspace=workspace, name=name, type=ComputeType.KUBERNETES,
                                        properties=dict(STORED_PROPERTIES["kubernetes"]))


def as_checked(compute: ComputeTarget) -> ComputeTarget:
    """A kubernetes compute as a passing check leaves it, with no cluster behind it: linked to the Cluster of its
    server (a stand-in uid per server), Succeeded. Only a proven attachment sees and changes instance types."""
    from django.utils import timezone

    from compute.models import Cluster

    server = compute.properties["server"]
    compute.cluster = Cluster.objects.get_or_create(uid=f"test-uid-of-{server}", defaults={"server": server})[0]
    compute.provisioning_state, compute.checked_at = ProvisioningState.SUCCEEDED, timezone.now()
    compute.save(update_fields=["cluster", "provisioning_state", "checked_at"])
    return compute


# What the serializers store for each type's VALID_BODIES entry (secrets aside).
STORED_PROPERTIES = {
    "kubernetes": {"context": "dev", "namespace": "ml", "node_selector": {}, "in_cluster": False, "server": "https://10.0.0.1:6443"},
    "amlcompute": {"size": "Standard_DS3_v2", "tier": "dedicated", "min_instances": 0, "max_instances": 4, "idle_time_before_scale_down": 120,
                   "kubernetes_compute": "k8s"},
    "computeinstance": {"kubernetes_compute": "k8s", "instance_type": None, "size": "Standard_DS3_v2",
                        "assigned_user": "olivia", "idle_time_before_shutdown_minutes": 30,
                        "idle_time_before_shutdown": "PT30M", "schedules": {"compute_start_stop": []}},
    "virtualmachine": {"address": "10.0.0.5", "ssh_port": 22, "admin_username": "azureuser"},
    "hdinsight": {"address": "hdi.example.com", "ssh_port": 22, "admin_username": "sshuser"},
    "databricks": {"workspace_url": "https://adb-1.azuredatabricks.net"},
    "batch": {"account_name": "mybatch"},
    "synapsespark": {"resource_id": RESOURCE_ID},
    "datalakeanalytics": {"resource_id": RESOURCE_ID},
}


class ComputeTargetFactory(factory.django.DjangoModelFactory):
    """A stored compute row without going through validation or audit (for list pages)."""

    class Meta:
        model = ComputeTarget

    workspace = factory.SubFactory(WorkspaceFactory)
    name = factory.Sequence(lambda n: f"c{n}")
    type = ComputeType.AMLCOMPUTE
    provisioning_state = ProvisioningState.SUCCEEDED
    properties = factory.LazyAttribute(lambda compute: dict(STORED_PROPERTIES[compute.type]))
