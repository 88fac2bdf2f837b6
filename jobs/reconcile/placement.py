"""Serverless: put a job without `compute` on a Kubernetes compute or a compute cluster of its workspace (the ranking
is jobs/serverless.py's, over snapshots read here), or keep it Queued until one can take it."""
from compute import vmsizes
from compute.choices import ComputeType, Tier
from compute.connections import host_attachment
from compute.models import ComputeTarget
from compute.pools import pool_shape
from compute.selectors import instance_type_shape, placeable_shapes
from controlplane.reconciling import ProvisioningState

from ..choices import JobStatus
from ..clusters import not_ready_reason
from ..models import Job
from ..serverless import KubernetesOption, PoolOption, rank
from .status import event, save, transition


def _kubernetes_options(job: Job, wanted: str | None) -> list[KubernetesOption]:
    computes = ComputeTarget.objects.filter(
        workspace_id=job.workspace_id, type=ComputeType.KUBERNETES, provisioning_state=ProvisioningState.SUCCEEDED,
    ).select_related("cluster").order_by("name")
    options = []
    for compute in computes:
        shapes = placeable_shapes(compute=compute, name=wanted)
        if wanted and not shapes and instance_type_shape(compute=compute, name=wanted) is None and vmsizes.vm_size(wanted):
            extension = compute.properties.get("node_selector") or {}
            shapes = [vmsizes.size_shape(wanted).on(extension)]  # no instance type of that name: the size's shape
        nodes = compute.cluster.nodes if compute.cluster_id else []
        options.append(KubernetesOption(compute.name, tuple(shapes), tuple(nodes or ())))
    return options


def _pool_options(job: Job) -> dict[str, tuple[ComputeTarget, PoolOption]]:
    """The workspace's compute clusters that could take work now: declared pool, not Failed, attachment present."""
    computes = ComputeTarget.objects.filter(workspace_id=job.workspace_id, type=ComputeType.AMLCOMPUTE).exclude(
        provisioning_state=ProvisioningState.DELETING).order_by("name")
    options = {}
    for compute in computes:
        status, properties = compute.status or {}, compute.properties
        if not_ready_reason(compute.name, compute.provisioning_state, [], status) or host_attachment(compute) is None:
            continue
        size = properties.get("size") or "Standard_DS3_v2"
        shape = pool_shape(size, status["engine"], status["pool"])
        if shape is None:
            continue
        options[compute.name] = (compute, PoolOption(
            compute.name, vmsizes.vm_size(size).name, shape, properties.get("tier") == Tier.LOW_PRIORITY,
            int(status.get("max_node_count") or properties.get("max_instances") or 1),
            int(status.get("current_node_count") or 0), int(status.get("target_node_count") or 0),
            int(status.get("idle_node_count") or 0)))
    return options


def place(job: Job) -> bool:
    """Choose the compute and shape (fits now > can scale > queue, smallest first); False: still Queued."""
    resources = job.spec.get("resources", {})
    wanted = resources.get("instance_type")
    size = vmsizes.vm_size(wanted) if wanted else None
    pools = _pool_options(job)
    choice = rank(_kubernetes_options(job, wanted), [option for _, option in pools.values()],
                  size=size.name if size else None, named=bool(wanted), instance_count=resources.get("instance_count", 1))
    if choice is None:
        what = f"instance type '{wanted}'" if wanted else "any CPU instance type"
        reason = (f"Waiting for capacity: no Kubernetes compute of this workspace has a ready node that fits {what}, "
                  "and no compute cluster of a fitting size can take it; the job is placed when one can.")
        save(job, transition(job, JobStatus.QUEUED, reason))
        return False
    compute = pools[choice.compute][0] if choice.pool else ComputeTarget.objects.select_related("cluster").get(
        workspace_id=job.workspace_id, name=choice.compute)
    job.compute, job.instance_type = compute, choice.instance_type
    event(job, "Placed", choice.message())
    save(job, ["compute", "instance_type"])
    return True
