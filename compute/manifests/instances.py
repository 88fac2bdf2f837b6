"""A compute instance → its Secret, headless Service and StatefulSet (pure).

compute-engines.md §3.1: one StatefulSet of one pod (replicas 1 = Running, 0 = Stopped) whose `home` claim survives a
stop (`whenScaled: Retain`) and goes with the instance (`whenDeleted: Delete`); JupyterLab on 8888 and code-server on
8080 in the same pod, both sharing the home volume; the per-instance token handed to both through a Secret (env), so it
never appears in a pod spec or on a command line.
"""
import base64
import hashlib
from dataclasses import dataclass

from controlplane.kube.objects import labels
from controlplane.kube.quantities import QuantityError, cpu_millicores, format_cpu, format_memory, memory_bytes
from controlplane.kube.resources import Shape, container_resources

# The instance label: the Service's and StatefulSet's selector, and what the observe pass lists pods by.
INSTANCE_LABEL = "dockyard.dev/compute-instance"
KIND = "compute-instance"
JUPYTER_PORT, VSCODE_PORT = 8888, 8080
HOME = "/home/jovyan"  # Jupyter Docker Stacks' user home (uid 1000 jovyan, gid 100 users)
USER_ID, GROUP_ID = 1000, 100  # jovyan:users; code-server's `coder` is uid 1000 too
HOME_CLAIM = "home"
DEFAULT_DISK_GB = 32
# code-server's share of the instance's shape, taken out of it so the pod as a whole is exactly the shape (a whole-node
# VM size stays one node): this much, but never more than a quarter of the shape's own request (or limit).
VSCODE_REQUEST = {"cpu": 100, "memory": 512 * 2**20}  # millicores, bytes
VSCODE_LIMIT = {"cpu": 1000, "memory": 1024 * 2**20}
MIB = 2**20


@dataclass(frozen=True)
class InstanceNames:
    """The names of one compute instance's objects (COMMON.md's contract)."""

    statefulset: str
    service: str
    secret: str
    claim: str
    pod: str


def instance_names(name: str) -> InstanceNames:
    """The objects of compute instance `name`: StatefulSet and Service `ci-<name>`, Secret `ci-<name>-token`, claim
    `home-ci-<name>-0`, pod `ci-<name>-0` (compute names are 2–24 DNS-safe characters, so these are valid names)."""
    base = f"ci-{name.lower()}"
    return InstanceNames(base, base, f"{base}-token", f"{HOME_CLAIM}-{base}-0", f"{base}-0")


def base_url(workspace: str, name: str) -> str:
    """Where Dockyard's proxy serves the instance's JupyterLab; the server's own base_url is the same path."""
    return f"/instances/{workspace}/{name}/jupyter/"


@dataclass(frozen=True)
class Instance:
    """One compute instance as its manifests need it: the record's fields and its attachment's."""

    workspace: str
    name: str
    namespace: str
    shape: Shape
    running: bool
    token: str
    image: str
    code_server_image: str
    disk_gb: int = DEFAULT_DISK_GB

    @property
    def names(self) -> InstanceNames:
        return instance_names(self.name)

    def labels(self) -> dict[str, str]:
        return {**labels(KIND, workspace=self.workspace, compute=self.name), INSTANCE_LABEL: self.name}

    def selector(self) -> dict[str, str]:
        return {INSTANCE_LABEL: self.name, "dockyard.dev/workspace": self.workspace}


def instance_manifests(instance: Instance) -> list[dict]:
    """The Secret, the headless Service and the StatefulSet, in the order they are applied."""
    return [secret_manifest(instance), service_manifest(instance), statefulset_manifest(instance)]


def _metadata(instance: Instance, name: str) -> dict:
    return {"name": name, "namespace": instance.namespace, "labels": instance.labels()}


def _encoded(value: str) -> str:
    return base64.b64encode(value.encode()).decode()


def code_server_hash(token: str) -> str:
    """code-server's HASHED_PASSWORD: the sha256 hex of the token. A hash that is not argon2 makes code-server take a
    session cookie equal to it (coder/code-server src/node/util.ts getPasswordMethod "SHA256", isCookieValid), which
    is what Dockyard's proxy sends; its login form still takes the token itself as the password."""
    return hashlib.sha256(token.encode()).hexdigest()


def secret_manifest(instance: Instance) -> dict:
    """The token, for Jupyter (JUPYTER_TOKEN, which jupyter-server reads itself), and its hash for code-server."""
    return {
        "apiVersion": "v1", "kind": "Secret", "metadata": _metadata(instance, instance.names.secret), "type": "Opaque",
        "data": {"JUPYTER_TOKEN": _encoded(instance.token), "HASHED_PASSWORD": _encoded(code_server_hash(instance.token))},
    }


def service_manifest(instance: Instance) -> dict:
    """Headless, with the named ports Dockyard's proxy and probes reach through the API server's service proxy."""
    return {
        "apiVersion": "v1", "kind": "Service", "metadata": _metadata(instance, instance.names.service),
        "spec": {
            "clusterIP": "None", "selector": instance.selector(),
            "ports": [{"name": "jupyter", "port": JUPYTER_PORT, "targetPort": "jupyter", "protocol": "TCP"},
                      {"name": "vscode", "port": VSCODE_PORT, "targetPort": "vscode", "protocol": "TCP"}],
        },
    }


def _amount(section: dict, key: str) -> int | None:
    """A cpu (millicores) or memory (bytes) amount of a shape's section; None when absent or unreadable."""
    try:
        return (cpu_millicores if key == "cpu" else memory_bytes)(section[key]) if key in section else None
    except QuantityError:
        return None


def _format(key: str, amount: int) -> str:
    return format_cpu(amount) if key == "cpu" else format_memory(amount)


def split_shape(shape: Shape) -> tuple[dict, dict]:
    """(JupyterLab's resources, code-server's): code-server takes VSCODE_REQUEST / VSCODE_LIMIT out of the shape, at
    most a quarter of each amount (and its limit no more above its request than the shape's limit is above the
    shape's request, so JupyterLab's request stays within its limit); the two add up to the shape, GPUs all JupyterLab's.
    A resource the shape does not state is not split: code-server then asks its fixed share of it."""
    main = {"requests": dict(shape.requests), "limits": dict(shape.limits)}
    side: dict = {"requests": {}, "limits": {}}
    for key in ("cpu", "memory"):
        request, limit = _amount(shape.requests, key), _amount(shape.limits, key)
        unit = 1 if key == "cpu" else MIB
        side_request = VSCODE_REQUEST[key] if request is None else min(VSCODE_REQUEST[key], request // 4 // unit * unit)
        side_limit = VSCODE_LIMIT[key]
        if limit is not None:
            headroom = limit - request if request is not None else side_limit
            side_limit = max(side_request, min(side_limit, side_request + headroom, limit // 4 // unit * unit))
        side["requests"][key], side["limits"][key] = _format(key, side_request), _format(key, side_limit)
        if request is not None:
            main["requests"][key] = _format(key, request - side_request)
        if limit is not None:
            main["limits"][key] = _format(key, limit - side_limit)
    return container_resources(main["requests"], main["limits"], shape.gpu), container_resources(
        side["requests"], side["limits"], None)


def _token_env(instance: Instance, key: str) -> dict:
    return {"name": key, "valueFrom": {"secretKeyRef": {"name": instance.names.secret, "key": key}}}


def _locked_down() -> dict:
    return {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def jupyter_container(instance: Instance, resources: dict) -> dict:
    """JupyterLab (jupyter-server) on 8888 under Dockyard's path, the token from the Secret, terminals on."""
    url = base_url(instance.workspace, instance.name)
    return {
        "name": "jupyter", "image": instance.image,
        # The image's entrypoint (tini) stays; its start script runs `jupyter lab` with these flags. The token is not a flag: jupyter-server reads JUPYTER_TOKEN itself (IdentityProvider.token), so it never
        # shows on the command line. allow_origin stays unset: the browser reaches it through Dockyard's origin only.
        "args": ["start-notebook.py", f"--ServerApp.base_url={url}", "--ServerApp.ip=0.0.0.0", f"--ServerApp.port={JUPYTER_PORT}",
                 "--ServerApp.terminals_enabled=True", "--ServerApp.open_browser=False", f"--ServerApp.root_dir={HOME}"],
        "env": [_token_env(instance, "JUPYTER_TOKEN")],
        "ports": [{"name": "jupyter", "containerPort": JUPYTER_PORT, "protocol": "TCP"}],
        "resources": resources,
        "volumeMounts": [{"name": HOME_CLAIM, "mountPath": HOME}],
        "workingDir": HOME,
        # `<base_url>api` answers the server's version without a token: up, not yet used.
        "readinessProbe": {"httpGet": {"path": f"{url}api", "port": "jupyter"}, "periodSeconds": 5, "failureThreshold": 3},
        "securityContext": _locked_down(),
    }


def vscode_container(instance: Instance, resources: dict) -> dict:
    """code-server on 8080 with password auth (the token), its settings and extensions kept in the home volume.

    No `--idle-timeout-seconds`: it exits the process, which restarts the pod (compute-engines.md §3.4); Dockyard's own
    idle rule stops the instance instead."""
    return {
        "name": "vscode", "image": instance.code_server_image,
        # Not the image's entrypoint: it runs fixuid, which needs the privilege this pod does not give, and fixes its
        # own --bind-addr and folder.
        "command": ["/usr/bin/code-server"],
        "args": [f"--bind-addr=0.0.0.0:{VSCODE_PORT}", "--auth=password", "--disable-telemetry",
                 "--disable-update-check", HOME],
        "env": [_token_env(instance, "HASHED_PASSWORD"), {"name": "HOME", "value": HOME}],
        "ports": [{"name": "vscode", "containerPort": VSCODE_PORT, "protocol": "TCP"}],
        "resources": resources,
        "volumeMounts": [{"name": HOME_CLAIM, "mountPath": HOME}],
        "workingDir": HOME,
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": "vscode"}, "periodSeconds": 5, "failureThreshold": 3},
        "securityContext": _locked_down(),
    }


def statefulset_manifest(instance: Instance) -> dict:
    """One pod (or none, stopped) of the instance's shape on its attachment, and its home claim."""
    jupyter_resources, vscode_resources = split_shape(instance.shape)
    template_metadata: dict = {"labels": instance.labels()}
    pod_spec = {
        "containers": [jupyter_container(instance, jupyter_resources), vscode_container(instance, vscode_resources)],
        "securityContext": {
            "runAsNonRoot": True, "runAsUser": USER_ID, "runAsGroup": GROUP_ID, "fsGroup": GROUP_ID,
            "fsGroupChangePolicy": "OnRootMismatch", "seccompProfile": {"type": "RuntimeDefault"},
        },
        # A dev box has no business with the cluster's API, nor with every Service's address in its environment.
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
    }
    instance.shape.pod_placement(pod_spec, template_metadata)
    return {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": _metadata(instance, instance.names.statefulset),
        "spec": {
            "replicas": 1 if instance.running else 0,
            "serviceName": instance.names.service,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": instance.selector()},
            "persistentVolumeClaimRetentionPolicy": {"whenScaled": "Retain", "whenDeleted": "Delete"},
            "template": {"metadata": template_metadata, "spec": pod_spec},
            "volumeClaimTemplates": [{
                "metadata": {"name": HOME_CLAIM, "labels": instance.labels()},
                "spec": {"accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": f"{instance.disk_gb}Gi"}}},
            }],
        },
    }
