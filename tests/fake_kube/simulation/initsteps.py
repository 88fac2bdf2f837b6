"""What the kubelet does before and around a pod's main containers.

- Secret volumes are mounted first: a Secret that does not exist (and is not `optional`) keeps the pod Pending, its
  containers waiting in ContainerCreating, with Warning `FailedMount` events (`MountVolume.SetUp failed for volume
  "<v>" : secret "<s>" not found`); the kubelet tries again every MOUNT_RETRY_SECONDS.
- Init containers run one after the other: a regular one runs to completion (exit 0, or the plan's
  `init_exit_codes[name]`: a non-zero exit fails a pod that does not restart, and its main containers never start); a
  native sidecar (`restartPolicy: Always`) is started and keeps running beside the next ones and the main containers.
- When the main containers of a pod that does not restart have all exited, its sidecars are sent SIGTERM and exit
  (exit 0, `Completed`); the pod's phase is the main containers'.
- What a container reads from its mounted Secrets is kept as it would read it: an init container's at its start, a
  sidecar's when it is sent SIGTERM (a mounted Secret is refreshed by the kubelet; env vars are not). Read it with
  `FakeKube.secrets_read(namespace, pod, container)`: {"<mountPath>/<key>": value}.
"""
from __future__ import annotations

import base64

from ..clock import stamp

MOUNT_RETRY_SECONDS = 2.0


def is_sidecar(container: dict) -> bool:
    return container.get("restartPolicy") == "Always"


def missing_secrets(sim, pod: dict) -> list[tuple[str, str]]:
    """(volume, secret) of the pod's Secret volumes whose Secret does not exist (and is not optional)."""
    namespace, missing = pod["metadata"]["namespace"], []
    for volume in pod["spec"].get("volumes") or []:
        source = volume.get("secret")
        if source and not source.get("optional") and \
                sim.store.get(("", "secrets"), namespace, source.get("secretName", "")) is None:
            missing.append((volume["name"], source.get("secretName", "")))
    return missing


def mount_failed(sim, pod: dict, missing: list[tuple[str, str]]) -> None:
    for volume, secret in missing:
        sim.events.record(pod, "FailedMount", f'MountVolume.SetUp failed for volume "{volume}" : secret "{secret}" not '
                                              "found", "Warning", "kubelet")


def secret_contents(sim, pod: dict, container: dict) -> dict[str, str]:
    """What the container sees now in the Secrets mounted into it: {"<mountPath>/<key>": value}."""
    volumes = {v["name"]: v["secret"] for v in pod["spec"].get("volumes") or [] if v.get("secret")}
    seen = {}
    for mount in container.get("volumeMounts") or []:
        source = volumes.get(mount.get("name"))
        if source is None:
            continue
        secret = sim.store.get(("", "secrets"), pod["metadata"]["namespace"], source.get("secretName", "")) or {}
        for key, value in (secret.get("data") or {}).items():
            seen[f"{mount['mountPath'].rstrip('/')}/{key}"] = base64.b64decode(value).decode("utf-8", "replace")
    return seen


def terminated(exit_code: int, started: str, finished: str, name: str) -> dict:
    return {"terminated": {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error",
                           "startedAt": started, "finishedAt": finished, "containerID": f"containerd://{name}"}}


def status_of(container: dict, state: dict, ready: bool = False) -> dict:
    return {"name": container["name"], "image": container.get("image", ""), "imageID": "", "ready": ready,
            "restartCount": 0, "started": "running" in state, "state": state,
            "containerID": f"containerd://{container['name']}" if "waiting" not in state else None}


def run_init_containers(kubelet, pod: dict, plan) -> tuple[list[dict], dict | None]:
    """Run the init containers in order: their statuses, and the first regular one that failed (or None)."""
    now = stamp(kubelet.sim.now())
    codes = plan.init_exit_codes or {}
    statuses, failed = [], None
    for container in pod["spec"].get("initContainers") or []:
        key = (pod["metadata"]["namespace"], pod["metadata"]["name"], container["name"])
        if failed is not None:
            statuses.append(status_of(container, {"waiting": {"reason": "PodInitializing"}}))
            continue
        kubelet.write_container_log(pod, container, plan)
        if is_sidecar(container):
            statuses.append(status_of(container, {"running": {"startedAt": now}}, ready=True))
            continue
        kubelet.secrets_read[key] = secret_contents(kubelet.sim, pod, container)
        code = codes.get(container["name"], 0)
        statuses.append(status_of(container, terminated(code, now, now, container["name"])))
        if code != 0 and pod["spec"].get("restartPolicy") == "Never":
            failed = container
    return statuses, failed


def stop_sidecars(kubelet, pod: dict, status: dict) -> None:
    """The main containers have exited: each sidecar is sent SIGTERM, reads what it needs, and exits 0."""
    now = stamp(kubelet.sim.now())
    by_name = {s["name"]: s for s in status.get("initContainerStatuses") or []}
    for container in pod["spec"].get("initContainers") or []:
        if not is_sidecar(container):
            continue
        key = (pod["metadata"]["namespace"], pod["metadata"]["name"], container["name"])
        kubelet.secrets_read[key] = secret_contents(kubelet.sim, pod, container)
        started = ((by_name.get(container["name"], {}).get("state") or {}).get("running") or {}).get("startedAt", now)
        by_name[container["name"]] = status_of(container, terminated(0, started, now, container["name"]))
        kubelet.sim.events.record(pod, "Killing", f"Stopping container {container['name']}", component="kubelet")
    if by_name:
        status["initContainerStatuses"] = [by_name[c["name"]] for c in pod["spec"].get("initContainers") or []
                                           if c["name"] in by_name]
