"""The kubelet of every node: pods go Pending -> Running -> Succeeded/Failed on a timeline or on command."""
from __future__ import annotations

import shlex
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ..clock import stamp
from ..store import clone
from . import initsteps

PULL_BACKOFF, PULL_BACKOFF_MAX = 10.0, 300.0  # the kubelet's image pull back-off: 10 s, doubling, capped at 5 min
RESYNC_SECONDS = 1.0  # a failed pull's ErrImagePull turns into ImagePullBackOff at the pod worker's next sync
PULL_STATES = ("ErrImagePull", "ImagePullBackOff")
CRASH_BACKOFF, CRASH_BACKOFF_MAX = 10.0, 300.0  # the kubelet's crash loop back-off: 10 s, doubling, capped at 5 min
# kube-apiserver's error when a pod's node has no address it may use to reach the kubelet (a plain error: a 500)
NO_NODE_ADDRESS = "no preferred addresses found; known addresses: []"


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
    # The image cannot be pulled: "ErrImagePull" (first seen failing) or "ImagePullBackOff" (first seen backing off).
    # Set it to None on the returned plan (the image was pushed) and the next pull attempt starts the containers.
    image_pull_error: str | None = None
    image_pull_message: str | None = None  # the runtime's error; default: containerd's "not found" for the image
    init_exit_codes: dict | None = None  # {init container: exit code}: a failing init step (default: all exit 0)

    def __post_init__(self):
        if self.image_pull_error not in (None, *PULL_STATES):
            raise ValueError(f"image_pull_error must be one of {PULL_STATES}, not {self.image_pull_error!r}")


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
    failed_pulls: int = 0
    backoff_at: datetime | None = None  # when the last failed pull shows as ImagePullBackOff
    pull_error: str = ""
    crashes: int = 0  # container exits under restartPolicy Always/OnFailure: the crash loop back-off grows with them
    restarts: int = 0
    last_state: dict | None = None  # the previous run's `terminated`, kept as lastState


def _lines(text: str | bytes) -> list[str]:
    """A log's lines. Bytes are a program's raw output, as the kubelet keeps it: split at newlines only, and any
    bytes that are not UTF-8 kept as they are (surrogateescape: the HTTP layer writes them back as the same bytes)."""
    if isinstance(text, bytes):
        return [line.decode("utf-8", "surrogateescape") for line in text.removesuffix(b"\n").split(b"\n")]
    return text.splitlines()


class Logs:
    """Container logs: (time, line) per (namespace, pod, container); followers wait on a condition."""

    def __init__(self):
        self.lines: dict[tuple, list[tuple[datetime, str]]] = {}
        self.changed = threading.Condition()

    def append(self, key: tuple, text: str | bytes, when: datetime) -> None:
        """Add lines to a container's log."""
        with self.changed:
            self.lines.setdefault(key, []).extend((when, line) for line in _lines(text))
            self.changed.notify_all()

    def set(self, key: tuple, text: str | bytes, when: datetime) -> None:
        """Replace a container's log."""
        with self.changed:
            self.lines[key] = [(when, line) for line in _lines(text)]
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
        self.log_failures: dict[tuple[str, str], str] = {}  # (namespace, pod) -> why its kubelet cannot be reached
        self.secrets_read: dict[tuple, dict] = {}  # (namespace, pod, container) -> what it read of its mounted Secrets

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
        inits = pod["spec"].get("initContainers") or []
        waiting = {"waiting": {"reason": "PodInitializing" if inits else "ContainerCreating"}}
        status["containerStatuses"] = [_container(c, waiting, False) for c in pod["spec"]["containers"]]
        if inits:
            status["initContainerStatuses"] = [initsteps.status_of(c, {"waiting": {"reason": "PodInitializing"}})
                                               for c in inits]
            status["conditions"] = _conditions(status.get("conditions") or [], {"Initialized": "False"},
                                               stamp(self.sim.now()), reason="ContainersNotInitialized")
        self.sim.write(self.sim.rt("pods"), new, pod)

    def next_due(self) -> datetime | None:
        """The next start or finish moment."""
        moments = [m for run in self.runs.values()
                   for m in (None if run.started else run.start_at, run.finish_at, run.backoff_at) if m is not None]
        return min(moments) if moments else None

    def start(self, pod: dict) -> None:
        """Containers start: Running (and Ready unless the plan says otherwise); or the image pull fails."""
        run = self.runs[pod["metadata"]["uid"]]
        missing = initsteps.missing_secrets(self.sim, pod)
        if missing:  # the kubelet tries the mount again a moment later
            initsteps.mount_failed(self.sim, pod, missing)
            run.start_at = self.sim.now() + timedelta(seconds=initsteps.MOUNT_RETRY_SECONDS)
            return
        if run.plan.image_pull_error:
            self._pull_failed(pod, run)
            return
        run.started, run.backoff_at = True, None
        if pod["spec"].get("initContainers") and not self._initialised(pod, run):
            return
        pod = self.sim.store.get(("", "pods"), pod["metadata"]["namespace"], pod["metadata"]["name"])
        now = self.sim.now()
        if run.plan.run_seconds is not None:
            run.finish_at = now + timedelta(seconds=run.plan.run_seconds)
        self._write_logs(pod, run.plan)
        self.sim.events.record(pod, "Started", f"Started container {pod['spec']['containers'][0]['name']}",
                               component="kubelet")
        self._running(pod, run.plan.ready, restarts=run.restarts)

    def _initialised(self, pod: dict, run: PodRun) -> bool:
        """Run the init containers (initsteps); False when one failed, which fails a pod that does not restart."""
        statuses, failed = initsteps.run_init_containers(self, pod, run.plan)
        new = clone(pod)
        status, now = new["status"], stamp(self.sim.now())
        status["initContainerStatuses"] = statuses
        if failed is None:
            status["conditions"] = _conditions(status.get("conditions") or [], {"Initialized": "True"}, now)
            self.sim.write(self.sim.rt("pods"), new, pod)
            return True
        self.runs.pop(pod["metadata"]["uid"], None)
        status["phase"] = "Failed"
        status["conditions"] = _conditions(status.get("conditions") or [], {
            "Initialized": "False", "ContainersReady": "False", "Ready": "False"}, now, reason="PodFailed")
        status["containerStatuses"] = [_container(c, {"waiting": {"reason": "PodInitializing"}}, False)
                                       for c in pod["spec"]["containers"]]
        self.sim.events.record(pod, "Failed", f"Init container {failed['name']} failed", "Warning", "kubelet")
        self.sim.write(self.sim.rt("pods"), new, pod)
        return False

    def write_container_log(self, pod: dict, container: dict, plan: PodPlan) -> None:
        """An init container's log: the plan's text for it, else the line saying nothing ran."""
        text = plan.logs.get(container["name"]) if isinstance(plan.logs, dict) else None
        key = (pod["metadata"]["namespace"], pod["metadata"]["name"], container["name"])
        self.logs.append(key, text if text is not None else no_container_line(container), self.sim.now())

    def _pull_failed(self, pod: dict, run: PodRun) -> None:
        """A pull attempt fails (events Pulling, Failed x2; waiting ErrImagePull); the next one waits out the back-off."""
        now, image = self.sim.now(), pod["spec"]["containers"][0].get("image", "")
        run.pull_error = run.plan.image_pull_message or not_found_message(image)
        run.failed_pulls += 1
        run.start_at = now + timedelta(seconds=min(PULL_BACKOFF * 2 ** (run.failed_pulls - 1), PULL_BACKOFF_MAX))
        run.backoff_at = now + timedelta(seconds=RESYNC_SECONDS)
        self.sim.events.record(pod, "Pulling", f'Pulling image "{image}"', component="kubelet")
        self.sim.events.record(pod, "Failed", f'Failed to pull image "{image}": {run.pull_error}', "Warning", "kubelet")
        self.sim.events.record(pod, "Failed", "Error: ErrImagePull", "Warning", "kubelet")
        self._waiting(pod, "ErrImagePull", run.pull_error)
        if run.failed_pulls == 1 and run.plan.image_pull_error == "ImagePullBackOff":
            self.back_off(self.sim.store.get(("", "pods"), pod["metadata"]["namespace"], pod["metadata"]["name"]))

    def back_off(self, pod: dict) -> None:
        """Between pull attempts: waiting ImagePullBackOff, whose message keeps the last pull's error (kubelet >= 1.32)."""
        run = self.runs[pod["metadata"]["uid"]]
        run.backoff_at = None
        image = pod["spec"]["containers"][0].get("image", "")
        self.sim.events.record(pod, "BackOff", f'Back-off pulling image "{image}"', component="kubelet")
        self.sim.events.record(pod, "Failed", "Error: ImagePullBackOff", "Warning", "kubelet")
        self._waiting(pod, "ImagePullBackOff", f'Back-off pulling image "{image}": ErrImagePull: {run.pull_error}')

    def _waiting(self, pod: dict, reason: str, message: str) -> None:
        new = clone(pod)
        status = new["status"]
        # The sandbox (and its IP) exists before images are pulled: a pod stuck pulling has an address.
        status["podIP"] = status.get("podIP") or _pod_ip(pod)
        status["podIPs"] = [{"ip": status["podIP"]}]
        status["conditions"] = _conditions(status.get("conditions") or [], {
            "PodReadyToStartContainers": "True", "Initialized": "True", "ContainersReady": "False", "Ready": "False"},
            stamp(self.sim.now()), reason="ContainersNotReady")
        status["containerStatuses"] = [_container(c, {"waiting": {"reason": reason, "message": message}}, False)
                                       for c in pod["spec"]["containers"]]
        self.sim.write(self.sim.rt("pods"), new, pod)

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
        run = self.runs.get(pod["metadata"]["uid"])
        if run is not None and run.last_state:  # a restarted container keeps its previous exit as lastState
            for container_status in status["containerStatuses"]:
                container_status["lastState"] = run.last_state
        self.sim.write(self.sim.rt("pods"), new, pod)

    def finish(self, pod: dict, exit_code: int, reason: str | None = None, message: str | None = None) -> None:
        """Containers exit: Succeeded/Failed, or a restart for restartPolicy Always/OnFailure."""
        run = self.runs.get(pod["metadata"]["uid"])
        policy = pod["spec"].get("restartPolicy", "Always")
        restarts = max((cs.get("restartCount", 0) for cs in pod["status"].get("containerStatuses") or []), default=0)
        if policy == "Always" or (policy == "OnFailure" and exit_code != 0):
            if run and run.crashes:  # exited again soon: CrashLoopBackOff until the back-off is over
                self._crash_loop(pod, run, exit_code, reason, message, restarts)
                return
            if run:
                run.crashes, run.restarts = 1, restarts + 1
                run.last_state = {"terminated": self._terminated(pod, exit_code, reason, message)}
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
        initsteps.stop_sidecars(self, pod, status)
        self.sim.write(self.sim.rt("pods"), new, pod)

    def _terminated(self, pod: dict, exit_code: int, reason: str | None, message: str | None) -> dict:
        statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
        started = ((statuses[0].get("state") or {}).get("running") or {}).get("startedAt") or pod["status"].get("startTime")
        terminated = {"exitCode": exit_code, "reason": reason or ("Completed" if exit_code == 0 else "Error"),
                      "startedAt": started, "finishedAt": stamp(self.sim.now()),
                      "containerID": f"containerd://{pod['spec']['containers'][0]['name']}"}
        if message:
            terminated["message"] = message
        return terminated

    def _crash_loop(self, pod: dict, run: PodRun, exit_code: int, reason: str | None, message: str | None,
                    restarts: int) -> None:
        """The kubelet's crash loop back-off: 10 s after the second exit, doubling, capped at 300 s (k8s 1.36 defaults).

        Meanwhile the container is waiting in CrashLoopBackOff (lastState: the exit), the pod Running but not Ready.
        """
        back_off = min(CRASH_BACKOFF * 2 ** (run.crashes - 1), CRASH_BACKOFF_MAX)
        run.crashes += 1
        run.started, run.finish_at = False, None
        run.start_at = self.sim.now() + timedelta(seconds=back_off)
        run.restarts = restarts + 1
        run.last_state = {"terminated": self._terminated(pod, exit_code, reason, message)}
        meta, container = pod["metadata"], pod["spec"]["containers"][0]["name"]
        who = f"{meta['name']}_{meta['namespace']}({meta['uid']})"
        self.sim.events.record(pod, "BackOff", f"Back-off restarting failed container {container} in pod {who}",
                               "Warning", "kubelet")
        new = clone(pod)
        status = new["status"]
        status["conditions"] = _conditions(status.get("conditions") or [], {"ContainersReady": "False", "Ready": "False"},
                                           stamp(self.sim.now()), reason="ContainersNotReady")
        waiting = {"waiting": {"reason": "CrashLoopBackOff",
                               "message": f"back-off {int(back_off)}s restarting failed container={container} pod={who}"}}
        status["containerStatuses"] = [{**_container(c, waiting, False, restarts), "lastState": run.last_state}
                                       for c in pod["spec"]["containers"]]
        self.sim.write(self.sim.rt("pods"), new, pod)

    def _write_logs(self, pod: dict, plan: PodPlan) -> None:
        if plan.logs is None:  # no plan for its output: say so, rather than leave a log empty without a reason
            texts = {c["name"]: no_container_line(c) for c in pod["spec"]["containers"]}
        else:
            texts = plan.logs if isinstance(plan.logs, dict) else {pod["spec"]["containers"][0]["name"]: plan.logs}
            inits = {c["name"] for c in pod["spec"].get("initContainers") or []}
            texts = {name: text for name, text in texts.items() if name not in inits}  # written when they ran
        for container, text in texts.items():
            self.logs.append((pod["metadata"]["namespace"], pod["metadata"]["name"], container), text, self.sim.now())

    def forget_missing(self, live_uids: set[str]) -> None:
        """Drop timelines of pods that no longer exist."""
        for uid in [u for u in self.runs if u not in live_uids]:
            del self.runs[uid]


def no_container_line(container: dict) -> str:
    """What a simulated container prints: that nothing ran, and what would have."""
    words = (container.get("command") or []) + (container.get("args") or [])
    what = shlex.join(words) if words else f"the entrypoint of {container.get('image', '?')}"
    return f"fake-kube: no container runs here; this pod would run: {what}"


def image_reference(image: str) -> str:
    """The fully qualified reference containerd resolves: busybox -> docker.io/library/busybox:latest."""
    name, _, digest = image.partition("@")
    first = name.split("/", 1)[0]
    if "/" not in name:
        name = f"docker.io/library/{name}"
    elif "." not in first and ":" not in first and first != "localhost":
        name = f"docker.io/{name}"
    if not digest and ":" not in name.rsplit("/", 1)[-1]:
        name += ":latest"
    return f"{name}@{digest}" if digest else name


def not_found_message(image: str) -> str:
    """containerd's answer (through the CRI) when the registry has no such image or tag."""
    ref = image_reference(image)
    return (f'rpc error: code = NotFound desc = failed to pull and unpack image "{ref}": '
            f'failed to resolve reference "{ref}": {ref}: not found')


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
        if not run.started and run.backoff_at is not None and run.backoff_at <= now:
            kubelet.back_off(pod)
            pod = sim.store.get(("", "pods"), pod["metadata"]["namespace"], pod["metadata"]["name"])
        if not run.started and run.start_at is not None and run.start_at <= now:
            kubelet.start(pod)
        elif run.started and run.finish_at is not None and run.finish_at <= now:
            kubelet.finish(pod, run.plan.exit_code, run.plan.reason, run.plan.message)
