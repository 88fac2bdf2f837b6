"""jobs/serverless.py (pure): where a job without `compute` goes — fits now > can scale > queue, smallest shape first,
CPU by default, a named VM size picks clusters of that size and Kubernetes nodes that fit it, never spot clusters."""
import pytest

from compute import vmsizes
from compute.pools import pool_shape
from compute.shapes import DEFAULT_SHAPE, node_summary
from controlplane.kube.resources import Shape
from jobs.serverless import CAN_SCALE, FITS_NOW, QUEUE, Choice, KubernetesOption, PoolOption, pool_choice, rank

SMALL = Shape("small", {}, {"cpu": "500m", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})
GPU1 = Shape("gpu1", {}, {"cpu": "1", "memory": "4Gi"}, {"cpu": "2", "memory": "4Gi"}, 1)
# exactly a 1-cpu/2Gi node's allocatable: the pod's requests plus the upload sidecar's (50m/64Mi) do not fit it
WHOLE = Shape("whole", {}, {"cpu": "1", "memory": "2Gi"}, {"cpu": "1", "memory": "2Gi"})
ALMOST = Shape("almost", {}, {"cpu": "950m", "memory": "1984Mi"}, {"cpu": "1", "memory": "2Gi"})


def node(name="n", cpu="8", memory="32Gi", gpus=0, labels=None, ready=True, taints=None) -> dict:
    return node_summary({
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"taints": taints or []},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "nvidia.com/gpu": str(gpus)},
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    })


def kube(name, shapes, *nodes) -> KubernetesOption:
    return KubernetesOption(name, tuple(shapes), tuple(nodes))


def pool(name, size="Standard_DS3_v2", current=0, target=None, idle=0, max_nodes=4, low_priority=False) -> PoolOption:
    shape = pool_shape(size, "karpenter", f"dy-{name}")
    return PoolOption(name, vmsizes.vm_size(size).name, shape, low_priority, max_nodes, current,
                      current if target is None else target, idle)


@pytest.mark.parametrize("option, count, expected", [
    (pool("c", idle=1, current=1), 1, (FITS_NOW, "fits now: 1 idle of 1 nodes")),
    (pool("c", idle=1, current=3, max_nodes=3), 2, (QUEUE, "queued: 2 of 3 nodes busy or launching")),
    (pool("c"), 1, (CAN_SCALE, "can scale: 0 of 4 nodes")),
    (pool("c", current=2, max_nodes=4), 2, (CAN_SCALE, "can scale: 2 of 4 nodes")),
    (pool("c", current=1, target=3, max_nodes=4), 2, (QUEUE, "queued: 3 of 4 nodes busy or launching")),
    (pool("c", current=1, idle=1, max_nodes=2), 2, (CAN_SCALE, "can scale: 1 of 2 nodes")),
    (pool("c", current=2, max_nodes=2), 1, (QUEUE, "queued: 2 of 2 nodes busy or launching")),
])
def test_how_a_compute_cluster_can_take_a_job(option, count, expected):
    choice = pool_choice(option, count)
    assert (choice.rank, choice.why) == expected


def test_a_compute_cluster_that_can_never_hold_the_nodes_is_no_choice():
    assert pool_choice(pool("c", max_nodes=2), 3) is None


CASES = [
    # (label, kubernetes options, pools, size, named, count, expected compute, instance type, rank)
    ("a fitting kubernetes node beats a cluster that must scale",
     [kube("k8s", [DEFAULT_SHAPE], node())], [pool("aaa-cluster")], None, False, 1, "k8s", "defaultinstancetype", FITS_NOW),
    ("an idle cluster node fits now too; the smaller shape wins",
     [kube("k8s", [SMALL], node())], [pool("aaa-cluster", idle=1, current=1)], None, False, 1, "k8s", "small", FITS_NOW),
    ("an idle cluster node beats a cluster that must scale",
     [], [pool("aaa-scale"), pool("zzz-idle", idle=1, current=1)], None, False, 1, "zzz-idle", "Standard_DS3_v2", FITS_NOW),
    ("nothing fits on kubernetes: a cluster that can scale",
     [kube("k8s", [DEFAULT_SHAPE], node(cpu="1", memory="1Gi"))], [pool("cpu-cluster")], None, False, 1,
     "cpu-cluster", "Standard_DS3_v2", CAN_SCALE),
    ("a cluster that can scale beats one whose nodes are busy",
     [], [pool("aaa-full", current=4), pool("zzz-room", current=3)], None, False, 1, "zzz-room", "Standard_DS3_v2", CAN_SCALE),
    ("busy clusters: the job queues on one",
     [], [pool("full", current=4)], None, False, 1, "full", "Standard_DS3_v2", QUEUE),
    ("no size named: CPU only (a GPU cluster and a GPU instance type are not taken)",
     [kube("k8s", [GPU1], node(gpus=4))], [pool("gpu-cluster", "Standard_NC6s_v3", idle=1, current=1), pool("cpu-cluster")],
     None, False, 1, "cpu-cluster", "Standard_DS3_v2", CAN_SCALE),
    ("a named VM size picks the cluster of that size",
     [], [pool("cpu-cluster", idle=1, current=1), pool("gpu-cluster", "Standard_NC6s_v3")], "Standard_NC6s_v3", True, 1,
     "gpu-cluster", "Standard_NC6s_v3", CAN_SCALE),
    ("a named VM size: kubernetes nodes that fit its shape, now",
     [kube("k8s", [vmsizes.size_shape("Standard_DS3_v2")],
           node(cpu="4", memory="14Gi", labels={"node.kubernetes.io/instance-type": "Standard_DS3_v2"}))],
     [pool("cpu-cluster")], "Standard_DS3_v2", True, 1, "k8s", "Standard_DS3_v2", FITS_NOW),
    ("a named instance type (not a size): kubernetes only",
     [kube("k8s", [GPU1], node(gpus=1))], [pool("gpu-cluster", "Standard_NC6s_v3", idle=1, current=1)], None, True, 1,
     "k8s", "gpu1", FITS_NOW),
    ("spot clusters are never chosen (job_tier is refused)",
     [], [pool("spot", low_priority=True, idle=1, current=1), pool("dedicated", current=4)], None, False, 1,
     "dedicated", "Standard_DS3_v2", QUEUE),
    ("a distributed job: the cluster must be able to hold instance_count nodes",
     [], [pool("two", max_nodes=2), pool("four", max_nodes=4, current=1)], None, False, 3, "four", "Standard_DS3_v2", CAN_SCALE),
    ("the upload sidecar counts: a shape as large as the node does not fit it",
     [kube("k8s", [WHOLE], node(cpu="1", memory="2Gi"))], [pool("cpu-cluster")], None, False, 1,
     "cpu-cluster", "Standard_DS3_v2", CAN_SCALE),
    ("requests plus the sidecar within the node: it fits",
     [kube("k8s", [ALMOST], node(cpu="1", memory="2Gi"))], [pool("cpu-cluster")], None, False, 1, "k8s", "almost", FITS_NOW),
    ("a node not ready, tainted or of other labels does not count",
     [kube("k8s", [Shape("sel", {"pool": "a"}, SMALL.requests, SMALL.limits)], node(ready=False, labels={"pool": "a"}),
           node(taints=[{"key": "x", "effect": "NoSchedule"}], labels={"pool": "a"}), node(labels={"pool": "b"}))],
     [pool("cpu-cluster")], None, False, 1, "cpu-cluster", "Standard_DS3_v2", CAN_SCALE),
]


@pytest.mark.parametrize("kubernetes, pools, size, named, count, compute, instance_type, expected_rank",
                         [pytest.param(*case[1:], id=case[0]) for case in CASES])
def test_the_ranking(kubernetes, pools, size, named, count, compute, instance_type, expected_rank):
    choice = rank(kubernetes, pools, size=size, named=named, instance_count=count)
    assert (choice.compute, choice.instance_type, choice.rank) == (compute, instance_type, expected_rank)


@pytest.mark.parametrize("kubernetes, pools, size, named", [
    ([], [], None, False),
    ([kube("k8s", [DEFAULT_SHAPE], node(cpu="1", memory="1Gi"))], [], None, False),
    ([], [pool("gpu-cluster", "Standard_NC6s_v3")], None, False),  # CPU by default
    ([], [pool("cpu-cluster")], "Standard_NC6s_v3", True),  # another size
    ([], [pool("spot", low_priority=True)], None, False),
    ([], [pool("cpu-cluster")], None, True),  # an instance type name: not a cluster's size
])
def test_nothing_can_take_it(kubernetes, pools, size, named):
    assert rank(kubernetes, pools, size=size, named=named) is None


@pytest.mark.parametrize("choice, message", [
    (Choice("cpu-cluster", "Standard_DS3_v2", CAN_SCALE, "can scale: 0 of 4 nodes", pool=True),
     "Serverless: placed on compute cluster 'cpu-cluster' (can scale: 0 of 4 nodes)."),
    (Choice("k8s", "small", FITS_NOW, "fits a ready node now"),
     "Serverless: placed on compute 'k8s' with instance type 'small' (fits a ready node now)."),
])
def test_the_placement_event(choice, message):
    assert choice.message() == message
