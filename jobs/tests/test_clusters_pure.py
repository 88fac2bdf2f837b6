"""jobs/clusters.py (pure): what a job may ask of a compute cluster, and why it waits there, in words."""
import pytest

from jobs.clusters import not_ready_reason, pool_wait_reason, request_problems, scheduler_message

SIZE = "Standard_NC6s_v3"
DECLARED = {"engine": "karpenter", "pool": "dy-team-a-gpu-cluster-1a2b3c"}


@pytest.mark.parametrize("instance_type, count, expected", [
    (None, 1, []),
    ("Standard_NC6s_v3", 2, []),
    ("STANDARD_NC6S_V3", 1, []),  # any case, as Azure ML's files write sizes
    (" standard_nc6s_v3 ", 1, []),
    ("Standard_DS3_v2", 1, [("resources.instance_type",
                             "Compute cluster 'gpu-cluster' runs Standard_NC6s_v3 nodes only (Azure ML's clusters run "
                             "their own size): leave instance_type out or give Standard_NC6s_v3, not 'Standard_DS3_v2'.")]),
    ("gpu-small", 1, [("resources.instance_type",
                       "Compute cluster 'gpu-cluster' runs Standard_NC6s_v3 nodes only (Azure ML's clusters run their "
                       "own size): leave instance_type out or give Standard_NC6s_v3, not 'gpu-small'.")]),
    (None, 3, [("resources.instance_count",
                "Compute cluster 'gpu-cluster' can never have 3 nodes (max_instances is 2); each instance of a job "
                "takes one node: ask for at most 2.")]),
])
def test_what_a_job_may_ask_of_a_compute_cluster(instance_type, count, expected):
    assert request_problems("gpu-cluster", SIZE, instance_type, count, 2) == expected


def test_both_problems_are_said_at_once():
    assert [path for path, _ in request_problems("c", SIZE, "Standard_F4s_v2", 5, 4)] == [
        "resources.instance_type", "resources.instance_count"]


@pytest.mark.parametrize("state, errors, status, expected", [
    ("Succeeded", [], DECLARED, ""),
    ("Updating", [], {**DECLARED, "current_node_count": 1}, ""),
    ("Creating", [], {}, "Waiting for compute cluster 'gpu-cluster' to be ready (its node pool is not declared yet); "
                         "the job is submitted once it is."),
    ("Succeeded", [], {"engine": "karpenter"}, "Waiting for compute cluster 'gpu-cluster' to be ready (its node pool "
                                               "is not declared yet); the job is submitted once it is."),
    ("Failed", [{"code": "NoAutoscaler", "message": "The cluster has neither Karpenter nor Cluster API."}], {},
     "Waiting for compute cluster 'gpu-cluster', which is Failed: The cluster has neither Karpenter nor Cluster API. "
     "The job is submitted once the cluster is ready."),
    ("Failed", [], DECLARED, "Waiting for compute cluster 'gpu-cluster', which is Failed. The job is submitted once "
                             "the cluster is ready."),
])
def test_when_a_compute_cluster_cannot_take_a_job_yet(state, errors, status, expected):
    assert not_ready_reason("gpu-cluster", state, errors, status) == expected


WHERE = "Waiting for a node: compute cluster 'gpu-cluster'"


@pytest.mark.parametrize("status, expected", [
    ({**DECLARED, "current_node_count": 0, "target_node_count": 1, "max_node_count": 2, "scaling": "scaling_up"},
     f"{WHERE} is adding a node (1 of at most 2 launching)."),
    ({**DECLARED, "current_node_count": 0, "target_node_count": 2, "max_node_count": 2, "scaling": "scaling_up"},
     f"{WHERE} is adding 2 nodes (2 of at most 2 launching)."),
    ({**DECLARED, "current_node_count": 2, "target_node_count": 2, "max_node_count": 2, "scaling": "at_limit"},
     f"{WHERE} is at max_instances (2 nodes), all busy; the job starts when one frees up."),
    ({**DECLARED, "current_node_count": 2, "target_node_count": 2, "scaling": "steady"},  # the record's max, 2
     f"{WHERE} is at max_instances (2 nodes), all busy; the job starts when one frees up."),
    ({**DECLARED, "current_node_count": 0, "target_node_count": 0, "max_node_count": 2, "scaling": "steady"},
     f"{WHERE} is about to add a node (0 of at most 2 nodes now)."),
    ({**DECLARED, "current_node_count": 0, "target_node_count": 0, "max_node_count": 2, "scaling": "steady",
      "autoscaler_errors": ["Launching a Standard_NC6s_v3 node failed: InsufficientCapacity in the zone."]},
     f"{WHERE} cannot add a node: Launching a Standard_NC6s_v3 node failed: InsufficientCapacity in the zone."),
    ({**DECLARED, "current_node_count": 1, "target_node_count": 2, "max_node_count": 2,
      "autoscaler_errors": ["First.", " ", "Second."]},  # the autoscaler's refusal says more than a launch in flight
     f"{WHERE} cannot add a node: First. Second."),
    ({}, f"{WHERE} is about to add a node (0 of at most 2 nodes now)."),
])
def test_why_a_job_waits_on_a_compute_cluster(status, expected):
    assert pool_wait_reason("gpu-cluster", status, 2) == expected


def pod(*conditions) -> dict:
    return {"metadata": {"name": "p"}, "status": {"conditions": list(conditions)}}


UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "message": "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."}


@pytest.mark.parametrize("pods, expected", [
    ([], ""),
    ([pod()], ""),
    ([pod({"type": "PodScheduled", "status": "True"})], ""),
    ([pod({"type": "PodScheduled", "status": "True"}), pod(UNSCHEDULABLE)], UNSCHEDULABLE["message"]),
    ([pod({**UNSCHEDULABLE, "message": ""})], "Unschedulable"),
    ([{"metadata": {"name": "p"}}], ""),
])
def test_the_schedulers_own_words(pods, expected):
    assert scheduler_message(pods) == expected
