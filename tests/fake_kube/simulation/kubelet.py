"""The kubelet of every node: pods go Pending -> Running -> Succeeded/Failed on a timeline or on command."""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ..clock import stamp
from ..store import clone


@dataclass
class PodPlan:
    """How a pod behaves once bound: seconds to start, seconds to run (None: until told), exit code, logs."""

    start_seconds: float | None = None  # None: the server default
    run_seconds: float | None = None
    exit_code: int = 0
    reason: str | None = None
    message: str | None = None
    ready: bool = True
    logs: str | dict | None = None  # text for the first container, or {container: text}


@dataclass
class PlanRule:
    """Pods a plan applies to: matching labels, namespace, name prefix."""

    plan: PodPlan
    labels: dict = field(default_factory=dict)
    namespace: str | None = None
    name_prefix: str | None = None

    def matches(self, pod: dict) -> bool:
        """Whether the pod falls under this rule."""
        meta = pod["metadata"]
        labels = meta.get("labels") or {}
        return (all(labels.get(k) == v for k, v in self.labels.items())
                and (self.namespace is None or meta.get("namespace") == self.namespace)
                and (self.name_prefix is None or meta["name"].startswith(self.name_prefix)))


@dataclass
class PodRun:
    """What the kubelet tracks for one bound pod."""

    plan: PodPlan
    start_at: datetime | None
    finish_at: datetime | None = None
    started: bool = False


class Logs:
    """Container logs: (time, line) per (namespace, pod, container); followers wait on a condition."""

    def __init__(self):
        self.lines: dict[tuple, list[tuple[datetime, str]]] = {}
        self.changed = threading.Condition()

    def append(self, key: tuple, text: str, when: datetime) -> None:
        """Add lines to a container's log."""
        with self.changed:
            self.lines.setdefault(key, []).extend((when, line) for line in text.splitlines())
            self.changed.notify_all()

    def set(self, key: tuple, text: str, when: datetime) -> None:
        """Replace a container's log."""
        with self.changed:
            self.lines[key] = [(when, line) for line in text.splitlines()]
            self.changed.notify_all()

    def get(self, key: tuple) -> list[tuple[datetime, str]]:
        """A copy of a container's log."""
        with self.changed:
            return list(self.lines.get(key, []))


class Kubelet:
    """Pod timelines (keyed by uid) and the state transitions they cause."""

    def __init__(self, sim, start_seconds: float, job_pod_seconds: float | None):
        self.sim, self.start_seconds, self.job_pod_seconds = sim, start_seconds, job_pod_seconds
        self.rules: list[PlanRule] = []
        self.runs: dict[str, PodRun] = {}
        self.logs = Logs()

    def plan_for(self, pod: dict) -> PodPlan:
        """The last matching rule's plan, else the default (Job pods finish after job_pod_seconds)."""
        for rule in reversed(self.rules):
            if rule.matches(pod):
                return rule.plan
        is_job = any(r.get("kind") == "Job" for r in pod["metadata"].get("ownerReferences") or [])
        return PodPlan(run_seconds=self.job_pod_seconds if is_job else None)

    def bound(self, pod: dict) -> None:
        """The scheduler placed a pod: start its timeline."""
        plan = self.plan_for(pod)
        delay = self.start_seconds if plan.start_seconds is None else plan.start_seconds
        self.runs[pod["metadata"]["uid"]] = PodRun(plan, self.sim.now() + timedelta(seconds=delay))
        new = clone(pod)
        status = new.setdefault("status", {})
        status["hostIP"] = _node_ip(self.sim, pod["spec"]["nodeName"])
        status["startTime"] = stamp(self.sim.now())
        status["containerStatuses"] = [_container(c, {"waiting": {"reason": "ContainerCreating"}}, False)
                                       for c in pod["spec"]["containers"]]
        self.sim.write(self.sim.rt("pods"), new, pod)

    def next_due(self) -> datetime | None:
        """The next start or finish moment."""
        moments = [m for run in self.runs.values() for m in (None if run.started else run.start_at, run.finish_at)
                   if m is not None]
        return min(moments) if moments else None

    def start(self, pod: dict) -> None:
        """Containers start: Running (and Ready unless the plan says otherwise)."""
        run = self.runs[pod["metadata"]["uid"]]
        run.started = True
        now = self.sim.now()
        if run.plan.run_seconds is not None:
            run.finish_at = now + timedelta(seconds=run.plan.run_seconds)
        self._write_logs(pod, run.plan)
        self.sim.events.record(pod, "Started", f"Started container {pod['spec']['containers'][0]['name']}",
                               component="kubelet")
        self._running(pod, run.plan.ready, restarts=0)

    def _running(self, pod: dict, ready: bool, restarts: int) -> None:
        new = clone(pod)
        status = new["status"]
        now = stamp(self.sim.now())
        status["phase"] = "Running"
        status["podIP"] = status.get("podIP") or _pod_ip(pod)
        status["podIPs"] = [{"ip": status["podIP"]}]
        flag = "True" if ready else "False"
        status["conditions"] = _conditions(status.get("conditions") or [], {
            "PodReadyToStartContainers": "True", "Initialized": "True", "ContainersReady": flag, "Ready": flag}, now)
        status["containerStatuses"] = [
            _container(c, {"running": {"startedAt": now}}, ready, restarts) for c in pod["spec"]["containers"]]
        self.sim.write(self.sim.rt("pods"), new, pod)

    def finish(self, pod: dict, exit_code: int, reason: str | None = None, message: str | None = None) -> None:
        """Containers exit: Succeeded/Failed, or a restart for restartPolicy Always/OnFailure."""
        run = self.runs.get(pod["metadata"]["uid"])
        policy = pod["spec"].get("restartPolicy", "Always")
        restarts = max((cs.get("restartCount", 0) for cs in pod["status"].get("containerStatuses") or []), default=0)
        if policy == "Always" or (policy == "OnFailure" and exit_code != 0):
            if run:
                run.finish_at = (self.sim.now() + timedelta(seconds=run.plan.run_seconds)
                                 if run.plan.run_seconds is not None else None)
            self._running(pod, run.plan.ready if run else True, restarts + 1)
            return
        self.runs.pop(pod["metadata"]["uid"], None)
        new = clone(pod)
        status, now = new["status"], stamp(self.sim.now())
        status["phase"] = "Succeeded" if exit_code == 0 else "Failed"
        terminated = {"exitCode": exit_code, "reason": reason or ("Completed" if exit_code == 0 else "Error"),
                      "startedAt": status.get("startTime"), "finishedAt": now}
        if message:
            terminated["message"] = message
        status["conditions"] = _conditions(status.get("conditions") or [], {
            "ContainersReady": "False", "Ready": "False", "PodReadyToStartContainers": "False"}, now,
            reason="PodCompleted" if exit_code == 0 else "PodFailed")
        status["containerStatuses"] = [_container(c, {"terminated": terminated}, False, restarts)
                                       for c in pod["spec"]["containers"]]
        self.sim.write(self.sim.rt("pods"), new, pod)

    def _write_logs(self, pod: dict, plan: PodPlan) -> None:
        if plan.logs is None:
            return
        texts = plan.logs if isinstance(plan.logs, dict) else {pod["spec"]["containers"][0]["name"]: plan.logs}
        for container, text in texts.items():
            self.logs.append((pod["metadata"]["namespace"], pod["metadata"]["name"], container), text, self.sim.now())

    def forget_missing(self, live_uids: set[str]) -> None:
        """Drop timelines of pods that no longer exist."""
        for uid in [u for u in self.runs if u not in live_uids]:
            del self.runs[uid]


def _container(spec: dict, state: dict, ready: bool, restarts: int = 0) -> dict:
    return {"name": spec["name"], "image": spec.get("image", ""), "imageID": "", "ready": ready,
            "restartCount": restarts, "started": "running" in state, "state": state,
            "containerID": f"containerd://{spec['name']}" if "waiting" not in state else None}


def _conditions(existing: list, wanted: dict, now: str, reason: str | None = None) -> list:
    by_type = {c["type"]: c for c in existing}
    for kind, status in wanted.items():
        old = by_type.get(kind)
        if old and old.get("status") == status:
            continue
        by_type[kind] = {"type": kind, "status": status, "lastProbeTime": None, "lastTransitionTime": now}
        if reason and status == "False":
            by_type[kind]["reason"] = reason
    order = ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
    return sorted(by_type.values(), key=lambda c: order.index(c["type"]) if c["type"] in order else 99)


def _node_ip(sim, node_name: str) -> str:
    node = sim.store.get(("", "nodes"), "", node_name) or {}
    addresses = (node.get("status") or {}).get("addresses") or []
    return next((a["address"] for a in addresses if a.get("type") == "InternalIP"), "10.0.0.1")


def _pod_ip(pod: dict) -> str:
    digest = int(pod["metadata"]["uid"].replace("-", "")[:6], 16)
    return f"10.244.{digest % 250}.{digest // 250 % 250 + 2}"


def run_pods(sim) -> None:
    """Start pods whose start time came, finish those whose run time is over."""
    kubelet, now = sim.kubelet, sim.now()
    pods = {p["metadata"]["uid"]: p for p in sim.items("pods") if p["spec"].get("nodeName")}
    kubelet.forget_missing(set(pods))
    for uid, pod in pods.items():  # pods created with spec.nodeName set skip the scheduler
        if uid not in kubelet.runs and (pod.get("status") or {}).get("phase", "Pending") == "Pending" \
                and not (pod.get("status") or {}).get("containerStatuses"):
            kubelet.bound(pod)
            pods[uid] = sim.store.get(("", "pods"), pod["metadata"]["namespace"], pod["metadata"]["name"])
    for uid, run in list(kubelet.runs.items()):
        pod = pods.get(uid)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            continue
        if not run.started and run.start_at is not None and run.start_at <= now:
            kubelet.start(pod)
        elif run.started and run.finish_at is not None and run.finish_at <= now:
            kubelet.finish(pod, run.plan.exit_code, run.plan.reason, run.plan.message)
