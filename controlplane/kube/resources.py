"""Pod shapes: node selector, requests and limits, with GPUs read from and written under limits in one place (pure).

Kubernetes writes a GPU count among a container's limits (`nvidia.com/gpu`, never under requests); Dockyard keeps it
apart, as a whole number, so that cpu and memory limits are always quantity strings. `split_gpu` is the one place
that takes it out of a limits map and `container_resources` the one place that puts it back.
"""
from dataclasses import dataclass, field, replace

from .objects import GPU
from .quantities import cpu_millicores, memory_bytes


def split_gpu(limits: dict | None) -> tuple[dict, object]:
    """(the limits without the GPU entry, the GPU entry as written or None)."""
    rest = dict(limits or {})
    return rest, rest.pop(GPU, None)


def container_resources(requests: dict, limits: dict, gpu: int | None) -> dict:
    """A container's `resources`: the requests, and the limits with the GPU count only when there are GPUs."""
    return {"requests": dict(requests), "limits": {**limits, GPU: gpu} if gpu else dict(limits)}


def _kept_gpu(value: object) -> int:
    """A GPU count written by someone else, kept when it is a positive whole number (the CRD's own rule), else none."""
    return value if isinstance(value, int) and value > 0 else 0


@dataclass(frozen=True)
class Shape:
    """What a pod of an instance type gets: its node selector (and its attachment's), requests, limits and GPUs.

    `limits` holds cpu and memory; the GPU count is `gpu`. `extension_selector` is the compute attachment's own
    selector, which every pod must match too (`selector` is the pair, the seed's AND); it is empty until `on` sets it.
    A shape on a compute cluster's pool also carries the toleration of the pool's taint and the pod annotations that
    keep the autoscaler from disrupting the pod (`in_pool`).
    """

    name: str
    node_selector: dict[str, str] = field(default_factory=dict)
    requests: dict[str, str] = field(default_factory=dict)
    limits: dict[str, str] = field(default_factory=dict)
    gpu: int = 0
    extension_selector: dict[str, str] = field(default_factory=dict)
    tolerations: tuple[dict, ...] = ()
    pod_annotations: dict[str, str] = field(default_factory=dict)

    def __post_init__(self):  # copies: never the caller's dicts themselves (a record's JSON fields, say)
        setattr_ = object.__setattr__
        setattr_(self, "node_selector", dict(self.node_selector or {}))
        setattr_(self, "requests", dict(self.requests or {}))
        setattr_(self, "limits", dict(self.limits or {}))
        setattr_(self, "extension_selector", dict(self.extension_selector or {}))
        setattr_(self, "tolerations", tuple(dict(item) for item in self.tolerations or ()))
        setattr_(self, "pod_annotations", dict(self.pod_annotations or {}))

    @classmethod
    def from_spec(cls, name: str, spec: dict | None) -> "Shape":
        """An InstanceType CR's spec as the cluster has it (GPU taken out of limits), without judging its values."""
        spec = spec or {}
        resources = spec.get("resources") or {}
        limits, gpu = split_gpu(resources.get("limits"))
        return cls(name, spec.get("nodeSelector") or {}, resources.get("requests") or {}, limits, _kept_gpu(gpu))

    def on(self, extension_selector: dict[str, str] | None) -> "Shape":
        """This shape on a compute attachment whose own node selector is `extension_selector`."""
        return replace(self, extension_selector=extension_selector)

    def in_pool(self, node_selector: dict[str, str], tolerations: tuple[dict, ...] = (),
                pod_annotations: dict[str, str] | None = None) -> "Shape":
        """This shape on a node pool: the pool's selector added to its own, its taint tolerated, `pod_annotations` set."""
        return replace(self, node_selector={**self.node_selector, **node_selector},
                       tolerations=(*self.tolerations, *tolerations),
                       pod_annotations={**self.pod_annotations, **(pod_annotations or {})})

    def pod_placement(self, pod_spec: dict, template_metadata: dict) -> None:
        """Write the shape's node selector, tolerations and pod annotations into a pod template (in place)."""
        if self.selector:
            pod_spec["nodeSelector"] = self.selector
        if self.tolerations:
            pod_spec["tolerations"] = [dict(item) for item in self.tolerations]
        if self.pod_annotations:
            template_metadata["annotations"] = {**template_metadata.get("annotations", {}), **self.pod_annotations}

    @property
    def selector(self) -> dict[str, str]:
        """The effective node selector: the attachment's and the instance type's (which wins on a shared key)."""
        return {**self.extension_selector, **self.node_selector}

    def container_resources(self) -> dict:
        """The container's `resources` for a pod of this shape."""
        return container_resources(self.requests, self.limits, self.gpu)

    def resources(self) -> dict:
        """The API's form: limits always name the GPU entry (null when there are none)."""
        return {"requests": dict(self.requests), "limits": {**self.limits, GPU: self.gpu or None}}

    def spec(self) -> dict:
        """The InstanceType CR's spec: the container resources, and the node selector when there is one."""
        spec: dict = {"resources": self.container_resources()}
        if self.node_selector:
            spec["nodeSelector"] = dict(self.node_selector)
        return spec

    def millicores(self) -> tuple[int, int]:
        """(cpu request, cpu limit) in millicores; QuantityError for a value Dockyard would refuse."""
        return cpu_millicores(self.requests["cpu"]), cpu_millicores(self.limits["cpu"])

    def memory(self) -> tuple[int, int]:
        """(memory request, memory limit) in bytes; QuantityError for a value Dockyard would refuse."""
        return memory_bytes(self.requests["memory"]), memory_bytes(self.limits["memory"])

    def size(self) -> tuple[int, int, int]:
        """(GPUs, cpu limit in millicores, memory limit in bytes): how big a pod of this shape is, to order shapes."""
        return self.gpu, cpu_millicores(self.limits["cpu"]), memory_bytes(self.limits["memory"])
