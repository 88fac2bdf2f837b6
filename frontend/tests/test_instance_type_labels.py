"""How the job and deployment forms name an instance type in their dropdowns."""
from frontend.forms.instance_types import choice_label


def row(name: str, requests: dict, limits: dict) -> dict:
    return {"name": name, "resources": {"requests": requests, "limits": limits}}


def test_types_with_the_same_limits_read_differently():
    small = row("small", {"cpu": "100m", "memory": "256Mi"}, {"cpu": "1", "memory": "1Gi"})
    full = row("full", {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})
    assert choice_label(small) == "small — 100m/1 cpu, 256Mi/1Gi"
    assert choice_label(full) == "full — 1/1 cpu, 1Gi/1Gi"


def test_gpus_are_named():
    gpu = row("gpu-small", {"cpu": "700m", "memory": "1500Mi"}, {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": 1})
    assert choice_label(gpu) == "gpu-small — 700m/1 cpu, 1500Mi/2Gi, 1 GPU"
