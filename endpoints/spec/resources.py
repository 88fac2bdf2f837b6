"""A deployment's container resources against its instance type: the instance-types seed's rules (pure).

Requests cpu and memory required and non-zero, memory at least 1 MB, limits optional unless a GPU is asked for, GPUs
whole numbers and only under limits, cpu and memory limits strictly below the instance type's (headroom for the
server's own processes) and GPU limits up to and including it, MLflow models at least 2 CPU and 4 GB.
"""
import math

from controlplane.kube import quantities
from controlplane.kube.objects import GPU
from controlplane.kube.resources import Shape, container_resources
from controlplane.specs import unknown_fields

MIN_MEMORY = 10**6  # "1 MB"
MLFLOW_MIN_MILLICORES, MLFLOW_MIN_MEMORY = 2000, 4 * 10**9  # "2 CPU cores and 4 GB"


def _quantity(values: dict, key: str, path: str, errors: list, kind: str) -> int | None:
    """A cpu (millicores) or memory (bytes) value, rounded up as Kubernetes does; None when missing or bad."""
    value = values.get(key)
    if value is None or value == "":
        return None
    try:
        amount = quantities.parse(value)
    except quantities.QuantityError as exc:
        errors.append((path, str(exc)))
        return None
    if amount <= 0:
        errors.append((path, f"{path} cannot be zero or negative (got {value!r})."))
        return None
    return math.ceil(amount * 1000) if kind == "cpu" else math.ceil(amount)


def _gpu(values: dict, path: str, errors: list) -> int:
    try:
        return quantities.gpu_count(values.get(GPU))
    except quantities.QuantityError as exc:
        errors.append((path, str(exc)))
        return 0


def resolve_resources(resources: object, shape: Shape, mlflow: bool) -> tuple[dict, list[tuple[str, str]]]:
    """The container's requests/limits for a deployment on `shape` (an instance type), or the rule violations.

    Without `resources` the instance type's shape is used as it is.
    """
    errors: list = []
    if resources is None:
        result = shape.container_resources()
        if mlflow:
            _mlflow_minimum(shape.millicores()[0], shape.memory()[0], "instance_type", errors, shape.name)
        return result, errors
    if not isinstance(resources, dict):
        return {}, [("resources", "resources is a mapping with requests (and optionally limits).")]
    for key in sorted(set(resources) - {"requests", "limits"}, key=str):
        errors.append((f"resources.{key}", "resources has requests and limits only."))
    requests, limits = resources.get("requests"), resources.get("limits")
    if not isinstance(requests, dict):
        return {}, errors + [("resources.requests", "resources.requests with cpu and memory is required.")]
    if limits is not None and not isinstance(limits, dict):
        return {}, errors + [("resources.limits", "resources.limits must be a mapping of cpu, memory and nvidia.com/gpu.")]
    limits = limits or {}
    unknown_fields(requests, {"cpu", "memory", GPU}, errors, "'{key}' is not a resource here (cpu, memory).", "resources.requests.")
    unknown_fields(limits, {"cpu", "memory", GPU}, errors, "'{key}' is not a resource here (cpu, memory, nvidia.com/gpu).",
                   "resources.limits.")
    if GPU in requests:
        errors.append((f"resources.requests.{GPU}", "GPUs are given under limits only (Kubernetes copies them to requests)."))
    cpu_request = _quantity(requests, "cpu", "resources.requests.cpu", errors, "cpu")
    memory_request = _quantity(requests, "memory", "resources.requests.memory", errors, "memory")
    for key, value in (("cpu", cpu_request), ("memory", memory_request)):
        if value is None and not any(path == f"resources.requests.{key}" for path, _ in errors):
            errors.append((f"resources.requests.{key}", f"resources.requests.{key} is required and cannot be empty."))
    if memory_request is not None and memory_request < MIN_MEMORY:
        errors.append(("resources.requests.memory", f"The memory request must be at least 1 MB (got {requests['memory']!r})."))
    cpu_limit = _quantity(limits, "cpu", "resources.limits.cpu", errors, "cpu")
    memory_limit = _quantity(limits, "memory", "resources.limits.memory", errors, "memory")
    for key in ("cpu", "memory"):  # optional, but a limit that is given cannot be empty (the seed)
        if key in limits and limits[key] in (None, ""):
            errors.append((f"resources.limits.{key}", f"resources.limits.{key} cannot be empty: give a value or leave it out."))
    gpu = _gpu(limits, f"resources.limits.{GPU}", errors) if GPU in limits else None
    if GPU in limits and limits[GPU] in (None, ""):
        errors.append((f"resources.limits.{GPU}", "nvidia.com/gpu cannot be empty: give a whole number."))
    if gpu:
        for key, value in (("cpu", cpu_limit), ("memory", memory_limit)):
            if value is None:
                errors.append((f"resources.limits.{key}", f"With a GPU, resources.limits.{key} is required."))
    _below_instance_type(shape, cpu_limit, memory_limit, gpu, limits, errors)
    _requests_fit(shape, cpu_request, memory_request, cpu_limit, memory_limit, errors)
    if mlflow and cpu_request is not None and memory_request is not None:
        _mlflow_minimum(cpu_request, memory_request, "resources.requests", errors, None)
    if errors:
        return {}, errors
    chosen_limits = {key: limits[key] for key in ("cpu", "memory") if key in limits}
    return container_resources({"cpu": str(requests["cpu"]), "memory": str(requests["memory"])}, chosen_limits, gpu), errors


def _below_instance_type(shape, cpu: int | None, memory: int | None, gpu: int | None, limits: dict, errors: list) -> None:
    """cpu and memory limits strictly below the instance type's (the seed: '작아야 합니다'), GPUs up to and including it.

    cpu and memory leave headroom for the server's own processes; a GPU is a whole device no side process uses, so a
    deployment may take all of them (Azure ML's own GPU example gives 1 GPU on a 1-GPU instance type).
    """
    own_cpu, own_memory = shape.millicores()[1], shape.memory()[1]
    for key, value, own, shown in (("cpu", cpu, own_cpu, shape.limits["cpu"]), ("memory", memory, own_memory, shape.limits["memory"])):
        if value is not None and key in limits and value >= own:
            errors.append((f"resources.limits.{key}", f"The {key} limit {limits[key]} must be less than the limit of "
                                                       f"instance type '{shape.name}' ({shown}), to leave room for the "
                                                       f"server's own processes (GPU limits may equal the instance type's)."))
    if gpu and gpu > shape.gpu:
        errors.append((f"resources.limits.{GPU}", f"The {GPU} limit {limits[GPU]} cannot be more than the limit of instance "
                                                  f"type '{shape.name}' ({shape.gpu}); it may be equal, as GPUs are whole "
                                                  f"devices no other process uses."))


def _requests_fit(shape, cpu: int | None, memory: int | None, cpu_limit: int | None, memory_limit: int | None, errors: list) -> None:
    """Requests cannot exceed the limits that apply: the deployment's own, else the instance type's."""
    for key, request, own_limit, type_limit in (("cpu", cpu, cpu_limit, shape.millicores()[1]), ("memory", memory, memory_limit, shape.memory()[1])):
        bound = own_limit if own_limit is not None else type_limit
        if request is not None and request > bound:
            whose = "its limit" if own_limit is not None else f"the limit of instance type '{shape.name}'"
            errors.append((f"resources.requests.{key}", f"The {key} request cannot be more than {whose}."))


def _mlflow_minimum(millicores: int, memory: int, path: str, errors: list, shape_name: str | None) -> None:
    if millicores < MLFLOW_MIN_MILLICORES or memory < MLFLOW_MIN_MEMORY:
        where = f" (instance type '{shape_name}' requests less)" if shape_name else ""
        errors.append((path, f"An MLflow model needs requests of at least 2 CPU and 4 GB of memory{where}."))
