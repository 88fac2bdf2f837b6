"""Valid endpoint and deployment bodies (fields replaced; None removes one) for the spec and API tests, and error targets."""
from pathlib import Path

import pytest

ADDER = Path(__file__).parent / "data" / "adder"
GPU = "nvidia.com/gpu"
PROBE_DEFAULTS = {"period": 10, "initial_delay": 10, "timeout": 2, "success_threshold": 1, "failure_threshold": 30}
# The seed's own resources example (its `#nvidia.com/gpu: 0` left commented out).
SEED_EXAMPLE = {"requests": {"cpu": "0.1", "memory": "0.2Gi"}, "limits": {"cpu": "0.2", "memory": "0.5Gi"}}


def endpoint(**fields) -> dict:
    """A valid endpoint body with fields replaced (None removes one)."""
    data = {"name": "my-endpoint", "compute": "local", **fields}
    return {key: value for key, value in data.items() if value is not None}


def local_deployment(name: str = "blue", **fields) -> dict:
    """A valid deployment of the adder scoring script on a local endpoint (None removes a field)."""
    data = {"name": name, "code_configuration": {"code": str(ADDER), "scoring_script": "score.py"},
            **fields}
    return {key: value for key, value in data.items() if value is not None}


def kube_deployment(name: str = "blue", **fields) -> dict:
    """A valid deployment for a Kubernetes endpoint (None removes a field); the spec tests' valid body too."""
    data = {"name": name, "code_configuration": {"code": "./script", "scoring_script": "score.py"},
            "environment": {"image": "mcr.microsoft.com/azureml/minimal-ubuntu22.04-py39-cpu-inference:latest"}, **fields}
    return {key: value for key, value in data.items() if value is not None}


def targets(exc: pytest.ExceptionInfo) -> list[str]:
    return [path for path, _ in exc.value.errors]
