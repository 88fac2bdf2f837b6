"""InstanceType.shape(): the one record-to-shape path, and the selectors that look shapes up for jobs, deployments
and placement (the same shape as the API's row, one query, no fit on every node)."""
import pytest

from compute import shapes
from compute.choices import ComputeType
from compute.models import Cluster, ComputeTarget, InstanceType
from compute.selectors import instance_type_get, instance_type_list, instance_type_shape, placeable_shapes
from controlplane.kube.objects import GPU
from controlplane.kube.resources import Shape
from controlplane.reconciling import ProvisioningState

EXTENSION = {"pool": "ml"}


def node(name: str, cpu_millicores: int, memory_gib: int, gpus: int = 0, **labels) -> dict:
    """A node as shapes.node_summary stores it."""
    return {"name": name, "labels": labels, "taints": [], "ready": True,
            "allocatable": {"cpu": f"{cpu_millicores}m", "memory": f"{memory_gib}Gi", GPU: gpus},
            "capacity_units": {"millicores": cpu_millicores, "memory_bytes": memory_gib * 2**30}}


@pytest.fixture
def compute(workspace):
    cluster = Cluster.objects.create(server="https://k8s.example.test:6443", version="v1.36.0", crd_installed=True,
                                     nodes=[node("cpu-1", 4000, 16, pool="ml"), node("gpu-1", 8000, 64, 2, pool="ml", gpu="a100")])
    return ComputeTarget.objects.create(workspace=workspace, name="k8s", type=ComputeType.KUBERNETES, cluster=cluster,
                                        provisioning_state=ProvisioningState.SUCCEEDED,
                                        properties={"namespace": "ml", "node_selector": EXTENSION})


def add(compute, name: str, gpu: int = 0, selector: dict | None = None, cpu: str = "2",
        state: str = ProvisioningState.SUCCEEDED) -> InstanceType:
    return InstanceType.objects.create(cluster=compute.cluster, name=name, node_selector=selector or {}, gpu=gpu,
                                       requests={"cpu": "1", "memory": "1Gi"}, limits={"cpu": cpu, "memory": "2Gi"},
                                       provisioning_state=state)


@pytest.mark.django_db
def test_a_record_gives_its_shape_and_takes_it_back(compute):
    record = add(compute, "gpu-a100", gpu=2, selector={"gpu": "a100"})
    assert record.shape() == Shape("gpu-a100", {"gpu": "a100"}, {"cpu": "1", "memory": "1Gi"}, {"cpu": "2", "memory": "2Gi"}, 2)
    assert InstanceType.shape_fields(record.shape()) == {
        "node_selector": record.node_selector, "requests": record.requests, "limits": record.limits, "gpu": record.gpu}


@pytest.mark.django_db
def test_the_shape_a_submit_reads_is_the_one_the_api_shows(compute):
    add(compute, "gpu-a100", gpu=2, selector={"gpu": "a100"})
    add(compute, "small")
    for row in instance_type_list(compute=compute):
        shape = instance_type_shape(compute=compute, name=row["name"])
        assert (shape.name, shape.node_selector, shape.resources(), shape.selector) == (
            row["name"], row["nodeSelector"], row["resources"], row["effective_node_selector"])
    assert instance_type_shape(compute=compute, name="gpu-a100").selector == {"pool": "ml", "gpu": "a100"}


@pytest.mark.django_db
def test_the_built_in_default_until_a_record_overrides_it(compute):
    assert instance_type_shape(compute=compute, name=shapes.DEFAULT_NAME) == shapes.DEFAULT_SHAPE.on(EXTENSION)
    add(compute, shapes.DEFAULT_NAME, cpu="3")
    assert instance_type_shape(compute=compute, name=shapes.DEFAULT_NAME).limits["cpu"] == "3"
    assert instance_type_shape(compute=compute, name="missing") is None


@pytest.mark.django_db
def test_with_no_name_the_first_by_name_as_instance_type_get_has_it(compute):
    add(compute, "zeta")
    add(compute, "alpha")
    for name in ("", None):
        assert instance_type_shape(compute=compute, name=name).name == instance_type_get(compute=compute, name=name)["name"]


@pytest.mark.django_db
def test_a_shape_lookup_is_one_query_whatever_the_nodes(compute, django_assert_num_queries):
    add(compute, "small")
    compute = ComputeTarget.objects.get(pk=compute.pk)  # its cluster (and the nodes) not loaded
    with django_assert_num_queries(1):
        assert instance_type_shape(compute=compute, name="small").name == "small"


@pytest.mark.django_db
def test_placement_offers_the_ready_shapes_that_fit_a_node_by_name(compute):
    add(compute, "gpu-a100", gpu=2, selector={"gpu": "a100"})
    add(compute, "gpu-x4", gpu=4)  # no node has 4 GPUs
    add(compute, "huge", cpu="16")  # no node has 16 cores
    add(compute, "pending", state=ProvisioningState.CREATING)
    add(compute, "small")
    placed = placeable_shapes(compute=compute)
    assert [shape.name for shape in placed] == [shapes.DEFAULT_NAME, "gpu-a100", "small"]
    assert all(shape.extension_selector == EXTENSION for shape in placed)
    assert [shape.name for shape in placeable_shapes(compute=compute, name="gpu-a100")] == ["gpu-a100"]
    fits = {row["name"] for row in instance_type_list(compute=compute)
            if row["fits_nodes"] and row["provisioning_state"] == ProvisioningState.SUCCEEDED}
    assert fits == {shape.name for shape in placed}  # the API's fit and placement's are one rule


@pytest.mark.django_db
def test_a_node_fits_when_it_matches_both_selectors(compute):
    shape = add(compute, "gpu-a100", gpu=1, selector={"gpu": "a100"}).shape()
    nodes = compute.cluster.nodes
    assert shapes.fitting_nodes(shape, nodes) == ["gpu-1"]
    assert shapes.fitting_nodes(shape.on({"pool": "other"}), nodes) == []
    assert shapes.fitting_nodes(shapes.DEFAULT_SHAPE.on(EXTENSION), nodes) == ["cpu-1", "gpu-1"]
    assert shapes.fitting_nodes(shapes.DEFAULT_SHAPE.on({**EXTENSION, "gpu": "h100"}), nodes) == []
