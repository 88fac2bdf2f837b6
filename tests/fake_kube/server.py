"""FakeKube: a fake kube-apiserver on loopback, with a simulated cluster behind it."""
from __future__ import annotations

import random
import threading
import traceback
import uuid
from pathlib import Path

import yaml

from .api import Api
from .auth import Auth, Rule
from .autoscalers import AutoscalerControls
from .catalog import DEFAULT_BUNDLE, httproute_crd
from .clock import Clock
from .deletion import delete_object
from .faults import Faults, RequestLog
from .httpd import FakeHTTPServer
from .request import Call, Settings
from .resources import Registry
from .simulation import Simulation
from .simulation.cluster import node_manifest
from .simulation.kubelet import NO_NODE_ADDRESS, PlanRule, PodPlan
from .store import Store, clone
from .validation.scheduling import SYSTEM_CLASSES

ADMIN_TOKEN = "fake-kube-admin-token"
RESTRICTED_TOKEN = "fake-kube-restricted-token"
READ_ONLY = [Rule(verbs=("get", "list", "watch"))]
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class FakeKube(AutoscalerControls):
    """Start with `FakeKube().start()` (or as a context manager); point the kubernetes client at `.kubeconfig()`."""

    def __init__(self, *, nodes: int = 0, gpu_nodes: int = 0, node_cpu: str = "8", node_memory: str = "32Gi",
                 gpus_per_node: int = 4, gpu_node_labels: dict | None = None, seed: int = 0,
                 fault_rate: float = 0.0, fault_kinds=("500", "503", "429"), auto: bool = False, tick: float = 0.05,
                 reactive: bool = True, serviceaccount_delay: float = 0.5, require_serviceaccount: bool = True,
                 crd_establish_delay: float = 0.0, pod_start_seconds: float = 1.0,
                 job_pod_seconds: float | None = 10.0, watch_timeout: float = 60.0, bookmark_interval: float = 1.0,
                 history: int = 5000, port: int = 0, cluster_uid: str | None = None, tls=None):
        self.clock = Clock(auto=auto)
        self.store = Store(history=history)
        self.registry = Registry()
        self.settings = Settings(require_serviceaccount, serviceaccount_delay, crd_establish_delay)
        self.api = Api(self.store, self.registry, self.clock, random.Random(seed), self.settings)
        self.sim = Simulation(self.api, job_pod_seconds=job_pod_seconds, pod_start_seconds=pod_start_seconds)
        self.auth = Auth()
        self.auth.add_token(ADMIN_TOKEN, "fake-kube-admin")
        self.auth.add_token(RESTRICTED_TOKEN, "restricted-user", READ_ONLY)
        self.faults = Faults(seed)
        if fault_rate:
            self.faults.add(fault_rate, fault_kinds, path=r"^/api")
        self.requests = RequestLog()
        self.proxy_backends: dict[tuple, str] = {}  # (namespace, 'pod'|'service', name, port|None) -> a real server's URL
        self.server_errors: list[str] = []  # tracebacks of bugs in the fake (answered 500)
        self.reactive, self.tick = reactive, tick
        self.watch_timeout, self.bookmark_interval = watch_timeout, bookmark_interval
        self.stopping = threading.Event()
        self.port = port
        self.tls = tls  # an ssl.SSLContext (tls.server_context): serve https:// instead of http://
        self._http: FakeHTTPServer | None = None
        self._threads: list[threading.Thread] = []
        # What identifies a cluster (kube-system's uid): fresh per instance unless given, so two fakes are two clusters.
        self.cluster_uid = cluster_uid or str(uuid.uuid4())
        self._bootstrap(nodes, gpu_nodes, node_cpu, node_memory, gpus_per_node, gpu_node_labels or {})

    # --- lifecycle ------------------------------------------------------------------------------

    def _bootstrap(self, nodes, gpu_nodes, cpu, memory, gpus, gpu_labels) -> None:
        for name in SYSTEM_NAMESPACES:
            self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
            self.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": name}})
        for name, (value, description) in SYSTEM_CLASSES.items():  # kube-apiserver creates these at start
            self.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                         "value": value, "description": description})
        key = self._type("namespaces").key
        with self.store.lock:
            system = self.store.get(key, "", "kube-system")
            system["metadata"]["uid"] = self.cluster_uid
            self.store.write(key, system, "MODIFIED")
        for i in range(nodes):
            self.add_node(f"node-{i}", cpu=cpu, memory=memory)
        for i in range(gpu_nodes):
            self.add_node(f"gpu-node-{i}", cpu=cpu, memory=memory, gpu=gpus,
                          labels={"nvidia.com/gpu.present": "true", **gpu_labels})

    def start(self) -> FakeKube:
        """Listen on 127.0.0.1 (a free port unless one was given) and serve in background threads."""
        self._http = FakeHTTPServer(("127.0.0.1", self.port), self, tls=self.tls)
        self.port = self._http.server_address[1]
        self._spawn(lambda: self._http.serve_forever(poll_interval=0.05), "fake-kube-http")
        if self.clock.auto:
            self._spawn(self._auto_loop, "fake-kube-controllers")
        return self

    def _spawn(self, target, name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _auto_loop(self) -> None:
        while not self.stopping.wait(self.tick):
            try:
                self.sim.run()
            except Exception:  # a controller bug must not silently stop time
                self.server_errors.append(traceback.format_exc())

    def stop(self) -> None:
        """Stop serving: end watches and log streams, cut connections, join threads."""
        self.stopping.set()
        self.store.wake()
        if self._http is not None:
            self._http.shutdown()
            self._http.close_all()
            self._http.server_close()
        for thread in self._threads:
            thread.join(timeout=5)
        self._threads.clear()

    def __enter__(self) -> FakeKube:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def after_write(self) -> None:
        """Controllers react to a successful write at once (in reactive mode), like a real control plane."""
        if self.reactive:
            self.sim.run()

    # --- client configuration -------------------------------------------------------------------

    @property
    def url(self) -> str:
        """http://127.0.0.1:PORT (https:// with `tls`)."""
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def kubeconfig(self, context: str = "fake-kube", namespace: str | None = None, token: str = ADMIN_TOKEN) -> dict:
        """A kubeconfig dict for kubernetes.config.new_client_from_config_dict (token auth, no TLS)."""
        ctx = {"cluster": "fake-kube", "user": f"{context}-user"}
        if namespace:
            ctx["namespace"] = namespace
        return {"apiVersion": "v1", "kind": "Config", "preferences": {},
                "clusters": [{"name": "fake-kube", "cluster": {"server": self.url}}],
                "users": [{"name": f"{context}-user", "user": {"token": token}}],
                "contexts": [{"name": context, "context": ctx}], "current-context": context}

    def kubeconfig_yaml(self, **kwargs) -> str:
        """The kubeconfig as YAML text."""
        return yaml.safe_dump(self.kubeconfig(**kwargs), sort_keys=False)

    def write_kubeconfig(self, path, **kwargs) -> Path:
        """Write the kubeconfig to a file; returns its path."""
        path = Path(path)
        partial = path.with_name(path.name + ".partial")
        partial.write_text(self.kubeconfig_yaml(**kwargs))
        partial.replace(path)  # atomic: a watcher never reads half a file
        return path

    # --- in-process object access (no HTTP, no faults, not recorded) ----------------------------

    def _type(self, plural: str, group: str = ""):
        found = [t for t in self.registry.all() if t.plural == plural and t.group == group]
        if not found:
            raise KeyError(f"{plural}.{group} is not served")
        return found[0]

    def get(self, plural: str, name: str, namespace: str | None = None, group: str = "") -> dict | None:
        """A stored object, or None."""
        return self.store.get(self._type(plural, group).key, namespace or "", name)

    def list(self, plural: str, namespace: str | None = None, group: str = "") -> list[dict]:
        """Stored objects of a resource (optionally in one namespace)."""
        return self.store.items(self._type(plural, group).key, namespace)

    def create(self, obj: dict) -> dict:
        """Create an object through the API's validation (as a cluster admin)."""
        rt = self.registry.by_kind(obj["apiVersion"], obj["kind"])
        if rt is None:
            raise KeyError(f"{obj['apiVersion']}/{obj['kind']} is not served")
        created = self.api.create(Call(rt, namespace=obj.get("metadata", {}).get("namespace"),
                                       user_agent="fake-kube/test"), clone(obj))
        self.after_write()
        return created

    def delete(self, plural: str, name: str, namespace: str | None = None, group: str = "",
               propagation: str = "Background") -> None:
        """Delete an object behind the client's back (to test drift handling)."""
        rt = self._type(plural, group)
        obj = self.store.get(rt.key, namespace or "", name)
        if obj is not None:
            delete_object(self.api, rt, obj, propagation)
            self.after_write()

    def events(self, namespace: str, name: str | None = None, reason: str | None = None) -> list[dict]:
        """Events recorded in a namespace (about one object, with one reason)."""
        return self.sim.events.find(namespace, name, reason)

    def serve_service(self, namespace: str, name: str, url: str | None, port: int | None = None) -> None:
        """Let the service proxy reach this Service's pods at `url` (a real HTTP server, e.g. on 127.0.0.1); None detaches.

        Requests still need a ready pod behind the Service (else 503 "no endpoints available"); every ready pod
        answers from the same server. `port`: only for requests reaching that pod port (None: any). The pod proxy
        to one of the Service's pods reaches it too. A pod's own server (`serve_pod`) wins.
        """
        self._attach((namespace, "service", name, port), url)

    def serve_pod(self, namespace: str, pod: str, url: str | None, port: int | None = None) -> None:
        """Attach a real HTTP server to a pod (by name, so a StatefulSet's recreated pod keeps it) for the pod proxy
        and the service proxy; `port`: the pod port it listens on (None: any); None detaches. It answers while the
        pod is Running (and, through a Service, ready)."""
        self._attach((namespace, "pod", pod, port), url)

    def _attach(self, key: tuple, url: str | None) -> None:
        if url is None:
            self.proxy_backends.pop(key, None)
        else:
            self.proxy_backends[key] = url.rstrip("/")

    def install_gateway_api(self, bundle: str = DEFAULT_BUNDLE) -> dict:
        """Install the HTTPRoute CRD (Gateway API standard channel, v1.3.0 or v1.2.0) and let it become Established."""
        created = self.create(httproute_crd(bundle))
        self.advance(self.settings.crd_establish_delay)
        return created

    def compact(self) -> None:
        """Forget watch history: watches from older resourceVersions get 410 Expired."""
        self.store.compact()

    # --- nodes ----------------------------------------------------------------------------------

    def add_node(self, name: str, cpu="8", memory="32Gi", gpu: int = 0, labels: dict | None = None,
                 taints: list | None = None, gpu_resource: str = "nvidia.com/gpu", pods: int = 110) -> dict:
        """Add a Ready node with this allocatable capacity."""
        address = f"10.0.{len(self.list('nodes')) // 250}.{len(self.list('nodes')) % 250 + 10}"
        return self.create(node_manifest(name, cpu, memory, gpu, labels, taints, gpu_resource, pods, address))

    def _edit_node(self, name: str, change) -> dict:
        rt = self._type("nodes")
        with self.store.lock:
            node = self.store.get(rt.key, "", name)
            if node is None:
                raise KeyError(f"no node {name}")
            new = clone(node)
            change(new)
            result = self.sim.write(rt, new, node)
        self.after_write()
        return result

    def remove_node(self, name: str) -> None:
        """Delete a node; pod garbage collection then deletes the pods bound to it."""
        self.delete("nodes", name)

    def label_node(self, name: str, labels: dict) -> dict:
        """Set (value) or remove (None) node labels."""
        def change(node):
            current = node["metadata"].setdefault("labels", {})
            for key, value in labels.items():
                if value is None:
                    current.pop(key, None)
                else:
                    current[key] = value
        return self._edit_node(name, change)

    def taint_node(self, name: str, key: str, value: str = "", effect: str = "NoSchedule") -> dict:
        """Add a taint."""
        return self._edit_node(name, lambda node: node["spec"].setdefault("taints", []).append(
            {"key": key, "value": value, "effect": effect} if value else {"key": key, "effect": effect}))

    def untaint_node(self, name: str, key: str) -> dict:
        """Remove every taint with this key."""
        def change(node):
            node["spec"]["taints"] = [t for t in node["spec"].get("taints") or [] if t.get("key") != key]
        return self._edit_node(name, change)

    def set_node_ready(self, name: str, ready: bool) -> dict:
        """Flip the node's Ready condition."""
        def change(node):
            for condition in node["status"]["conditions"]:
                if condition["type"] == "Ready":
                    condition["status"] = "True" if ready else "False"
        return self._edit_node(name, change)

    # --- pods -----------------------------------------------------------------------------------

    def plan_pods(self, labels: dict | None = None, namespace: str | None = None, name_prefix: str | None = None,
                  **plan) -> PodPlan:
        """How matching pods will behave once bound (start_seconds, run_seconds, exit_code, ready, logs...)."""
        pod_plan = PodPlan(**plan)
        self.sim.kubelet.rules.append(PlanRule(pod_plan, labels or {}, namespace, name_prefix))
        return pod_plan

    def _pod(self, namespace: str, name: str) -> dict:
        pod = self.get("pods", name, namespace)
        if pod is None:
            raise KeyError(f"no pod {namespace}/{name}")
        return pod

    def start_pod(self, namespace: str, name: str) -> None:
        """Start a bound pod's containers now."""
        with self.store.lock:
            pod = self._pod(namespace, name)
            if pod["metadata"]["uid"] not in self.sim.kubelet.runs:
                raise ValueError(f"pod {namespace}/{name} is not bound to a node")
            self.sim.kubelet.start(pod)
        self.after_write()

    def finish_pod(self, namespace: str, name: str, exit_code: int = 0, reason: str | None = None,
                   message: str | None = None) -> None:
        """Make a pod's containers exit now (starting them first if needed)."""
        with self.store.lock:
            pod = self._pod(namespace, name)
            run = self.sim.kubelet.runs.get(pod["metadata"]["uid"])
            if run is not None and not run.started:
                self.sim.kubelet.start(pod)
                pod = self._pod(namespace, name)
            self.sim.kubelet.finish(pod, exit_code, reason, message)
        self.after_write()

    def secrets_read(self, namespace: str, name: str, container: str) -> dict | None:
        """What a container read of the Secrets mounted into it, when it read them (an init container at its start, a
        native sidecar when sent SIGTERM): {"<mountPath>/<key>": value}; None if it has not read them yet."""
        return self.sim.kubelet.secrets_read.get((namespace, name, container))

    def set_pod_logs(self, namespace: str, name: str, text: str, container: str | None = None) -> None:
        """Replace a container's log (default: the pod's first container)."""
        self.sim.kubelet.logs.set(self._log_key(namespace, name, container), text, self.clock.now())

    def append_pod_logs(self, namespace: str, name: str, text: str, container: str | None = None) -> None:
        """Append lines to a container's log (followers see them)."""
        self.sim.kubelet.logs.append(self._log_key(namespace, name, container), text, self.clock.now())

    def fail_pod_logs(self, namespace: str, name: str, message: str | None = NO_NODE_ADDRESS) -> None:
        """Make the pod's log requests fail as when its kubelet cannot be reached: a 500 without a reason carrying
        `message` (default: kube-apiserver's words for a node without a usable address); None mends them."""
        if message is None:
            self.sim.kubelet.log_failures.pop((namespace, name), None)
        else:
            self.sim.kubelet.log_failures[(namespace, name)] = message

    def _log_key(self, namespace: str, name: str, container: str | None) -> tuple:
        return (namespace, name, container or self._pod(namespace, name)["spec"]["containers"][0]["name"])

    # --- time -----------------------------------------------------------------------------------

    def advance(self, seconds: float = 0.0) -> None:
        """Move simulated time forward, running controllers at every due moment on the way."""
        self.sim.advance(seconds)

    def settle(self) -> None:
        """Run the controllers at the current time until nothing changes."""
        self.sim.run()

    # --- access control -------------------------------------------------------------------------

    def add_token(self, token: str, user: str, rules: list[Rule] | None = None) -> None:
        """Accept another bearer token (rules=None: cluster admin)."""
        self.auth.add_token(token, user, rules)

    def forbid(self, verb: str = "*", resource: str = "*", group: str = "*", namespace: str = "*",
               name: str = "*") -> None:
        """Answer 403 to every matching request, whoever sends it."""
        self.auth.forbid(Rule((verb,), (group,), (resource,), (namespace,), (name,)))

    def allow_all(self) -> None:
        """Remove every forbid hook."""
        self.auth.clear_forbidden()
