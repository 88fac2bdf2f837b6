"""GPUs of an attached VM given to its jobs (jobs/reconcile/gpus.py): what a job asks for, who holds what, first come
first served, the lock on the VM's row. Database only: no SSH."""
import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from compute.models import ComputeTarget
from jobs.choices import JobStatus, Target
from jobs.models import Job
from jobs.reconcile.gpus import allot, cuda_visible_devices, impossible, wanted_count

START = timezone.now() - timedelta(hours=1)


def gpu(index: int) -> dict:
    return {"index": index, "name": "NVIDIA A100 80GB PCIe", "memory_mb": 81920, "uuid": f"GPU-{index:08d}",
            "driver_version": "535.104.05"}


def vm(workspace, gpus: int | None, name: str = "gpubox") -> ComputeTarget:
    """A virtualmachine compute whose probe found `gpus` GPUs (None: not probed yet)."""
    status = {} if gpus is None else {"gpus": [gpu(index) for index in range(gpus)]}
    return ComputeTarget.objects.create(workspace=workspace, name=name, type="virtualmachine", status=status,
                                        properties={"address": "10.0.0.5", "admin_username": "azureuser"})


def job(compute: ComputeTarget, name: str, instance_type: str | None = None, *, age: int = 0, **fields) -> Job:
    """A Queued SSH job on the VM, created `age` seconds after START (older jobs: smaller age)."""
    resources = {"instance_count": 1, "shm_size": "2g", **({"instance_type": instance_type} if instance_type else {})}
    created = Job.objects.create(workspace=compute.workspace, name=name, target=Target.SSH, compute=compute,
                                 spec={"command": "python train.py", "resources": resources},
                                 status=fields.pop("status", JobStatus.QUEUED), **fields)
    Job.objects.filter(pk=created.pk).update(created_at=START + timedelta(seconds=age))
    return Job.objects.get(pk=created.pk)


def holding(compute: ComputeTarget, name: str, gpus: list[int], *, age: int = 0, status=JobStatus.RUNNING) -> Job:
    return job(compute, name, age=age, status=status, runner={"pid": 100 + age, "gpus": gpus})


@pytest.mark.parametrize("instance_type, vm_gpus, wanted", [
    (None, 2, 2), (None, 0, 0), (None, None, None),
    ("Standard_NC12s_v3", 4, 2), ("standard_nc6s_v3", None, 1), ("NC24ads_A100_v4", 0, 1),
    ("Standard_DS3_v2", 2, 0), ("Standard_DS3_v2", None, 0), ("Standard_ND96asr_v4", 8, 8),
    ("gpu-small", 2, None),
])
def test_how_many_gpus_a_job_asks_for(instance_type, vm_gpus, wanted):
    assert wanted_count(instance_type, vm_gpus) == wanted


@pytest.mark.parametrize("instance_type, indexes", [
    (None, [0, 1]), ("Standard_NC6s_v3", [0]), ("Standard_NC12s_v3", [0, 1]), ("Standard_DS3_v2", []),
])
def test_a_lone_job_gets_what_it_asks_for_and_keeps_it(workspace, instance_type, indexes):
    compute = vm(workspace, 2)
    alone = job(compute, "alone", instance_type)
    assert allot(alone) == (indexes, "")
    assert Job.objects.get(pk=alone.pk).runner == {"gpus": indexes}  # stored inside the lock
    holding(compute, "later", [0, 1], age=5, status=JobStatus.QUEUED)  # (a conflicting claim: not looked at again)
    assert allot(Job.objects.get(pk=alone.pk)) == (indexes, "")


def test_a_vm_without_gpus_runs_jobs_that_ask_for_all_or_none(workspace):
    compute = vm(workspace, 0)
    assert allot(job(compute, "all")) == ([], "")
    assert allot(job(compute, "cpu", "Standard_D4s_v3", age=1)) == ([], "")


def test_the_second_job_for_the_only_gpu_waits_until_the_first_ends(workspace):
    compute = vm(workspace, 1)
    first, second = job(compute, "a"), job(compute, "b", age=1)
    assert allot(first) == ([0], "")
    assert allot(second) == (None, "Waiting for 1 GPU on virtualmachine 'gpubox' (it has 1): GPU 0 is used by job 'a'.")
    assert "gpus" not in Job.objects.get(pk=second.pk).runner
    Job.objects.filter(pk=first.pk).update(status=JobStatus.COMPLETED)
    assert allot(second) == ([0], "")


def test_the_reason_names_every_holder_and_the_jobs_ahead(workspace):
    compute = vm(workspace, 2)
    holding(compute, "a", [0]), holding(compute, "b", [1], age=1)
    job(compute, "c", "Standard_NC6s_v3", age=2)  # older, still waiting
    assert allot(job(compute, "d", age=3)) == (None, "Waiting for 2 GPUs on virtualmachine 'gpubox' (it has 2): GPU 0 "
                                                     "is used by job 'a', GPU 1 by job 'b'; 1 job ahead.")


def test_first_come_first_served_a_big_job_is_not_starved(workspace):
    compute = vm(workspace, 2)
    small_holder = holding(compute, "a", [0])
    big, small = job(compute, "big", age=1), job(compute, "small", "Standard_NC6s_v3", age=2)
    assert allot(big)[0] is None
    # GPU 1 is free, but the big job came first: the small one does not take it
    assert allot(small) == (None, "Waiting for 1 GPU on virtualmachine 'gpubox' (it has 2): GPU 0 is used by job 'a'; "
                                  "1 job ahead.")
    cpu = job(compute, "cpu", "Standard_DS3_v2", age=3)
    assert allot(cpu) == ([], "")  # a job that takes no GPU holds nobody back and is held back by nobody
    Job.objects.filter(pk=small_holder.pk).update(status=JobStatus.FAILED)
    assert allot(small)[0] is None  # still behind the big one, which has not been looked at yet
    assert allot(big) == ([0, 1], "")
    assert allot(small) == (None, "Waiting for 1 GPU on virtualmachine 'gpubox' (it has 2): GPU 0 is used by job "
                                  "'big', GPU 1 by job 'big'.")


def test_jobs_that_cannot_move_do_not_hold_the_queue(workspace):
    compute = vm(workspace, 1)
    job(compute, "huge", "Standard_ND96asr_v4", age=0)  # asks 8 of 1: the caller fails it
    job(compute, "leaving", age=1, status=JobStatus.CANCEL_REQUESTED)
    job(compute, "done", age=2, status=JobStatus.CANCELED)
    assert allot(job(compute, "next", age=3)) == ([0], "")


def test_a_job_asking_more_gpus_than_the_vm_has_is_told_at_once(workspace):
    compute = vm(workspace, 2)
    huge = job(compute, "huge", "Standard_ND96asr_v4")
    indexes, reason = allot(huge)
    assert indexes is None and reason == impossible(huge)
    assert reason == ("The job asks for 8 GPUs (Standard_ND96asr_v4) but virtualmachine 'gpubox' has 2: it would wait "
                      "for ever. Choose a smaller size, or leave resources.instance_type out to use all of the VM's GPUs.")
    assert impossible(job(compute, "fits", "Standard_NC12s_v3", age=1)) is None
    assert impossible(job(compute, "all", age=2)) is None
    assert "not a VM size" in impossible(job(compute, "named", "gpu-small", age=3))


def test_a_vm_not_probed_yet_keeps_gpu_jobs_waiting(workspace):
    compute = vm(workspace, None)
    waiting = job(compute, "a")
    assert allot(waiting) == (None, "Waiting for virtualmachine 'gpubox' to be probed: its GPUs are not known yet, "
                                    "and the job's GPUs are chosen from them.")
    assert impossible(job(compute, "b", "Standard_ND96asr_v4", age=1)) is None  # not known to be impossible yet
    assert allot(job(compute, "cpu", "Standard_DS3_v2", age=2)) == ([], "")
    ComputeTarget.objects.filter(pk=compute.pk).update(status={"gpus": [gpu(0)]})
    assert allot(waiting) == ([0], "")


def test_jobs_on_other_vms_do_not_count(workspace):
    one, other = vm(workspace, 1), vm(workspace, 1, name="otherbox")
    holding(other, "there", [0])
    assert allot(job(one, "here", age=1)) == ([0], "")


def test_the_vm_row_is_locked_while_choosing(workspace):
    compute = vm(workspace, 1)
    waiting = job(compute, "a")
    table = ComputeTarget._meta.db_table
    with CaptureQueriesContext(connection) as queries:
        allot(waiting)
    locks = [query["sql"] for query in queries if "FOR UPDATE" in query["sql"]]
    assert len(locks) == 1 and f'FROM "{table}"' in locks[0]


@pytest.mark.django_db(transaction=True)
def test_two_workers_never_give_out_the_same_gpu(workspace):
    """Worker 1 gives job a the only GPU and holds its transaction open; worker 2, choosing for job b meanwhile,
    waits on the VM's row and then sees a's claim (without the lock it would answer at once, from what was committed
    before a's claim: a still waiting)."""
    compute = vm(workspace, 1)
    first, second = job(compute, "a"), job(compute, "b", age=1)
    chosen, held = {}, threading.Event()

    def worker_one():
        try:
            with transaction.atomic():
                chosen["a"] = allot(Job.objects.get(pk=first.pk))
                held.set()
                time.sleep(1.0)
        finally:
            connection.close()

    thread = threading.Thread(target=worker_one)
    thread.start()
    assert held.wait(10)
    began = time.monotonic()
    chosen["b"] = allot(second)
    waited = time.monotonic() - began
    thread.join()
    assert waited > 0.5 and chosen["a"] == ([0], "")
    assert chosen["b"] == (None, "Waiting for 1 GPU on virtualmachine 'gpubox' (it has 1): GPU 0 is used by job 'a'.")


def test_cuda_visible_devices():
    assert cuda_visible_devices([]) == ""
    assert cuda_visible_devices([1]) == "1"
    assert cuda_visible_devices([0, 2, 3]) == "0,2,3"
    assert cuda_visible_devices([2, 3], in_container=True) == "0,1"  # docker --gpus '"device=2,3"' renumbers them
    assert cuda_visible_devices([], in_container=True) == ""
