"""Pod shapes and container resources: GPUs taken out of limits and put back in one place (pure)."""
import dataclasses

import pytest

from controlplane.kube.objects import GPU
from controlplane.kube.quantities import QuantityError
from controlplane.kube.resources import Shape, container_resources, split_gpu

REQUESTS = {"cpu": "700m", "memory": "1500Mi"}
LIMITS = {"cpu": "1", "memory": "2Gi"}
GPU_SHAPE = Shape("gpu", {"accelerator": "a100"}, REQUESTS, LIMITS, 2)


# --- split_gpu and container_resources -----------------------------------------------------------

@pytest.mark.parametrize(("limits", "rest", "gpu"), [
    ({"cpu": "1", "memory": "2Gi", GPU: 2}, {"cpu": "1", "memory": "2Gi"}, 2),
    ({"cpu": "1", GPU: "2"}, {"cpu": "1"}, "2"),  # as written: judging it is the caller's rule
    ({"cpu": "1", GPU: None}, {"cpu": "1"}, None),
    ({"cpu": "1"}, {"cpu": "1"}, None),
    ({}, {}, None),
    (None, {}, None),
])
def test_split_gpu_takes_the_gpu_entry_out_of_limits(limits, rest, gpu):
    assert split_gpu(limits) == (rest, gpu)


def test_split_gpu_leaves_the_given_limits_alone():
    limits = {"cpu": "1", GPU: 1}
    split_gpu(limits)
    assert limits == {"cpu": "1", GPU: 1}


@pytest.mark.parametrize(("gpu", "limits"), [
    (0, {"cpu": "1", "memory": "2Gi"}),
    (None, {"cpu": "1", "memory": "2Gi"}),
    (1, {"cpu": "1", "memory": "2Gi", GPU: 1}),
    (8, {"cpu": "1", "memory": "2Gi", GPU: 8}),
])
def test_container_resources_write_gpus_under_limits_only_and_only_when_there_are_some(gpu, limits):
    assert container_resources(REQUESTS, LIMITS, gpu) == {"requests": REQUESTS, "limits": limits}


def test_container_resources_are_new_dicts():
    rendered = container_resources(REQUESTS, LIMITS, 0)
    rendered["requests"]["cpu"] = rendered["limits"]["cpu"] = "9"
    assert REQUESTS["cpu"] == "700m" and LIMITS["cpu"] == "1"


@pytest.mark.parametrize("limits", [{"cpu": "1", "memory": "2Gi", GPU: 3}, {"cpu": "1", "memory": "2Gi"}])
def test_split_then_render_gives_the_limits_back(limits):
    rest, gpu = split_gpu(limits)
    assert container_resources({}, rest, gpu)["limits"] == limits


# --- Shape ---------------------------------------------------------------------------------------

def test_a_shape_is_frozen_and_keeps_copies_of_what_it_was_given():
    selector, requests = {"a": "b"}, dict(REQUESTS)
    shape = Shape("t", selector, requests, LIMITS, 0)
    selector["a"], requests["cpu"] = "changed", "9"
    assert shape.node_selector == {"a": "b"} and shape.requests == REQUESTS
    with pytest.raises(dataclasses.FrozenInstanceError):
        shape.gpu = 1


def test_container_resources_of_a_shape():
    assert GPU_SHAPE.container_resources() == {"requests": REQUESTS, "limits": {**LIMITS, GPU: 2}}
    assert dataclasses.replace(GPU_SHAPE, gpu=0).container_resources() == {"requests": REQUESTS, "limits": LIMITS}


def test_the_api_form_always_names_the_gpu_entry():
    assert GPU_SHAPE.resources() == {"requests": REQUESTS, "limits": {**LIMITS, GPU: 2}}
    assert dataclasses.replace(GPU_SHAPE, gpu=0).resources() == {"requests": REQUESTS, "limits": {**LIMITS, GPU: None}}


def test_the_effective_selector_is_the_attachments_and_the_instance_types():
    assert GPU_SHAPE.selector == {"accelerator": "a100"}
    placed = GPU_SHAPE.on({"pool": "training", "accelerator": "h100"})
    assert placed.selector == {"pool": "training", "accelerator": "a100"}  # the instance type wins on a shared key
    assert placed.node_selector == {"accelerator": "a100"}  # its own selector (the CR's) is unchanged
    assert GPU_SHAPE.on(None).selector == GPU_SHAPE.selector and GPU_SHAPE.on(None) == GPU_SHAPE


def test_the_cr_spec_names_a_selector_only_when_there_is_one():
    assert GPU_SHAPE.spec() == {"resources": {"requests": REQUESTS, "limits": {**LIMITS, GPU: 2}},
                                "nodeSelector": {"accelerator": "a100"}}
    assert Shape("t", {}, REQUESTS, LIMITS).spec() == {"resources": {"requests": REQUESTS, "limits": LIMITS}}
    assert GPU_SHAPE.on({"pool": "x"}).spec() == GPU_SHAPE.spec()  # a CR carries the instance type's own selector only


@pytest.mark.parametrize("shape", [GPU_SHAPE, Shape("t", {}, REQUESTS, LIMITS, 0), Shape("t")])
def test_from_spec_reads_back_what_spec_writes(shape):
    assert Shape.from_spec(shape.name, shape.spec()) == shape


@pytest.mark.parametrize(("written", "gpu"), [(4, 4), (0, 0), (-1, 0), ("2", 0), (None, 0), (1.5, 0)])
def test_from_spec_keeps_a_gpu_count_only_when_it_is_a_positive_whole_number(written, gpu):
    shape = Shape.from_spec("kubectl", {"resources": {"requests": REQUESTS, "limits": {**LIMITS, GPU: written}}})
    assert (shape.gpu, shape.limits) == (gpu, LIMITS)


@pytest.mark.parametrize("spec", [None, {}, {"resources": None}, {"resources": {"limits": None}}])
def test_from_spec_of_a_bare_spec_is_an_empty_shape(spec):
    assert Shape.from_spec("bare", spec) == Shape("bare")


def test_sizes_are_exact_units_ordered_gpus_first():
    assert GPU_SHAPE.millicores() == (700, 1000)
    assert GPU_SHAPE.memory() == (1500 * 2**20, 2 * 2**30)
    assert GPU_SHAPE.size() == (2, 1000, 2 * 2**30)
    small, big = Shape("s", {}, REQUESTS, {"cpu": "8", "memory": "64Gi"}, 0), Shape("b", {}, REQUESTS, LIMITS, 1)
    assert small.size() < big.size()


def test_a_value_dockyard_would_refuse_has_no_size():
    with pytest.raises(QuantityError):
        Shape("odd", {}, REQUESTS, {"cpu": "lots", "memory": "2Gi"}).size()
