"""The resource types the fake serves: built-in kinds and, once Established, those of CRDs."""
from __future__ import annotations

from dataclasses import dataclass, field

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
NO_COLLECTION_DELETE = ("create", "delete", "get", "list", "patch", "update", "watch")
STATUS_VERBS = ("get", "patch", "update")


@dataclass(frozen=True)
class ResourceType:
    """One served resource (group, version, plural) and what the server knows about it."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple = ()
    subresources: tuple = ()  # "status", "log", "scale"
    verbs: tuple = ALL_VERBS
    categories: tuple = ()
    has_generation: bool = True
    crd: str | None = None  # name of the CRD that serves it
    schema: dict | None = field(default=None, compare=False, hash=False)  # CRD openAPIV3Schema

    @property
    def api_version(self) -> str:
        """`v1` or `group/version`."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        """`PodList` etc."""
        return self.kind + "List"

    @property
    def has_status(self) -> bool:
        """Whether writes to the main resource ignore `.status` (a status subresource exists)."""
        return "status" in self.subresources

    @property
    def is_custom(self) -> bool:
        """Served from a CRD (unstructured: strategic merge patch unsupported, resourceVersion needed on PUT)."""
        return self.crd is not None

    @property
    def key(self) -> tuple[str, str]:
        """(group, plural): storage is shared between versions of one resource."""
        return (self.group, self.plural)

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """The REST path of the collection or of one object."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else "/api/v1"
        if self.namespaced and namespace:
            prefix += f"/namespaces/{namespace}"
        prefix += f"/{self.plural}"
        return prefix + (f"/{name}" if name else "")


def _core(plural, singular, kind, namespaced=True, **kw) -> ResourceType:
    return ResourceType("", "v1", plural, singular, kind, namespaced, **kw)


BUILTINS: tuple[ResourceType, ...] = (
    _core("namespaces", "namespace", "Namespace", False, short_names=("ns",), subresources=("status",),
          verbs=NO_COLLECTION_DELETE, has_generation=False),
    _core("nodes", "node", "Node", False, short_names=("no",), subresources=("status",), has_generation=False),
    _core("pods", "pod", "Pod", short_names=("po",), subresources=("status", "log"), categories=("all",)),
    _core("services", "service", "Service", short_names=("svc",), subresources=("status",),
          verbs=NO_COLLECTION_DELETE, categories=("all",), has_generation=False),
    _core("serviceaccounts", "serviceaccount", "ServiceAccount", short_names=("sa",), has_generation=False),
    _core("secrets", "secret", "Secret", has_generation=False),
    _core("configmaps", "configmap", "ConfigMap", short_names=("cm",), has_generation=False),
    _core("events", "event", "Event", short_names=("ev",), has_generation=False),
    _core("persistentvolumeclaims", "persistentvolumeclaim", "PersistentVolumeClaim", short_names=("pvc",),
          subresources=("status",), has_generation=False),
    ResourceType("apps", "v1", "deployments", "deployment", "Deployment", True, ("deploy",),
                 ("status", "scale"), categories=("all",)),
    ResourceType("apps", "v1", "replicasets", "replicaset", "ReplicaSet", True, ("rs",),
                 ("status", "scale"), categories=("all",)),
    ResourceType("apps", "v1", "statefulsets", "statefulset", "StatefulSet", True, ("sts",),
                 ("status", "scale"), categories=("all",)),
    ResourceType("batch", "v1", "jobs", "job", "Job", True, (), ("status",), categories=("all",)),
    # The HPA strategy sets no metadata.generation (and its controller no status.observedGeneration).
    ResourceType("autoscaling", "v2", "horizontalpodautoscalers", "horizontalpodautoscaler",
                 "HorizontalPodAutoscaler", True, ("hpa",), ("status",), categories=("all",), has_generation=False),
    ResourceType("apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition",
                 "CustomResourceDefinition", False, ("crd", "crds"), ("status",), categories=("api-extensions",)),
    # PriorityClass: cluster-scoped, no status, no generation (its strategy sets none).
    ResourceType("scheduling.k8s.io", "v1", "priorityclasses", "priorityclass", "PriorityClass", False, ("pc",),
                 has_generation=False),
    ResourceType("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "selfsubjectaccessreview",
                 "SelfSubjectAccessReview", False, verbs=("create",), has_generation=False),
)

# Group order in /apis, as kube-apiserver lists them (core groups first).
GROUP_ORDER = ("apps", "authorization.k8s.io", "autoscaling", "batch", "apiextensions.k8s.io", "scheduling.k8s.io")


class Registry:
    """Which resource types are served right now (built-ins plus Established CRDs)."""

    def __init__(self):
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        for rt in BUILTINS:
            self.add(rt)

    def add(self, rt: ResourceType) -> None:
        """Serve a resource type."""
        self._types[(rt.group, rt.version, rt.plural)] = rt

    def remove_crd(self, crd_name: str) -> None:
        """Stop serving every version a CRD served."""
        for key in [k for k, rt in self._types.items() if rt.crd == crd_name]:
            del self._types[key]

    def find(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The served type at this path segment, or None."""
        return self._types.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        """The served type for an apiVersion/kind pair."""
        return next((rt for rt in self._types.values() if rt.api_version == api_version and rt.kind == kind), None)

    def builtin(self, plural: str, group: str = "") -> ResourceType:
        """A built-in type by plural (simulation controllers use these)."""
        return next(rt for rt in BUILTINS if rt.plural == plural and rt.group == group)

    def all(self) -> list[ResourceType]:
        """Every served type."""
        return list(self._types.values())

    def groups(self) -> dict[str, list[str]]:
        """group -> served versions (preferred first), core group excluded."""
        out: dict[str, list[str]] = {}
        for rt in self._types.values():
            if rt.group and rt.version not in out.setdefault(rt.group, []):
                out[rt.group].append(rt.version)
        order = {g: i for i, g in enumerate(GROUP_ORDER)}
        return dict(sorted(out.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))

    def versions_of(self, group: str, plural: str) -> list[ResourceType]:
        """All served versions of one resource."""
        return [rt for rt in self._types.values() if rt.group == group and rt.plural == plural]
