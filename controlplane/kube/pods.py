"""A batch/v1 Job and its pods → the job's status, a one-sentence reason, and exit code (pure)."""
import re
from dataclasses import dataclass

IMAGE_PULL = {"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"}
CONTAINER_FAILING = {"CrashLoopBackOff", "CreateContainerConfigError", "CreateContainerError", "RunContainerError"}
SELECTOR_MISS = re.compile(r"didn't match Pod's node affinity/selector|node\(s\) didn't match node selector")
INSUFFICIENT = re.compile(r"Insufficient ([\w./-]*\w)")  # not the '.' that ends the scheduler's list
TAINT = re.compile(r"had untolerated taint \{([^}]*)\}|had taint \{([^}]*)\}")


@dataclass(frozen=True)
class Observed:
    """What the cluster says about one job."""

    status: str
    reason: str = ""
    exit_code: int | None = None
    started_at: str | None = None


def _condition(obj: dict, kind: str) -> dict | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind and c.get("status") == "True"), None)


def _terminated(pod: dict) -> dict | None:
    for container in (pod.get("status") or {}).get("containerStatuses") or []:
        state = container.get("state") or {}
        if "terminated" in state:
            return state["terminated"]
    return None


def _failed_pod(pods: list[dict]) -> dict | None:
    """The pod whose failure failed the job: the first to fail, not the ranks the Job controller stopped because of it."""
    failed = [pod for pod in pods if (pod.get("status") or {}).get("phase") == "Failed"]
    return min(failed, key=_failure_order) if failed else None


def _failure_order(pod: dict) -> tuple:
    finished = (_terminated(pod) or {}).get("finishedAt") or "~"  # RFC 3339 stamps sort as text; none sorts last
    return bool(pod["metadata"].get("deletionTimestamp")), finished, rank_of(pod)


def rank_of(pod: dict) -> int:
    annotations = pod["metadata"].get("annotations") or {}
    index = annotations.get("batch.kubernetes.io/job-completion-index")
    return int(index) if index and index.isascii() and index.isdigit() else 0


def unschedulable_parts(message: str, node_selector: dict[str, str]) -> list[str]:
    """What the scheduler's '0/3 nodes are available: ...' says, as clauses a person can act on (none: unrecognised)."""
    parts = []
    if SELECTOR_MISS.search(message):
        wanted = ", ".join(f"{key}={value}" for key, value in sorted(node_selector.items()))
        parts.append(f"no node matches the nodeSelector {wanted}" if wanted else "no node matches the pod's node selector")
    parts += [f"insufficient {resource}" for resource in dict.fromkeys(INSUFFICIENT.findall(message))]
    taints = [_taint(a or b) for a, b in TAINT.findall(message)]
    if taints:
        parts.append("nodes are tainted (" + ", ".join(dict.fromkeys(taints)) + ") and instance types carry no tolerations")
    return parts


def unschedulable_reason(message: str, node_selector: dict[str, str]) -> str:
    """The scheduler's '0/3 nodes are available: ...' as one sentence a person can act on."""
    parts = unschedulable_parts(message, node_selector)
    if not parts:
        return f"Waiting for a node: {message}" if message else "Waiting for the scheduler to place the pod."
    return "Waiting for a node: " + "; ".join(parts) + "."


def _taint(text: str) -> str:
    """The scheduler's '{key: value}' as key=value (or key when the taint has no value)."""
    key, _, value = text.partition(":")
    return f"{key.strip()}={value.strip()}" if value.strip() else key.strip()


def unschedulable_message(pod: dict) -> str | None:
    """The scheduler's message when it could not place the pod (PodScheduled=False), else None."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return condition.get("message", "")
    return None


def container_problem(pod: dict) -> tuple[str, str] | None:
    """(status, reason) when a container's image cannot be pulled (Queued) or it cannot start or keeps crashing
    (Starting), else None."""
    for container in (pod.get("status") or {}).get("containerStatuses") or []:
        waiting = (container.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") in IMAGE_PULL:
            image = container.get("image", "")
            detail = waiting.get("message") or waiting["reason"]
            return "Queued", f"The image {image} cannot be pulled ({waiting['reason']}): {detail}"
        if waiting.get("reason") in CONTAINER_FAILING:
            return "Starting", f"The container cannot start ({waiting['reason']}): {waiting.get('message', '')}".rstrip(": ")
    return None


def pending_reason(pods: list[dict], node_selector: dict[str, str]) -> tuple[str, str]:
    """(status, reason) while no pod runs: Queued with the scheduler's or the image pull's words, or Starting."""
    for pod in pods:
        message = unschedulable_message(pod)
        if message is not None:
            return "Queued", unschedulable_reason(message, node_selector)
        problem = container_problem(pod)
        if problem:
            return problem
    if not pods:
        return "Queued", "Waiting for the Job controller to create the pods."
    return "Starting", "The pods are scheduled; their containers are starting."


def observe(job: dict | None, pods: list[dict], node_selector: dict[str, str], timeout: int | None) -> Observed:
    """The job's status from its Job object and pods (None: the Job is gone)."""
    if job is None:
        return Observed("Failed", "The Kubernetes Job was deleted outside Dockyard.")
    running = [pod for pod in pods if (pod.get("status") or {}).get("phase") == "Running"]
    started = sorted(pod["status"].get("startTime") for pod in pods if (pod.get("status") or {}).get("startTime"))
    started_at = started[0] if started else None
    if _condition(job, "Complete") or _condition(job, "SuccessCriteriaMet"):
        return Observed("Completed", "", 0, started_at)
    failed = _condition(job, "Failed") or _condition(job, "FailureTarget")
    if failed:
        ranked = ((job.get("spec") or {}).get("completions") or 1) > 1  # an Indexed Job of several pods: name the rank
        return _failure(failed, pods, timeout, started_at, ranked)
    if running:
        return Observed("Running", "", None, started_at)
    status, reason = pending_reason(pods, node_selector)
    return Observed(status, reason, None, started_at)


def _failure(condition: dict, pods: list[dict], timeout: int | None, started_at: str | None, ranked: bool) -> Observed:
    if condition.get("reason") == "DeadlineExceeded":
        return Observed("Failed", f"The job timed out after {timeout} s (limits.timeout).", None, started_at)
    pod = _failed_pod(pods)
    terminated = _terminated(pod) if pod else None
    if terminated is None:
        return Observed("Failed", condition.get("message") or "The Kubernetes Job failed.", None, started_at)
    code = terminated.get("exitCode")
    words = f"The command exited with code {code}"
    if terminated.get("reason") == "OOMKilled":
        words = f"The container ran out of memory (OOMKilled, exit code {code})"
    rank = f" on rank {rank_of(pod)}" if ranked else ""
    return Observed("Failed", f"{words}{rank}.", code, started_at)
