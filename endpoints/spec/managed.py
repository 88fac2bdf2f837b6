"""A managed online deployment's own rules (Azure ML's `managedOnlineDeployment`): its `instance_type` is a VM size and
each instance takes one whole node of that size, which Dockyard finds on a compute cluster (`placement`) (pure).

Azure ML's managed-only fields, as Dockyard reads them on a managed deployment:
- `instance_type` (required, a VM size): the node size its instances get, and where it is placed.
- `instance_count`: replicas, one per node of the pool (a pool's `max_instances` bounds how many run).
- `request_settings.request_timeout_ms`, `.max_concurrent_requests_per_instance`: the inference server's timeout and
  workers, as on Kubernetes; `.max_queue_wait_ms` is refused everywhere (DEPLOYMENT_REFUSED: no request queue here).
- `liveness_probe`, `readiness_probe`: the container's probes, as on Kubernetes.
- `scale_settings`: `type: default` only, as Azure ML's managed deployments (autoscale is Azure Monitor's there).
- refused with the reason: `resources`, `scale_settings.type: target_utilization`, `type: kubernetes`,
  `environment.venv` (MANAGED_REFUSED), and everywhere `egress_public_network_access`, `data_collector`,
  `private_network_connection` (DEPLOYMENT_REFUSED); on the endpoint `identity`, `location` (ENDPOINT_REFUSED) and
  `public_network_access: disabled` (only `enabled`, what Dockyard does, is taken).
"""
from compute import vmsizes

MANAGED_REFUSED = {
    "resources": "A managed deployment's instance takes one whole node of its instance_type (a VM size), and its "
                 "container gets that node's shape: leave resources out (a Kubernetes endpoint sizes containers).",
    "scale_settings.type": "A managed deployment runs instance_count instances (scale_settings.type default), as Azure "
                           "ML's managed deployments do; target_utilization autoscaling is for Kubernetes endpoints.",
    "type": "type kubernetes is for the deployments of a Kubernetes endpoint (one with compute): on a managed endpoint "
            "use type managed (or leave type out).",
    "environment.venv": "venv is for local deployments: a managed deployment runs environment.image in a container.",
}


def size_name(value: object) -> str | None:
    """The catalog's spelling of a VM size (`STANDARD_DS3_V2` → `Standard_DS3_v2`), None when it is not one."""
    size = vmsizes.vm_size(value) if isinstance(value, str) else None
    return size.name if size else None


def managed_errors(spec: dict) -> list[tuple[str, str]]:
    """What a managed deployment cannot be: no VM size, or a field only a Kubernetes or local target acts on."""
    errors = []
    instance_type = spec.get("instance_type")
    if not instance_type:
        errors.append(("instance_type", "A managed deployment needs instance_type, a VM size such as Standard_DS3_v2: "
                                        "each instance takes one node of that size on a compute cluster."))
    elif size_name(instance_type) is None:
        errors.append(("instance_type", f"'{instance_type}' is not a VM size Dockyard knows (such as Standard_DS3_v2 "
                                        "or Standard_F4s_v2; GET /api/v1/vm-sizes/ lists them)."))
    given = {"resources": spec.get("resources") is not None,
             "scale_settings.type": (spec.get("scale_settings") or {}).get("type", "default") != "default",
             "type": spec.get("type") == "kubernetes",
             "environment.venv": "venv" in (spec.get("environment") or {})}
    return errors + [(path, MANAGED_REFUSED[path]) for path, present in given.items() if present]
