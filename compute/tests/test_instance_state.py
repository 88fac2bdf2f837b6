"""A compute instance's run state from what was asked and what the cluster shows, the idle stop's sentence, and what
counts as drift (table tests; no cluster, no database)."""
from datetime import UTC, datetime

import pytest

from compute.choices import InstanceState
from compute.reconcile.instances import drifted, idle_sentence, instance_state

STS_UP, STS_DOWN = {"spec": {"replicas": 1}}, {"spec": {"replicas": 0}}
SELECTOR = {"node.kubernetes.io/instance-type": "Standard_NC6s_v3"}


def pod(ready=False, conditions=(), waiting=None, deleting=False) -> dict:
    status = {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}, *conditions]}
    if waiting:
        status["containerStatuses"] = [{"name": "jupyter", "image": "quay.io/jupyter/scipy-notebook:x",
                                        "state": {"waiting": waiting}}]
    metadata = {"name": "ci-notebook-0", **({"deletionTimestamp": "2026-01-01T00:00:00Z"} if deleting else {})}
    return {"metadata": metadata, "status": status}


UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "message": "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."}
UNKNOWN = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes are available: 3 Too many pods."}

STATES = [
    # (running, statefulset, pod, ever ready) -> (state, reason)
    (True, STS_UP, None, False, InstanceState.CREATING, "Waiting for its pod to be created."),
    (True, STS_UP, None, True, InstanceState.STARTING, "Waiting for its pod to be created."),
    (True, STS_UP, pod(), False, InstanceState.CREATING, "Its pod is scheduled; JupyterLab and VS Code are starting."),
    (True, STS_UP, pod(), True, InstanceState.STARTING, "Its pod is scheduled; JupyterLab and VS Code are starting."),
    (True, STS_UP, pod(deleting=True), True, InstanceState.STARTING, "Waiting for its pod to be created."),
    (True, STS_UP, pod(ready=True), True, InstanceState.RUNNING, ""),
    (True, STS_UP, pod(conditions=[UNSCHEDULABLE]), False, InstanceState.FAILED,
     "No node can run it: no node matches the nodeSelector node.kubernetes.io/instance-type=Standard_NC6s_v3."),
    (True, STS_UP, pod(conditions=[UNKNOWN]), False, InstanceState.FAILED,
     "No node can run it: 0/3 nodes are available: 3 Too many pods."),
    (True, STS_UP, pod(waiting={"reason": "ImagePullBackOff", "message": "Back-off pulling image"}), False,
     InstanceState.FAILED, "The image quay.io/jupyter/scipy-notebook:x cannot be pulled (ImagePullBackOff): Back-off pulling image"),
    (True, STS_UP, pod(waiting={"reason": "CrashLoopBackOff", "message": "back-off 10s restarting failed container"}), True,
     InstanceState.FAILED, "The container cannot start (CrashLoopBackOff): back-off 10s restarting failed container"),
    (False, STS_DOWN, pod(ready=True), True, InstanceState.STOPPING, ""),
    (False, STS_UP, None, True, InstanceState.STOPPING, ""),  # the scale-down is not applied yet
    (False, STS_DOWN, None, True, InstanceState.STOPPED, ""),
    (False, None, None, False, InstanceState.STOPPED, ""),
]


@pytest.mark.parametrize("running, statefulset, live_pod, ever_ready, state, reason", STATES)
def test_the_state_from_the_statefulset_and_its_pod(running, statefulset, live_pod, ever_ready, state, reason):
    assert instance_state(running=running, statefulset=statefulset, pod=live_pod, ever_ready=ever_ready,
                          node_selector=SELECTOR) == (state, reason)


@pytest.mark.parametrize("minutes, last, source, sentence", [
    (30, datetime(2026, 3, 1, 14, 2, 40, tzinfo=UTC), "kernel idle", "Stopped: idle for 30 min; last activity 14:02 UTC, kernel idle."),
    (60, datetime(2026, 3, 1, 9, 5, tzinfo=UTC), "", "Stopped: idle for 60 min; last activity 09:05 UTC."),
    (15, None, "", "Stopped: idle for 15 min; no activity seen since it started."),
])
def test_the_idle_stop_says_how_long_and_the_last_activity(minutes, last, source, sentence):
    assert idle_sentence(minutes, last, source) == sentence


WANTED = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "ci-a", "labels": {"k": "v"}},
          "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "jupyter", "image": "i"}]}}}}


def live(**spec) -> dict:
    containers = [{"name": "jupyter", "image": "i", "imagePullPolicy": "IfNotPresent"}]  # a server default
    return {"metadata": {"name": "ci-a", "labels": {"k": "v", "other": "x"}},
            "spec": {"replicas": 1, "revisionHistoryLimit": 10, "template": {"spec": {"containers": containers}}, **spec}}


@pytest.mark.parametrize("live_object, expected", [
    (None, True),
    (live(), False),  # fields the server adds, inside list items too, are not drift
    (live(replicas=0), True),
    (live(template={"spec": {"containers": [{"name": "jupyter", "image": "other"}]}}), True),
    (live(template={"spec": {"containers": []}}), True),
    ({**live(), "metadata": {"name": "ci-a", "labels": {}}}, True),
    ({**live(), "metadata": {"name": "ci-a", "labels": {"k": "v"}, "deletionTimestamp": "2026-01-01T00:00:00Z"}}, True),
])
def test_drift_is_a_change_to_what_dockyard_applied(live_object, expected):
    assert drifted(WANTED, live_object) is expected


def test_a_local_compute_instance_has_no_attachment_to_act_for_it():
    from compute.choices import ComputeType
    from compute.connections import host_attachment, on_cluster
    from compute.models import ComputeTarget

    local = ComputeTarget(type=ComputeType.COMPUTEINSTANCE, name="here", properties={"kubernetes_compute": "local"})
    assert host_attachment(local) is None and not on_cluster(local)
    assert on_cluster(ComputeTarget(type=ComputeType.COMPUTEINSTANCE, name="nb", properties={"kubernetes_compute": "k8s"}))
    assert not on_cluster(ComputeTarget(type=ComputeType.AMLCOMPUTE, name="c", properties={"kubernetes_compute": "k8s"}))
