"""endpoints/spec.py's resource rules for a deployment against its instance type, valid and refused (pure).

The resource rules are the instance-types seed's (lines 125–213): requests cpu/memory required, non-zero,
non-empty; memory at least 1 MB; limits optional unless a GPU is asked for; GPUs whole numbers under limits
only; every limit strictly less than the instance type's (defaultinstancetype when none is named); without
`resources` the instance type's shape; MLflow models need requests of at least 2 CPU and 4 GB.
"""
import pytest

from compute.shapes import DEFAULT_SHAPE, Shape
from endpoints.spec import resolve_resources
from endpoints.tests.bodies import GPU, SEED_EXAMPLE

SMALL = Shape("small", {}, {"cpu": "1", "memory": "2Gi"}, {"cpu": "4", "memory": "8Gi"}, 0)
GPU_SHAPE = Shape("gpu-small", {"accelerator": "nvidia"}, {"cpu": "700m", "memory": "1500Mi"}, {"cpu": "4", "memory": "16Gi"}, 2)
BIG = Shape("big", {}, {"cpu": "2", "memory": "4Gi"}, {"cpu": "8", "memory": "32Gi"}, 0)
# Azure ML's GPU inference example pairs `nvidia.com/gpu: 1` with a 1-GPU instance type like this one
ONE_GPU = Shape("gpu-one", {}, {"cpu": "1", "memory": "4Gi"}, {"cpu": "6", "memory": "56Gi"}, 1)
SHAPES = {"default": DEFAULT_SHAPE, "small": SMALL, "gpu": GPU_SHAPE, "big": BIG, "one-gpu": ONE_GPU}


# ---------------------------------------------------------------- resources: the seed's rules

def resources(requests: dict | None = None, limits: dict | None = None) -> dict:
    body = {"requests": requests if requests is not None else {"cpu": "100m", "memory": "1Gi"}}
    if limits is not None:
        body["limits"] = limits
    return body


@pytest.mark.parametrize("shape", ["default", "small", "big"])
def test_the_seeds_resources_example_is_accepted(shape):
    resolved, errors = resolve_resources(SEED_EXAMPLE, SHAPES[shape], mlflow=False)
    assert errors == []
    assert resolved == {"requests": {"cpu": "0.1", "memory": "0.2Gi"}, "limits": {"cpu": "0.2", "memory": "0.5Gi"}}


def test_the_seeds_example_with_its_gpu_line_uncommented_as_zero_is_accepted():
    body = {**SEED_EXAMPLE, "limits": {**SEED_EXAMPLE["limits"], GPU: 0}}
    resolved, errors = resolve_resources(body, DEFAULT_SHAPE, mlflow=False)
    assert errors == [] and resolved["limits"] == {"cpu": "0.2", "memory": "0.5Gi"}


@pytest.mark.parametrize("shape, body, expected", [
    pytest.param("small", resources({"cpu": "100m", "memory": "1Gi"}),
                 {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {}}, id="cpu-only-limits-omitted"),
    pytest.param("small", resources({"cpu": "1", "memory": "1024Mi"}),
                 {"requests": {"cpu": "1", "memory": "1024Mi"}, "limits": {}}, id="whole-cores-and-Mi"),
    pytest.param("small", resources({"cpu": 1, "memory": "1G"}),
                 {"requests": {"cpu": "1", "memory": "1G"}, "limits": {}}, id="a-yaml-number-cpu"),
    pytest.param("small", resources({"cpu": "1m", "memory": "1M"}),
                 {"requests": {"cpu": "1m", "memory": "1M"}, "limits": {}}, id="memory-exactly-1MB"),
    pytest.param("small", resources({"cpu": "1m", "memory": "1000000"}),
                 {"requests": {"cpu": "1m", "memory": "1000000"}, "limits": {}}, id="memory-1MB-in-bytes"),
    pytest.param("small", resources({"cpu": "1m", "memory": "1Mi"}),
                 {"requests": {"cpu": "1m", "memory": "1Mi"}, "limits": {}}, id="memory-1Mi"),
    pytest.param("small", resources(limits={}),
                 {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {}}, id="empty-limits"),
    pytest.param("small", resources(limits={"cpu": "3999m"}),
                 {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"cpu": "3999m"}}, id="cpu-limit-just-below"),
    pytest.param("small", resources(limits={"memory": "8191Mi"}),
                 {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"memory": "8191Mi"}}, id="memory-limit-just-below"),
    pytest.param("small", resources({"cpu": "500m", "memory": "1Gi"}, {"cpu": "500m", "memory": "1Gi"}),
                 {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "500m", "memory": "1Gi"}}, id="requests-equal-own-limits"),
    pytest.param("default", resources({"cpu": "2", "memory": "2Gi"}),
                 {"requests": {"cpu": "2", "memory": "2Gi"}, "limits": {}}, id="requests-equal-default-limits"),
    pytest.param("default", resources(limits={"cpu": "1999m", "memory": "2047Mi"}),
                 {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"cpu": "1999m", "memory": "2047Mi"}}, id="just-below-default"),
    pytest.param("gpu", resources({"cpu": "1", "memory": "4Gi"}, {"cpu": "2", "memory": "8Gi", GPU: 1}),
                 {"requests": {"cpu": "1", "memory": "4Gi"}, "limits": {"cpu": "2", "memory": "8Gi", GPU: 1}}, id="one-gpu"),
    pytest.param("gpu", resources({"cpu": "1", "memory": "4Gi"}, {"cpu": "2", "memory": "8Gi", GPU: "1"}),
                 {"requests": {"cpu": "1", "memory": "4Gi"}, "limits": {"cpu": "2", "memory": "8Gi", GPU: 1}}, id="one-gpu-as-a-string"),
    pytest.param("gpu", resources({"cpu": "1", "memory": "4Gi"}, {"cpu": "2", GPU: 0}),
                 {"requests": {"cpu": "1", "memory": "4Gi"}, "limits": {"cpu": "2"}}, id="zero-gpus-is-no-gpu"),
    # GPUs may equal the instance type's: whole devices no side process uses (cpu and memory keep their headroom)
    pytest.param("gpu", resources({"cpu": "1", "memory": "4Gi"}, {"cpu": "2", "memory": "8Gi", GPU: 2}),
                 {"requests": {"cpu": "1", "memory": "4Gi"}, "limits": {"cpu": "2", "memory": "8Gi", GPU: 2}}, id="all-the-types-gpus"),
    pytest.param("one-gpu", resources({"cpu": "1", "memory": "4Gi"}, {"cpu": "2", "memory": "8Gi", GPU: 1}),
                 {"requests": {"cpu": "1", "memory": "4Gi"}, "limits": {"cpu": "2", "memory": "8Gi", GPU: 1}}, id="one-gpu-on-a-one-gpu-type"),
])
def test_resources_accepted(shape, body, expected):
    resolved, errors = resolve_resources(body, SHAPES[shape], mlflow=False)
    assert errors == []
    assert resolved == expected


@pytest.mark.parametrize("shape, expected", [
    pytest.param("default", {"requests": {"cpu": "100m", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}}, id="default"),
    pytest.param("small", {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}}, id="small"),
    pytest.param("gpu", {"requests": {"cpu": "700m", "memory": "1500Mi"}, "limits": {"cpu": "4", "memory": "16Gi", GPU: 2}}, id="gpu"),
])
def test_without_resources_the_instance_types_shape_is_used(shape, expected):
    assert resolve_resources(None, SHAPES[shape], mlflow=False) == (expected, [])


REFUSED = [
    # the section itself
    pytest.param("small", ["requests"], ["resources"], id="resources-a-list"),
    pytest.param("small", "cpu=1", ["resources"], id="resources-a-string"),
    pytest.param("small", {"requests": {"cpu": "1", "memory": "1Gi"}, "colour": {}}, ["resources.colour"], id="unknown-section"),
    pytest.param("small", {}, ["resources.requests"], id="resources-empty"),
    pytest.param("small", {"limits": {"cpu": "1", "memory": "1Gi"}}, ["resources.requests"], id="limits-without-requests"),
    pytest.param("small", {"requests": "1 cpu"}, ["resources.requests"], id="requests-a-string"),
    pytest.param("small", {"requests": None}, ["resources.requests"], id="requests-null"),
    # requests.cpu: required, not 0, not empty
    pytest.param("small", resources({"memory": "1Gi"}), ["resources.requests.cpu"], id="cpu-request-missing"),
    pytest.param("small", resources({"cpu": "", "memory": "1Gi"}), ["resources.requests.cpu"], id="cpu-request-empty"),
    pytest.param("small", resources({"cpu": None, "memory": "1Gi"}), ["resources.requests.cpu"], id="cpu-request-null"),
    pytest.param("small", resources({"cpu": "0", "memory": "1Gi"}), ["resources.requests.cpu"], id="cpu-request-zero"),
    pytest.param("small", resources({"cpu": 0, "memory": "1Gi"}), ["resources.requests.cpu"], id="cpu-request-zero-number"),
    pytest.param("small", resources({"cpu": "0m", "memory": "1Gi"}), ["resources.requests.cpu"], id="cpu-request-zero-millicores"),
    pytest.param("small", resources({"cpu": "-1", "memory": "1Gi"}), ["resources.requests.cpu"], id="cpu-request-negative"),
    pytest.param("small", resources({"cpu": "one", "memory": "1Gi"}), ["resources.requests.cpu"], id="cpu-request-not-a-quantity"),
    pytest.param("small", resources({"cpu": "1 ", "memory": "1Gi"}), ["resources.requests.cpu"], id="cpu-request-trailing-blank"),
    pytest.param("small", resources({"cpu": True, "memory": "1Gi"}), ["resources.requests.cpu"], id="cpu-request-boolean"),
    # requests.memory: required, not 0, not empty, at least 1 MB
    pytest.param("small", resources({"cpu": "1"}), ["resources.requests.memory"], id="memory-request-missing"),
    pytest.param("small", resources({"cpu": "1", "memory": ""}), ["resources.requests.memory"], id="memory-request-empty"),
    pytest.param("small", resources({"cpu": "1", "memory": "0"}), ["resources.requests.memory"], id="memory-request-zero"),
    pytest.param("small", resources({"cpu": "1", "memory": "0Gi"}), ["resources.requests.memory"], id="memory-request-zero-Gi"),
    pytest.param("small", resources({"cpu": "1", "memory": "-1Gi"}), ["resources.requests.memory"], id="memory-request-negative"),
    pytest.param("small", resources({"cpu": "1", "memory": "1GB"}), ["resources.requests.memory"], id="memory-request-GB-suffix"),
    pytest.param("small", resources({"cpu": "1", "memory": "999999"}), ["resources.requests.memory"], id="memory-under-1MB-bytes"),
    pytest.param("small", resources({"cpu": "1", "memory": "999k"}), ["resources.requests.memory"], id="memory-under-1MB-k"),
    pytest.param("small", resources({"cpu": "1", "memory": "512Ki"}), ["resources.requests.memory"], id="memory-under-1MB-Ki"),
    pytest.param("small", resources({}), ["resources.requests.cpu", "resources.requests.memory"], id="requests-empty"),
    # GPUs are given under limits only
    pytest.param("gpu", resources({"cpu": "1", "memory": "1Gi", GPU: 1}), [f"resources.requests.{GPU}"], id="gpu-in-requests"),
    pytest.param("gpu", resources({"cpu": "1", "memory": "1Gi", GPU: 1}, {"cpu": "2", "memory": "2Gi", GPU: 1}),
                 [f"resources.requests.{GPU}"], id="gpu-in-requests-and-limits"),
    pytest.param("small", resources({"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"}),
                 ["resources.requests.ephemeral-storage"], id="unknown-request"),
    # limits: optional, but what is given cannot be 0 or empty
    pytest.param("small", resources(limits=["cpu"]), ["resources.limits"], id="limits-a-list"),
    pytest.param("small", resources(limits={"cpu": "0"}), ["resources.limits.cpu"], id="cpu-limit-zero"),
    pytest.param("small", resources(limits={"cpu": ""}), ["resources.limits.cpu"], id="cpu-limit-empty"),
    pytest.param("small", resources(limits={"cpu": None}), ["resources.limits.cpu"], id="cpu-limit-null"),
    pytest.param("small", resources(limits={"cpu": "-500m"}), ["resources.limits.cpu"], id="cpu-limit-negative"),
    pytest.param("small", resources(limits={"memory": "0"}), ["resources.limits.memory"], id="memory-limit-zero"),
    pytest.param("small", resources(limits={"memory": ""}), ["resources.limits.memory"], id="memory-limit-empty"),
    pytest.param("small", resources(limits={"memory": None}), ["resources.limits.memory"], id="memory-limit-null"),
    pytest.param("small", resources(limits={"memory": "lots"}), ["resources.limits.memory"], id="memory-limit-not-a-quantity"),
    pytest.param("small", resources(limits={"cpu": "1", "ephemeral-storage": "1Gi"}), ["resources.limits.ephemeral-storage"], id="unknown-limit"),
    # a GPU needs cpu and memory limits
    pytest.param("gpu", resources(limits={GPU: 1}), ["resources.limits.cpu", "resources.limits.memory"], id="gpu-without-limits"),
    pytest.param("gpu", resources(limits={"memory": "2Gi", GPU: 1}), ["resources.limits.cpu"], id="gpu-without-cpu-limit"),
    pytest.param("gpu", resources(limits={"cpu": "2", GPU: 1}), ["resources.limits.memory"], id="gpu-without-memory-limit"),
    # GPU: a whole number, not empty
    pytest.param("gpu", resources(limits={"cpu": "2", "memory": "2Gi", GPU: 1.5}), [f"resources.limits.{GPU}"], id="gpu-fraction"),
    pytest.param("gpu", resources(limits={"cpu": "2", "memory": "2Gi", GPU: "1.5"}), [f"resources.limits.{GPU}"], id="gpu-fraction-string"),
    pytest.param("gpu", resources(limits={"cpu": "2", "memory": "2Gi", GPU: "one"}), [f"resources.limits.{GPU}"], id="gpu-word"),
    pytest.param("gpu", resources(limits={"cpu": "2", "memory": "2Gi", GPU: -1}), [f"resources.limits.{GPU}"], id="gpu-negative"),
    pytest.param("gpu", resources(limits={"cpu": "2", "memory": "2Gi", GPU: True}), [f"resources.limits.{GPU}"], id="gpu-boolean"),
    pytest.param("gpu", resources(limits={"cpu": "2", "memory": "2Gi", GPU: ""}), [f"resources.limits.{GPU}"], id="gpu-empty"),
    pytest.param("gpu", resources(limits={"cpu": "2", "memory": "2Gi", GPU: None}), [f"resources.limits.{GPU}"], id="gpu-null"),
    pytest.param("gpu", resources(limits={"cpu": "2", "memory": "2Gi", GPU: "1Gi"}), [f"resources.limits.{GPU}"], id="gpu-quantity"),
    # every limit strictly less than the instance type's: equal is refused
    pytest.param("small", resources(limits={"cpu": "4"}), ["resources.limits.cpu"], id="cpu-limit-equal"),
    pytest.param("small", resources(limits={"cpu": "4000m"}), ["resources.limits.cpu"], id="cpu-limit-equal-in-millicores"),
    pytest.param("small", resources(limits={"cpu": "5"}), ["resources.limits.cpu"], id="cpu-limit-above"),
    pytest.param("small", resources(limits={"memory": "8Gi"}), ["resources.limits.memory"], id="memory-limit-equal"),
    pytest.param("small", resources(limits={"memory": "8192Mi"}), ["resources.limits.memory"], id="memory-limit-equal-in-Mi"),
    pytest.param("small", resources(limits={"memory": "9Gi"}), ["resources.limits.memory"], id="memory-limit-above"),
    pytest.param("small", resources(limits={"cpu": "4", "memory": "8Gi"}), ["resources.limits.cpu", "resources.limits.memory"], id="both-equal"),
    pytest.param("gpu", resources(limits={"cpu": "2", "memory": "2Gi", GPU: 3}), [f"resources.limits.{GPU}"], id="gpu-limit-above"),
    pytest.param("small", resources(limits={"cpu": "2", "memory": "2Gi", GPU: 1}), [f"resources.limits.{GPU}"], id="gpu-on-a-cpu-type"),
    # no instance type named: validated against defaultinstancetype (limits 2 CPU, 2Gi)
    pytest.param("one-gpu", resources(limits={"cpu": "2", "memory": "2Gi", GPU: 2}), [f"resources.limits.{GPU}"], id="two-gpus-on-a-one-gpu-type"),
    pytest.param("default", resources(limits={"cpu": "2"}), ["resources.limits.cpu"], id="default-cpu-limit-equal"),
    pytest.param("default", resources(limits={"cpu": "3"}), ["resources.limits.cpu"], id="default-cpu-limit-above"),
    pytest.param("default", resources(limits={"memory": "2Gi"}), ["resources.limits.memory"], id="default-memory-limit-equal"),
    pytest.param("default", resources(limits={"memory": "4Gi"}), ["resources.limits.memory"], id="default-memory-limit-above"),
    pytest.param("default", resources(limits={"cpu": "1", "memory": "1Gi", GPU: 1}), [f"resources.limits.{GPU}"], id="default-has-no-gpu"),
    # requests cannot exceed the limit that applies: their own, else the instance type's
    pytest.param("small", resources({"cpu": "1", "memory": "1Gi"}, {"cpu": "500m"}), ["resources.requests.cpu"], id="cpu-request-above-own-limit"),
    pytest.param("small", resources({"cpu": "1", "memory": "2Gi"}, {"memory": "1Gi"}), ["resources.requests.memory"], id="memory-request-above-own-limit"),
    pytest.param("default", resources({"cpu": "2001m", "memory": "1Gi"}), ["resources.requests.cpu"], id="cpu-request-above-default-limit"),
    pytest.param("default", resources({"cpu": "1", "memory": "3Gi"}), ["resources.requests.memory"], id="memory-request-above-default-limit"),
    pytest.param("small", resources({"cpu": "5", "memory": "1Gi"}), ["resources.requests.cpu"], id="cpu-request-above-type-limit"),
]


@pytest.mark.parametrize("shape, body, expected", REFUSED)
def test_resources_refused(shape, body, expected):
    resolved, errors = resolve_resources(body, SHAPES[shape], mlflow=False)
    assert resolved == {}
    assert sorted({path for path, _ in errors}) == sorted(expected), errors
    assert all(message for _, message in errors)


def test_a_refused_limit_names_the_instance_type_and_its_limit():
    _, errors = resolve_resources(resources(limits={"cpu": "4"}), SMALL, mlflow=False)
    assert "small" in errors[0][1] and "4" in errors[0][1]
    _, errors = resolve_resources(resources(limits={"memory": "2Gi"}), DEFAULT_SHAPE, mlflow=False)
    assert "defaultinstancetype" in errors[0][1]


def test_the_limit_messages_say_why_cpu_and_memory_stay_below_and_gpus_may_equal():
    _, errors = resolve_resources(resources(limits={"cpu": "4"}), SMALL, mlflow=False)
    assert "room for the server's own processes" in errors[0][1] and "GPU limits may equal" in errors[0][1]
    _, errors = resolve_resources(resources(limits={"cpu": "2", "memory": "2Gi", GPU: 2}), ONE_GPU, mlflow=False)
    assert errors == [(f"resources.limits.{GPU}", f"The {GPU} limit 2 cannot be more than the limit of instance type 'gpu-one' (1); "
                                                  "it may be equal, as GPUs are whole devices no other process uses.")]


# MLflow: requests of at least 2 CPU and 4 GB, with or without a resources section

@pytest.mark.parametrize("shape, body", [
    pytest.param("big", None, id="type-requests-2-cpu-4Gi"),
    pytest.param("big", resources({"cpu": "2", "memory": "4Gi"}), id="requests-2-cpu-4Gi"),
    pytest.param("big", resources({"cpu": "2000m", "memory": "4G"}), id="requests-2000m-4G"),
    pytest.param("big", resources({"cpu": "4", "memory": "8Gi"}, {"cpu": "6", "memory": "16Gi"}), id="more-with-limits"),
])
def test_mlflow_minimum_met(shape, body):
    resolved, errors = resolve_resources(body, SHAPES[shape], mlflow=True)
    assert errors == [] and resolved


@pytest.mark.parametrize("shape, body, target", [
    pytest.param("default", None, "instance_type", id="default-type-100m"),
    pytest.param("small", None, "instance_type", id="type-requests-1-cpu"),
    pytest.param("gpu", None, "instance_type", id="type-requests-700m"),
    pytest.param("big", resources({"cpu": "1", "memory": "4Gi"}), "resources.requests", id="requests-1-cpu"),
    pytest.param("big", resources({"cpu": "1999m", "memory": "8Gi"}), "resources.requests", id="requests-1999m"),
    pytest.param("big", resources({"cpu": "2", "memory": "3Gi"}), "resources.requests", id="requests-3Gi"),
    pytest.param("big", resources({"cpu": "2", "memory": "3999M"}), "resources.requests", id="requests-3999M"),
    pytest.param("big", SEED_EXAMPLE, "resources.requests", id="the-seeds-example"),
])
def test_mlflow_minimum_not_met(shape, body, target):
    resolved, errors = resolve_resources(body, SHAPES[shape], mlflow=True)
    assert target in [path for path, _ in errors]
    assert any("MLflow" in message for _, message in errors)


def test_mlflow_is_not_checked_for_other_models():
    assert resolve_resources(SEED_EXAMPLE, BIG, mlflow=False)[1] == []
    assert resolve_resources(None, DEFAULT_SHAPE, mlflow=False)[1] == []
