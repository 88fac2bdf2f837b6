"""Serverless: put a job without `compute` on a Kubernetes compute of its workspace whose instance type fits a node."""
from compute.choices import ComputeType
from compute.models import ComputeTarget
from compute.selectors import placeable_shapes
from controlplane.reconciling import ProvisioningState

from ..choices import JobStatus
from ..models import Job
from .status import event, save, transition


def _candidates(job: Job, wanted: str | None) -> list[tuple]:
    computes = ComputeTarget.objects.filter(
        workspace_id=job.workspace_id, type=ComputeType.KUBERNETES, provisioning_state=ProvisioningState.SUCCEEDED,
    ).select_related("cluster").order_by("name")
    return [(shape.size(), compute.name, compute, shape.name)
            for compute in computes for shape in placeable_shapes(compute=compute, name=wanted)]


def place(job: Job) -> bool:
    """Choose the compute and instance type (the named one, or the smallest that fits a node now); False: still Queued."""
    wanted = job.spec.get("resources", {}).get("instance_type")
    found = _candidates(job, wanted)
    if not found:
        what = f"instance type '{wanted}'" if wanted else "any instance type"
        reason = (f"Waiting for capacity: no Kubernetes compute of this workspace has a ready node that fits {what}; "
                  "the job is placed when one does.")
        save(job, transition(job, JobStatus.QUEUED, reason))
        return False
    _, _, compute, instance_type = min(found, key=lambda item: item[:2])
    job.compute, job.instance_type = compute, instance_type
    event(job, "Placed", f"Serverless: placed on compute '{compute.name}' with instance type '{instance_type}'.")
    save(job, ["compute", "instance_type"])
    return True
