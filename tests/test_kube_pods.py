"""A Job and its pods → status, one-sentence reason and exit code: table tests on objects as kube-apiserver shows them."""
import pytest

from controlplane.kube.pods import observe, unschedulable_reason

T0, T1, T2, T3 = "2026-03-02T10:00:00Z", "2026-03-02T10:00:05Z", "2026-03-02T10:01:40Z", "2026-03-02T10:01:42Z"
INDEX = "batch.kubernetes.io/job-completion-index"
IMAGE = "registry.example.com/team/train:v3"
PULL_ERROR = (f'rpc error: code = NotFound desc = failed to pull and unpack image "{IMAGE}": failed to resolve '
              f'reference "{IMAGE}": {IMAGE}: not found')
SELECTOR_AND_GPU = ("0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node "
                    "affinity/selector. preemption: 0/3 nodes are available: 1 No preemption victims found for incoming "
                    "pod, 2 Preemption is not helpful for scheduling.")


def condition(kind: str, status: str = "True", reason: str | None = None, message: str | None = None) -> dict:
    found = {"type": kind, "status": status, "lastProbeTime": None, "lastTransitionTime": T1}
    return {**found, **({"reason": reason} if reason else {}), **({"message": message} if message else {})}


def job(*conditions: dict, active: int = 1, completions: int = 1) -> dict:
    status = {"startTime": T0, "active": active, "uncountedTerminatedPods": {}, "ready": 0}
    if conditions:
        status["conditions"] = list(conditions)
    spec = {"backoffLimit": 0, "completions": completions, "parallelism": completions,
            "completionMode": "Indexed" if completions > 1 else "NonIndexed"}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train-1a2b3c4d", "namespace": "ml"},
            "spec": spec, "status": status}


def container(state: dict, ready: bool = False) -> dict:
    return {"name": "main", "image": IMAGE, "imageID": "", "ready": ready, "restartCount": 0, "started": "running" in state,
            "state": state, "lastState": {}}


def pod(phase: str, *conditions: dict, state: dict | None = None, rank: int | None = None, deleting: bool = False,
        start: str | None = T0) -> dict:
    name = "train-1a2b3c4d-" + (f"{rank}-" if rank is not None else "") + "x7k2p"
    meta = {"name": name, "namespace": "ml", "labels": {"dockyard.dev/job": "train-1a2b3c4d"}}
    if rank is not None:
        meta["annotations"] = {INDEX: str(rank)}
        meta["labels"][INDEX] = str(rank)
    if deleting:
        meta["deletionTimestamp"] = T3
    status = {"phase": phase, "conditions": list(conditions), "qosClass": "Burstable"}
    if start:
        status["startTime"] = start
    if state is not None:
        status["containerStatuses"] = [container(state, ready="running" in state)]
    return {"metadata": meta, "spec": {"containers": [{"name": "main", "image": IMAGE}]}, "status": status}


def unschedulable(message: str) -> dict:
    return pod("Pending", condition("PodScheduled", "False", "Unschedulable", message), start=None)


def waiting(reason: str, message: str) -> dict:
    return pod("Pending", condition("PodScheduled"), condition("Ready", "False", "ContainersNotReady"),
               state={"waiting": {"reason": reason, "message": message}})


def running(rank: int | None = None) -> dict:
    return pod("Running", condition("PodScheduled"), condition("Ready"), state={"running": {"startedAt": T1}}, rank=rank)


def terminated(code: int, reason: str, rank: int | None = None, finished: str = T2, deleting: bool = False) -> dict:
    state = {"terminated": {"exitCode": code, "reason": reason, "startedAt": T1, "finishedAt": finished}}
    return pod("Succeeded" if code == 0 else "Failed", condition("PodScheduled"), condition("Ready", "False", "PodFailed"),
               state=state, rank=rank, deleting=deleting)


COMPLETE = (condition("SuccessCriteriaMet", reason="CompletionsReached", message="Reached expected number of succeeded pods"),
            condition("Complete", reason="CompletionsReached", message="Reached expected number of succeeded pods"))
BACKOFF = (condition("FailureTarget", reason="BackoffLimitExceeded", message="Job has reached the specified backoff limit"),
           condition("Failed", reason="BackoffLimitExceeded", message="Job has reached the specified backoff limit"))
DEADLINE = (condition("FailureTarget", reason="DeadlineExceeded", message="Job was active longer than specified deadline"),
            condition("Failed", reason="DeadlineExceeded", message="Job was active longer than specified deadline"))


# --- the scheduler's message as a sentence -------------------------------------------------------

@pytest.mark.parametrize("message, selector, reason", [
    (SELECTOR_AND_GPU, {"gpu": "a100"},
     "Waiting for a node: no node matches the nodeSelector gpu=a100; insufficient nvidia.com/gpu."),
    ("0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are "
     "available: 3 Preemption is not helpful for scheduling.", {"pool": "training", "gpu": "a100"},
     "Waiting for a node: no node matches the nodeSelector gpu=a100, pool=training."),
    ("0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 3 No preemption "
     "victims found for incoming pod.", {}, "Waiting for a node: insufficient nvidia.com/gpu."),
    ("0/2 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 2 Insufficient nvidia.com/gpu. preemption: "
     "0/2 nodes are available: 2 No preemption victims found for incoming pod.", {},
     "Waiting for a node: insufficient cpu; insufficient memory; insufficient nvidia.com/gpu."),
    ("0/4 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 3 node(s) had "
     "untolerated taint {nvidia.com/gpu: present}. preemption: 0/4 nodes are available: 4 Preemption is not helpful "
     "for scheduling.", {},
     "Waiting for a node: nodes are tainted (node-role.kubernetes.io/control-plane, nvidia.com/gpu=present) "
     "and instance types carry no tolerations."),
    ("no nodes available to schedule pods", {}, "Waiting for a node: no nodes available to schedule pods"),
    ("0/1 nodes are available: 1 Too many pods. preemption: 0/1 nodes are available: 1 No preemption victims found "
     "for incoming pod.", {}, "Waiting for a node: 0/1 nodes are available: 1 Too many pods. preemption: 0/1 nodes "
                              "are available: 1 No preemption victims found for incoming pod."),
    ("", {}, "Waiting for the scheduler to place the pod."),
])
def test_unschedulable_reason(message, selector, reason):
    assert unschedulable_reason(message, selector) == reason


# --- the job's status ----------------------------------------------------------------------------

CASES = {
    "no pods yet": (job(), [], "Queued", "Waiting for the Job controller to create the pods.", None),
    "unschedulable: selector and gpu": (
        job(), [unschedulable(SELECTOR_AND_GPU)], "Queued",
        "Waiting for a node: no node matches the nodeSelector gpu=a100; insufficient nvidia.com/gpu.", None),
    "container creating": (
        job(), [waiting("ContainerCreating", "")], "Starting", "The pods are scheduled; their containers are starting.",
        None),
    "image cannot be pulled": (
        job(), [waiting("ErrImagePull", PULL_ERROR)], "Queued",
        f"The image {IMAGE} cannot be pulled (ErrImagePull): {PULL_ERROR}", None),
    "image pull backing off": (
        job(), [waiting("ImagePullBackOff", f'Back-off pulling image "{IMAGE}": ErrImagePull: {PULL_ERROR}')], "Queued",
        f'The image {IMAGE} cannot be pulled (ImagePullBackOff): Back-off pulling image "{IMAGE}": ErrImagePull: '
        f"{PULL_ERROR}", None),
    "crash loop": (
        job(), [waiting("CrashLoopBackOff", 'back-off 40s restarting failed container=main pod=train-1a2b3c4d-x7k2p_ml')],
        "Starting", "The container cannot start (CrashLoopBackOff): back-off 40s restarting failed container=main "
                    "pod=train-1a2b3c4d-x7k2p_ml", None),
    "config error": (
        job(), [waiting("CreateContainerConfigError", 'secret "hf-token" not found')], "Starting",
        "The container cannot start (CreateContainerConfigError): secret \"hf-token\" not found", None),
    "running": (job(), [running()], "Running", "", None),
    "one rank running, one still unschedulable": (
        job(completions=2), [running(0), unschedulable(SELECTOR_AND_GPU)], "Running", "", None),
    "complete": (job(*COMPLETE, active=0), [terminated(0, "Completed")], "Completed", "", 0),
    "complete after the pods were removed": (job(*COMPLETE, active=0), [], "Completed", "", 0),
    "success criteria met, pods still terminating": (job(COMPLETE[0], active=0), [terminated(0, "Completed")],
                                                     "Completed", "", 0),
    "failed with an exit code": (
        job(*BACKOFF, active=0), [terminated(3, "Error")], "Failed", "The command exited with code 3.", 3),
    "out of memory": (
        job(*BACKOFF, active=0), [terminated(137, "OOMKilled")], "Failed",
        "The container ran out of memory (OOMKilled, exit code 137).", 137),
    "deadline exceeded": (
        job(*DEADLINE, active=0), [terminated(137, "Error")], "Failed", "The job timed out after 600 s (limits.timeout).",
        None),
    "failed, the failed pod already gone": (
        job(*BACKOFF, active=0), [], "Failed", "Job has reached the specified backoff limit", None),
    # Rank 2 failed first; the Job controller then deleted ranks 0 and 1, which the kubelet killed (143).
    "rank 2 failed, the others were stopped for it": (
        job(BACKOFF[0], active=0, completions=3),
        [terminated(143, "Error", 0, T3, deleting=True), terminated(143, "Error", 1, T3, deleting=True),
         terminated(3, "Error", 2, T2)],
        "Failed", "The command exited with code 3 on rank 2.", 3),
    "rank 2 failed, the stopped ranks already removed": (
        job(*BACKOFF, active=0, completions=3), [terminated(3, "Error", 2, T2)],
        "Failed", "The command exited with code 3 on rank 2.", 3),
    "two ranks failed: the first to fail is the cause": (
        job(*BACKOFF, active=0, completions=3),
        [terminated(1, "Error", 0, T3), terminated(2, "Error", 1, T2), terminated(0, "Completed", 2, T2)],
        "Failed", "The command exited with code 2 on rank 1.", 2),
    "deleted outside dockyard": (None, [], "Failed", "The Kubernetes Job was deleted outside Dockyard.", None),
}


@pytest.mark.parametrize("live, pods, status, reason, exit_code", CASES.values(), ids=CASES.keys())
def test_observe(live, pods, status, reason, exit_code):
    observed = observe(live, pods, {"gpu": "a100"}, 600)
    assert (observed.status, observed.reason, observed.exit_code) == (status, reason, exit_code)


def test_the_start_time_is_the_first_pods():
    pods = [running(0), {**running(1), "status": {**running(1)["status"], "startTime": "2026-03-02T09:59:58Z"}}]
    assert observe(job(completions=2), pods, {}, None).started_at == "2026-03-02T09:59:58Z"
    assert observe(job(), [unschedulable(SELECTOR_AND_GPU)], {}, None).started_at is None
