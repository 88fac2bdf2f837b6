"""endpoints/spec/placement.py: where a managed deployment goes, ranked over synthetic computes (pure tables)."""
import pytest

from compute import pools
from endpoints.spec.placement import (
    AT_LIMIT,
    CAN_SCALE,
    FITS_NODES,
    FITS_NOW,
    Candidate,
    NoPlacement,
    instance_shape,
    place,
)

DS3 = "Standard_DS3_v2"
KIB_PER_GIB = 1024 * 1024 * 1024


def cluster(name: str, size: str = DS3, *, host: str = "k8s", idle: int = 0, current: int = 0, most: int = 4,
            pool: bool = True, state: str = "Succeeded") -> Candidate:
    status = {"engine": "karpenter", "pool": f"dy-ws-{name}", "idle_node_count": idle, "current_node_count": current,
              "max_node_count": most} if pool else {}
    return Candidate(name, "amlcompute", host, state, size, most, status)


def node(name: str, size: str = DS3, *, cpu: int = 4, memory_gib: int = 16, taints: tuple = (), ready: bool = True) -> dict:
    return {"name": name, "labels": {"node.kubernetes.io/instance-type": size}, "taints": list(taints), "ready": ready,
            "allocatable": {"cpu": str(cpu), "memory": f"{memory_gib}Gi", "nvidia.com/gpu": 0},
            "capacity_units": {"millicores": cpu * 1000, "memory_bytes": memory_gib * KIB_PER_GIB}}


def kube(name: str, *nodes: dict, state: str = "Succeeded", selector: dict | None = None) -> Candidate:
    return Candidate(name, "kubernetes", name, state, nodes=tuple(nodes), node_selector=selector or {})


@pytest.mark.parametrize("count, candidates, chosen, capacity", [
    pytest.param(1, [cluster("a")], "a", CAN_SCALE, id="one-cluster-scales-from-zero"),
    pytest.param(1, [cluster("a"), cluster("b", idle=1, current=1)], "b", FITS_NOW, id="fits-now-over-can-scale"),
    pytest.param(2, [cluster("a", idle=2, current=2, most=2), cluster("b", idle=1, current=1)], "a", FITS_NOW,
                 id="two-idle-nodes-fit-two-instances"),
    pytest.param(3, [cluster("a", idle=3, current=3, most=3), cluster("b", most=2)], "a", FITS_NOW,
                 id="max-instances-that-holds-the-count-first"),
    pytest.param(3, [cluster("a", idle=2, current=2, most=2), cluster("b", most=3)], "b", CAN_SCALE,
                 id="one-that-holds-the-count-beats-one-that-fits-part-now"),
    pytest.param(1, [cluster("a", current=4, most=4), cluster("b", current=1, most=2)], "b", CAN_SCALE,
                 id="at-limit-last"),
    pytest.param(1, [cluster("a", current=4, most=4)], "a", AT_LIMIT, id="at-limit-still-chosen-alone"),
    pytest.param(1, [cluster("b"), cluster("a")], "a", CAN_SCALE, id="ties-by-name"),
    pytest.param(1, [cluster("a", "Standard_F4s_v2", idle=1, current=1), cluster("b")], "b", CAN_SCALE,
                 id="other-size-never"),
    pytest.param(1, [cluster("a", "standard_ds3_V2")], "a", CAN_SCALE, id="size-in-any-case"),
    pytest.param(1, [cluster("a", pool=False, idle=1), cluster("b")], "b", CAN_SCALE, id="no-pool-yet-not-ready"),
    pytest.param(1, [cluster("a", state="Failed", idle=1, current=1), cluster("b")], "b", CAN_SCALE, id="failed-not-ready"),
    pytest.param(1, [cluster("a", host="", idle=1, current=1), cluster("b")], "b", CAN_SCALE, id="no-host-not-ready"),
    pytest.param(1, [kube("k8s", node("n1")), cluster("a", current=4, most=4)], "a", AT_LIMIT,
                 id="a-ready-cluster-before-any-kubernetes-compute"),
    pytest.param(1, [kube("k8s", node("n1"))], "k8s", FITS_NODES, id="kubernetes-when-no-cluster"),
    pytest.param(2, [kube("k1", node("n1")), kube("k2", node("n2"), node("n3"))], "k2", FITS_NODES,
                 id="kubernetes-with-enough-nodes-first"),
    pytest.param(1, [kube("k1", node("n1", "Standard_F4s_v2")), kube("k2", node("n2"))], "k2", FITS_NODES,
                 id="kubernetes-nodes-of-the-size-only"),
    pytest.param(1, [kube("k1", node("n1", taints=({"key": "x", "effect": "NoSchedule"},))), kube("k2", node("n2"))], "k2",
                 FITS_NODES, id="tainted-nodes-do-not-fit"),
    pytest.param(1, [kube("k1", node("n1"), selector={"pool": "ml"}), kube("k2", node("n2"))], "k2", FITS_NODES,
                 id="the-attachment-selector-applies"),
])
def test_ranking(count, candidates, chosen, capacity):
    placement = place(DS3, count, candidates, "ws")
    assert (placement.compute, placement.capacity) == (chosen, capacity)
    assert placement.instance_type == DS3


def test_a_fixed_endpoint_places_only_on_its_attachment():
    candidates = [cluster("a", host="k1", idle=1, current=1), cluster("b", host="k2"), kube("k1"), kube("k2")]
    assert place(DS3, 1, candidates, "ws").compute == "a"
    placement = place(DS3, 1, candidates, "ws", host="k2")
    assert (placement.compute, placement.kubernetes_compute) == ("b", "k2")


@pytest.mark.parametrize("candidates, host, words", [
    pytest.param([], "", ["No compute cluster of size Standard_DS3_v2 in workspace 'ws'", "it has no compute cluster",
                          "`type: amlcompute, size: Standard_DS3_v2`"], id="nothing"),
    pytest.param([cluster("cpu", "Standard_F4s_v2"), kube("k8s", node("n1", "Standard_F4s_v2"))], "",
                 ["compute clusters: 'cpu' (Standard_F4s_v2, on 'k8s')", "no node of Kubernetes compute 'k8s' fits"],
                 id="other-sizes-named"),
    pytest.param([cluster("a", pool=False)], "", ["'a' (Standard_DS3_v2, not ready: no pool yet)"], id="not-ready-named"),
    pytest.param([cluster("a", state="Failed")], "", ["'a' (Standard_DS3_v2, not ready: failed)"], id="failed-named"),
    pytest.param([cluster("a", host="")], "", ["'a' (Standard_DS3_v2, no kubernetes_compute)"], id="hostless-named"),
    pytest.param([cluster("a", host="k2", idle=1, current=1)], "k1",
                 ["on Kubernetes compute 'k1' (where the endpoint runs)", "kubernetes_compute: k1`"], id="other-attachment"),
])
def test_nothing_fits_names_the_size_and_what_exists(candidates, host, words):
    with pytest.raises(NoPlacement) as exc:
        place(DS3, 1, candidates, "ws", host)
    for word in words:
        assert word in str(exc.value)


@pytest.mark.parametrize("candidate, count, words", [
    pytest.param(cluster("a", idle=2, current=2), 1, "2 idle node(s) take the 1 instance now", id="fits-now"),
    pytest.param(cluster("a", current=1, most=4), 2, "it can scale from 1 to 3 of at most 4 node(s) for the 2 instances",
                 id="can-scale"),
    pytest.param(cluster("a", current=2, most=2), 3, "max_instances 2 < 3: raise it", id="too-small"),
])
def test_the_reason_says_why(candidate, count, words):
    placement = place(DS3, count, [candidate], "ws")
    assert words in placement.reason
    assert placement.reason.startswith("Managed: placed on compute cluster 'a' (Standard_DS3_v2, karpenter pool dy-ws-a)")


def test_an_instance_on_a_pool_takes_its_node_and_tolerates_its_taint():
    placement = place(DS3, 1, [cluster("a")], "ws").as_dict()
    shape = instance_shape(placement)
    assert shape.selector == {"node.kubernetes.io/instance-type": DS3, pools.KARPENTER_POOL_LABEL: "dy-ws-a"}
    assert shape.tolerations == (pools.pool_toleration("dy-ws-a"),)
    assert shape.pod_annotations == pools.DO_NOT_DISRUPT


def test_an_instance_on_a_kubernetes_compute_selects_nodes_of_the_size_under_its_selector():
    placement = place(DS3, 1, [kube("k8s", node("n1"))], "ws").as_dict()
    assert "pool" not in placement
    shape = instance_shape(placement, {"team": "ml"})
    assert shape.selector == {"node.kubernetes.io/instance-type": DS3, "team": "ml"}
    assert shape.tolerations == () and shape.pod_annotations == {}
