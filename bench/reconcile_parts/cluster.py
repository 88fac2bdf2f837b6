"""The fake clusters (tests.fake_kube in this process) and the records reconciled onto them."""
from bench.reconcile_parts import NODES
from bench.support.seeding import Task, patched, seed_workspace
from compute import reconcile, services
from compute.manifests import INSTANCE_TYPE_API_VERSION, INSTANCE_TYPE_GROUP, instance_type_crd
from compute.models import Cluster, ComputeTarget, InstanceType
from controlplane.kube import client as kube
from controlplane.reconciling import ProvisioningState, locked_run
from tests.fake_kube import FakeKube

CONFIGURED = (kube.QPS, kube.BURST)
FAKES: list[FakeKube] = []


def new_fake() -> FakeKube:
    fake = FakeKube(**NODES).start()
    FAKES.append(fake)
    return fake


def stop_fake(fake: FakeKube) -> None:
    fake.stop()
    FAKES.remove(fake)
    assert not fake.server_errors, "the fake API server failed internally:\n" + "\n".join(fake.server_errors)


def stop_fakes() -> None:
    """Every fake still serving (cleanup)."""
    for fake in list(FAKES):
        fake.stop()
    FAKES.clear()


def live_count(fake: FakeKube) -> int:
    return len(fake.store.view((INSTANCE_TYPE_GROUP, "instancetypes")))


def shape(number: int, name: str) -> dict:
    """Varied but valid instance types (CR form): cpu/memory steps, a GPU on every 10th, a selector on every 3rd."""
    cpu, memory = ["100m", "500m", "1", "2", "4"][number % 5], ["256Mi", "1Gi", "2Gi", "4Gi"][number % 4]
    limits = {"cpu": cpu, "memory": memory, **({"nvidia.com/gpu": 1} if number % 10 == 0 else {})}
    spec = {"resources": {"requests": {"cpu": cpu, "memory": memory}, "limits": limits}}
    if number % 3 == 0:
        spec["nodeSelector"] = {"pool": f"p{number % 4}"}
    return {"metadata": {"name": name}, "spec": spec}


def seed(records: int):
    """A user, a workspace, a Kubernetes compute attached to a fake cluster and `records` instance types on it."""
    user, workspace, token = seed_workspace()
    fake = new_fake()
    with patched(services, "_enqueue", lambda compute: None):  # nothing queued for the worker of part (c)
        compute = services.compute_create(
            user=user, workspace=workspace, data={"name": "k8s-a", "type": "kubernetes", "kubeconfig": fake.kubeconfig_yaml()})
    locked_run(Task, ComputeTarget, compute.pk, reconcile.reconcile_compute)
    compute.refresh_from_db()
    assert compute.provisioning_state == ProvisioningState.SUCCEEDED, compute.provisioning_errors
    body = {"apiVersion": INSTANCE_TYPE_API_VERSION, "kind": "InstanceTypeList",
            "items": [shape(number, f"it-{number:04d}") for number in range(records)]}
    with patched(services, "_enqueue_instance_type", lambda *args: None):
        services.instance_types_create(user=user, compute=compute, body=body)
    stop_fake(fake)  # each measurement gets a fresh one
    return token, compute.cluster


def point_cluster(cluster: Cluster, fake: FakeKube) -> None:
    """Make `cluster` the fresh fake (its attachments' server and credentials) and install the InstanceType CRD there."""
    cluster.server = fake.url
    cluster.save()
    for compute in cluster.computes.all():  # each attachment acts with its own credentials
        compute.secrets = {**compute.secrets, "kubeconfig": fake.kubeconfig_yaml()}
        compute.properties = {**compute.properties, "server": fake.url}
        compute.save()
    fake.create(instance_type_crd())
    fake.advance(fake.settings.crd_establish_delay)


def reset_records(cluster: Cluster) -> None:
    """Back to 'created, never reconciled', so every reconcile does the work of a first apply (status write too)."""
    InstanceType.objects.filter(cluster=cluster).update(
        provisioning_state=ProvisioningState.CREATING, provisioning_errors=[], observed_generation=0, observed_spec=None)
