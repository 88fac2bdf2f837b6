"""Instance-type shapes: the accepted body forms, the instance-types seed's rules, the built-in default, the fit on
nodes (pure). The Shape itself is controlplane.kube.resources'; a record gives its own with InstanceType.shape().

Accepted forms, in JSON or YAML: flat `{name, nodeSelector, resources}`; the CR
`{apiVersion: amlarc.azureml.com/v1alpha1, kind: InstanceType, metadata: {name}, spec: {...}}`; and
`kind: InstanceTypeList` with `items` in CR form. Every problem is reported with its field path.
"""
from controlplane.kube import names, quantities
from controlplane.kube.objects import GPU
from controlplane.kube.resources import Shape, split_gpu
from controlplane.specs import SpecErrors

from .manifests.instancetypes import INSTANCE_TYPE_API_VERSION

DEFAULT_NAME = "defaultinstancetype"
BLOCKING_TAINTS = ("NoSchedule", "NoExecute")
RESOURCE_KEYS = {"requests": ("cpu", "memory"), "limits": ("cpu", "memory", GPU)}
CR_FIELDS = {"apiVersion", "kind", "metadata", "spec", "status"}

# Every field the parser takes (flat form; the CR form's metadata.name and spec.* are the same fields), for the audit.
ACCEPTED_FIELDS = frozenset({
    "name", "nodeSelector", "resources.requests.cpu", "resources.requests.memory", "resources.limits.cpu",
    "resources.limits.memory", f"resources.limits.{GPU}", "apiVersion", "kind", "items", "metadata.name", "status",
})
# Each field above is acted on (the CR is built from it, or it is checked), so nothing is stored and left inert.
STORED_ONLY: dict[str, str] = {}
# Read but neither stored nor acted on: what `kubectl get -o yaml` adds to a CR, so its output can be posted back.
DROPPED_ON_INPUT: dict[str, str] = {
    "status": "the cluster's observed state; Dockyard reads it from the cluster, never from a request.",
    "metadata (other than name)": "labels, annotations and resourceVersion of an exported CR; Dockyard sets its own "
                                  "labels on the CRs it writes.",
}


# The seed's YAML (its prose says 8 GB of memory; the YAML, which clients apply, says 2Gi).
DEFAULT_SHAPE = Shape(DEFAULT_NAME, {}, {"cpu": "100m", "memory": "2Gi"}, {"cpu": "2", "memory": "2Gi"}, 0)


def documents(body: object) -> list[tuple[str, dict]]:
    """Split a body into (path prefix, flat document) pairs; an InstanceTypeList gives one per item."""
    if not isinstance(body, dict):
        raise SpecErrors([("", "The body must be a mapping: an InstanceType, an InstanceTypeList or {name, resources}.")])
    kind = body.get("kind")
    if kind is not None and kind not in ("InstanceType", "InstanceTypeList"):
        raise SpecErrors([("kind", f"kind must be InstanceType or InstanceTypeList, not {kind!r}.")])
    if "apiVersion" in body and body["apiVersion"] != INSTANCE_TYPE_API_VERSION:
        raise SpecErrors([("apiVersion", f"apiVersion must be {INSTANCE_TYPE_API_VERSION}.")])
    if kind == "InstanceTypeList" or "items" in body:
        items = body.get("items")
        if not isinstance(items, list) or not items:
            raise SpecErrors([("items", "An InstanceTypeList needs a non-empty list of items.")])
        return [(f"items.{index}.", _flat(item, f"items.{index}.")) for index, item in enumerate(items)]
    return [("", _flat(body, ""))]


def _flat(document: object, prefix: str) -> dict:
    """CR form → flat form, with paths that still name the fields the user wrote."""
    if not isinstance(document, dict):
        raise SpecErrors([(prefix.rstrip("."), "Each item must be a mapping with metadata and spec.")])
    errors = _item_kind_problems(document, prefix) if prefix else []  # the body's own kind was checked already
    if "metadata" in document or "spec" in document:
        metadata, spec = document.get("metadata") or {}, document.get("spec") or {}
        errors += [(f"{prefix}{key}", "Unknown field; an InstanceType has apiVersion, kind, metadata and spec.")
                   for key in sorted(set(document) - CR_FIELDS)]
        errors += [(f"{prefix}{key}", f"{key} must be a mapping.") for key, value in (("metadata", metadata), ("spec", spec))
                   if not isinstance(value, dict)]
        if errors:
            raise SpecErrors(errors)
        return {"name": metadata.get("name"), **spec, "_paths": {"name": f"{prefix}metadata.name", "": f"{prefix}spec."}}
    if errors:
        raise SpecErrors(errors)
    return {**document, "_paths": {"name": f"{prefix}name", "": prefix}}


def _item_kind_problems(item: dict, prefix: str) -> list[tuple[str, str]]:
    """An InstanceTypeList's items may say what they are; they must be InstanceTypes."""
    errors = []
    if item.get("kind", "InstanceType") != "InstanceType":
        errors.append((f"{prefix}kind", f"Each item must be an InstanceType, not {item['kind']!r}."))
    if "apiVersion" in item and item["apiVersion"] != INSTANCE_TYPE_API_VERSION:
        errors.append((f"{prefix}apiVersion", f"apiVersion must be {INSTANCE_TYPE_API_VERSION}."))
    return errors


def shape_from(document: dict, extension_selector: dict[str, str] | None = None) -> Shape:
    """Validate one flat document against every seed rule; raise SpecErrors listing all problems."""
    paths = document.get("_paths", {"name": "name", "": ""})
    base = paths[""]
    errors: list[tuple[str, str]] = []
    unknown = sorted(set(document) - {"name", "nodeSelector", "resources", "_paths", "apiVersion", "kind", "status"})
    errors += [(f"{base}{key}", "Unknown field; an instance type has a name, nodeSelector and resources.") for key in unknown]
    name = _name(document.get("name"), paths["name"], errors)
    selector = _selector(document.get("nodeSelector"), f"{base}nodeSelector", extension_selector or {}, errors)
    requests, limits, gpu = _resources(document.get("resources"), f"{base}resources", errors)
    if errors:
        raise SpecErrors(errors)
    return Shape(name, selector, requests, limits, gpu)


def _name(name: object, path: str, errors: list) -> str:
    if not isinstance(name, str) or not name:
        errors.append((path, "A name is required."))
        return ""
    if names.dns_subdomain_problem(name):
        errors.append((path, f"'{name}' is not a valid name: lowercase letters, digits, '-' and '.', starting and ending alphanumeric."))
    return name


def _selector(selector: object, path: str, extension: dict[str, str], errors: list) -> dict[str, str]:
    if selector is None:
        return {}
    if not isinstance(selector, dict):
        errors.append((path, "nodeSelector must be a map of label names to string values."))
        return {}
    for key, value in selector.items():
        problem = _label_problem(key, value)
        if problem:
            errors.append((f"{path}.{key}", problem))
        elif key in extension and extension[key] != value:
            errors.append((f"{path}.{key}", f"The cluster's extension nodeSelector sets {key}={extension[key]}; an instance type cannot ask for {value}."))
    return dict(selector)


def _label_problem(key: object, value: object) -> str | None:
    if not isinstance(key, str) or not isinstance(value, str):
        return "Label names and values must be strings (quote values such as \"true\" or \"1\" in YAML)."
    return names.label_key_problem(key) or names.label_value_problem(value)


def _resources(resources: object, path: str, errors: list) -> tuple[dict, dict, int]:
    if not isinstance(resources, dict):
        errors.append((path, "resources with requests and limits (cpu and memory) are required."))
        return {}, {}, 0
    for key in sorted(set(resources) - set(RESOURCE_KEYS)):
        errors.append((f"{path}.{key}", "Only requests and limits may be given."))
    requests = _resource_list(resources.get("requests"), f"{path}.requests", "requests", errors)
    limits, gpu_written = split_gpu(_resource_list(resources.get("limits"), f"{path}.limits", "limits", errors))
    gpu = _gpu(gpu_written, f"{path}.limits.{GPU}", errors)
    _requests_within_limits(requests, limits, path, errors)
    return requests, limits, gpu


def _resource_list(values: object, path: str, section: str, errors: list) -> dict:
    if not isinstance(values, dict):
        errors.append((path, f"{section} must give cpu and memory."))
        return {}
    result = {}
    for key, value in values.items():
        if key == GPU and section == "requests":
            errors.append((f"{path}.{key}", "GPUs may only be given under limits."))
        elif key not in RESOURCE_KEYS[section]:
            errors.append((f"{path}.{key}", f"Unsupported resource; {section} take {', '.join(RESOURCE_KEYS[section])}."))
        else:
            result[key] = value
    for key in ("cpu", "memory"):
        if result.get(key) in (None, ""):
            errors.append((f"{path}.{key}", f"{section}.{key} is required and cannot be empty or zero."))
            result.pop(key, None)
            continue
        try:
            result[key] = quantities.canonical_cpu(result[key]) if key == "cpu" else quantities.canonical_memory(result[key])
        except quantities.QuantityError as exc:
            errors.append((f"{path}.{key}", str(exc)))
            result.pop(key)
    return result


def _gpu(value: object, path: str, errors: list) -> int:
    try:
        return quantities.gpu_count(value)
    except quantities.QuantityError as exc:
        errors.append((path, str(exc)))
        return 0


def _requests_within_limits(requests: dict, limits: dict, path: str, errors: list) -> None:
    measures = {"cpu": quantities.cpu_millicores, "memory": quantities.memory_bytes}
    for key, measure in measures.items():
        if key in requests and key in limits and measure(requests[key]) > measure(limits[key]):
            errors.append((f"{path}.requests.{key}", f"The {key} request ({requests[key]}) exceeds its limit ({limits[key]})."))


def parse_body(body: object, extension_selector: dict[str, str] | None = None) -> list[Shape]:
    """All shapes of a body, or SpecErrors with every problem of every item (all or nothing)."""
    shapes, errors = [], []
    for _, document in documents(body):
        try:
            shapes.append(shape_from(document, extension_selector))
        except SpecErrors as exc:
            errors += exc.errors
    names = [shape.name for shape in shapes]
    errors += [("items", f"'{name}' appears more than once.") for name in sorted({n for n in names if names.count(n) > 1})]
    if errors:
        raise SpecErrors(errors)
    return shapes


def node_summary(node: dict) -> dict:
    """What fit needs of a Node object: labels, taints, readiness and allocatable in exact units."""
    status = node.get("status") or {}
    allocatable = status.get("allocatable") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    millicores = int(quantities.parse(allocatable.get("cpu", "0")) * 1000)
    memory = int(quantities.parse(allocatable.get("memory", "0")))
    return {
        "name": node["metadata"]["name"],
        "labels": node["metadata"].get("labels") or {},
        "taints": (node.get("spec") or {}).get("taints") or [],
        "ready": ready,
        "allocatable": {"cpu": quantities.format_cpu(millicores), "memory": quantities.format_memory(memory), GPU: int(quantities.parse(allocatable.get(GPU, "0")))},
        "capacity_units": {"millicores": millicores, "memory_bytes": memory},
    }


def fits(shape: Shape, node: dict) -> bool:
    """Can this node host a pod of this shape: ready, untainted, labels match its selector, limits fit allocatable."""
    # Instance types carry no tolerations (the seed documents none), so a NoSchedule/NoExecute taint keeps pods off.
    if not node.get("ready", True) or any(t.get("effect") in BLOCKING_TAINTS for t in node.get("taints") or []):
        return False
    if any(node["labels"].get(key) != value for key, value in shape.selector.items()):
        return False
    units = node["capacity_units"]
    return (
        shape.millicores()[1] <= units["millicores"]
        and shape.memory()[1] <= units["memory_bytes"]
        and shape.gpu <= node["allocatable"][GPU]
    )


def fitting_nodes(shape: Shape, nodes: list[dict]) -> list[str]:
    """The names of the nodes (node_summary's) that can host a pod of this shape on its attachment."""
    try:
        return [node["name"] for node in nodes if fits(shape, node)]
    except quantities.QuantityError:  # an imported CR with values Dockyard would refuse fits nowhere
        return []
