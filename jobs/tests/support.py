"""Helpers the jobs API and spec tests share: posting a job, what was written, a Kubernetes compute, valid spec bodies."""
import pytest

from compute.models import ComputeTarget
from compute.services import instance_types_create
from compute.tests.factories import as_checked, create_compute
from controlplane.specs import SpecErrors
from jobs.models import Job, JobEvent
from jobs.spec import parse_job
from workspaces.models import AuditEvent

URL = "/api/v1/workspaces/team-a/jobs/"
IMAGE = "mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu20.04:latest"
SHAPE = {"name": "gpu-small", "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "4Gi"}}}
COMMAND = "python train.py"


def counts() -> tuple[int, int, int]:
    return Job.objects.count(), JobEvent.objects.count(), AuditEvent.objects.count()


def submit(api, **fields) -> dict:
    """A local job (fields replaced; None removes one), asserted created."""
    data = {key: value for key, value in {"command": "echo hi", "compute": "local", **fields}.items() if value is not None}
    response = api.post(URL, data, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def set_state(name: str, **fields) -> Job:
    Job.objects.filter(name=name).update(**fields)
    return Job.objects.get(name=name)


@pytest.fixture
def k8s(workspace, owner) -> ComputeTarget:
    """A kubernetes compute (with its Cluster) that has one instance type besides the default."""
    compute = as_checked(create_compute(workspace, owner, "kubernetes"))
    instance_types_create(user=owner, compute=compute, body=SHAPE)
    return compute


# spec bodies (jobs/spec.py, no database)


def job(**fields) -> dict:
    """A valid minimal body with fields replaced (a value of None removes the field)."""
    data = {"command": COMMAND, **fields}
    return {key: value for key, value in data.items() if value is not None}


def targets_of(body) -> list[str]:
    with pytest.raises(SpecErrors) as info:
        parse_job(body)
    assert info.value.errors and all(message for _, message in info.value.errors)
    return [target for target, _ in info.value.errors]
