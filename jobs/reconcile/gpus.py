"""GPUs of an attached VM given to its jobs: each job gets GPUs of its own (job.runner["gpus"] = [index, …]), chosen
under a row lock on the VM's compute row, first come first served.

What a job wants: no `resources.instance_type` → all the VM's GPUs (Azure ML's behaviour: the job sees the machine);
a VM size of the catalog → that size's GPU count (a CPU size → none). The GPUs the VM has are what its last probe
found (compute.status["gpus"], from nvidia-smi). A job that asks more than the VM has never fits: `impossible` says so,
and the caller fails it instead of leaving it Queued for ever.
"""
from django.db import transaction

from compute import vmsizes
from compute.models import ComputeTarget

from ..choices import TERMINAL, JobStatus
from ..models import Job
from .status import save

GPUS = "gpus"  # runner key: the indexes allotted ([] for a job that takes none); absent until allotted


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _known_gpus(compute: ComputeTarget) -> list[int] | None:
    """The indexes of the VM's GPUs as last probed, or None when it has not been probed yet."""
    gpus = (compute.status or {}).get(GPUS)
    if gpus is None:
        return None
    return sorted(int(gpu["index"]) for gpu in gpus)


def wanted_count(instance_type: str | None, vm_gpus: int | None) -> int | None:
    """How many GPUs a job asks for (pure): None when that depends on a VM not probed yet or the name is no size."""
    if not instance_type:
        return vm_gpus  # all of them
    size = vmsizes.vm_size(instance_type)
    return size.gpus if size is not None else None


def _instance_type(job: Job) -> str | None:
    return (job.spec.get("resources") or {}).get("instance_type")


def _too_many(job: Job, compute: ComputeTarget) -> str | None:
    instance_type, known = _instance_type(job), _known_gpus(compute)
    if instance_type and vmsizes.vm_size(instance_type) is None:
        return (f"resources.instance_type '{instance_type}' is not a VM size Dockyard knows, so the GPUs it asks "
                f"for on virtualmachine '{compute.name}' are unknown.")
    wanted = wanted_count(instance_type, len(known) if known is not None else None)
    if known is None or wanted is None or wanted <= len(known):
        return None
    return (f"The job asks for {_plural(wanted, 'GPU')} ({vmsizes.vm_size(instance_type).name}) but virtualmachine "
            f"'{compute.name}' has {len(known)}: it would wait for ever. Choose a smaller size, or leave "
            "resources.instance_type out to use all of the VM's GPUs.")


def impossible(job: Job) -> str | None:
    """Why the job can never get its GPUs on its VM (it asks more than the VM has, or its instance_type is no VM size
    of the catalog: submission refuses that already), or None; None too while the VM has not been probed."""
    return _too_many(job, job.compute)


def cuda_visible_devices(indexes: list[int], *, in_container: bool = False) -> str:
    """CUDA_VISIBLE_DEVICES for a job given these GPUs ("" hides every GPU from CUDA). A process sees the host's
    indexes; a container started with `--gpus device=…` sees only its GPUs, numbered again from 0."""
    if in_container:
        return ",".join(str(number) for number in range(len(indexes)))
    return ",".join(str(index) for index in indexes)


def _others(job: Job):
    """The VM's other jobs that still hold or wait for GPUs, oldest first."""
    return (Job.objects.filter(compute_id=job.compute_id).exclude(pk=job.pk).exclude(status__in=TERMINAL)
            .order_by("created_at", "pk").only("pk", "name", "created_at", "status", "spec", "runner"))


def _is_ahead(other: Job, job: Job, vm_gpus: int) -> bool:
    """An older job still waiting for GPUs it can get on this VM (a CPU-only one, or one that can never fit, or one
    being cancelled, holds nobody back)."""
    if GPUS in (other.runner or {}) or other.status == JobStatus.CANCEL_REQUESTED:
        return False
    if (other.created_at, other.pk) >= (job.created_at, job.pk):
        return False
    wanted = wanted_count(_instance_type(other), vm_gpus)
    return wanted is not None and 0 < wanted <= vm_gpus


def _waiting(wanted: int, compute: ComputeTarget, known: list[int], used: dict[int, str], ahead: int) -> str:
    """The reason a job waits: who holds the VM's GPUs, how many jobs wait before it."""
    owners = [f"GPU {index} by job '{name}'" for index, name in sorted(used.items())]
    if owners:
        owners[0] = owners[0].replace(" by job", " is used by job", 1)
    parts = [", ".join(owners)] if owners else []
    if ahead:
        parts.append(f"{_plural(ahead, 'job')} ahead")
    return (f"Waiting for {_plural(wanted, 'GPU')} on virtualmachine '{compute.name}' (it has {len(known)}): "
            f"{'; '.join(parts)}.")


def allot(job: Job) -> tuple[list[int] | None, str]:
    """Give the job the GPUs it asks for on its VM, or say why it waits: (indexes, "") or (None, reason).

    The VM's compute row is locked while the GPUs in use are read and the choice is stored in job.runner["gpus"]
    (saved here, inside the lock, so two workers never give out the same GPU). A job already given GPUs keeps them.
    """
    if GPUS in (job.runner or {}):
        return list(job.runner[GPUS]), ""
    with transaction.atomic():
        compute = ComputeTarget.objects.select_for_update().get(pk=job.compute_id)
        indexes, reason = _choose(job, compute)
        if indexes is not None:
            job.runner = {**(job.runner or {}), GPUS: indexes}
            save(job, ["runner"])
    return indexes, reason


def _choose(job: Job, compute: ComputeTarget) -> tuple[list[int] | None, str]:
    instance_type, known = _instance_type(job), _known_gpus(compute)
    if instance_type and wanted_count(instance_type, None) == 0:
        return [], ""  # a CPU size takes no GPU, whatever the VM has
    too_many = _too_many(job, compute)
    if too_many:
        return None, too_many
    if known is None:
        return None, (f"Waiting for virtualmachine '{compute.name}' to be probed: its GPUs are not known yet, and "
                      "the job's GPUs are chosen from them.")
    wanted = wanted_count(instance_type, len(known))
    if wanted == 0:
        return [], ""
    used, ahead = {}, 0
    for other in _others(job):
        for index in (other.runner or {}).get(GPUS, ()):
            used[int(index)] = other.name
        ahead += _is_ahead(other, job, len(known))
    free = [index for index in known if index not in used]
    if ahead or len(free) < wanted:
        return None, _waiting(wanted, compute, known, used, ahead)
    return free[:wanted], ""
