"""Managed deployments: placed on a compute cluster of their VM size (or a Kubernetes compute whose nodes fit it), and
the endpoint fixed on the Kubernetes attachment its first deployment went to."""
from compute.choices import ComputeType
from compute.models import ComputeTarget
from controlplane.api import BadRequest
from controlplane.kube.resources import Shape
from controlplane.reconciling import ProvisioningState
from workspaces.audit import audit_record
from workspaces.choices import AuditAction

from ..models import OnlineEndpoint
from ..selectors import placement_candidates
from ..spec.managed import size_name
from ..spec.placement import NoPlacement, instance_shape, place


def managed_placement(endpoint: OnlineEndpoint, spec: dict, previous: dict | None, invalid) -> tuple[dict, Shape]:
    """Where the deployment's instances run and the Shape each gets; the same place again when the size is unchanged
    (an update does not move a running deployment between pools), a new one otherwise."""
    size = size_name(spec["instance_type"])
    spec["instance_type"] = size
    candidates = placement_candidates(workspace=endpoint.workspace)
    host = endpoint.compute.name if endpoint.compute_id else ""
    kept = next((item for item in candidates if previous and item.name == previous.get("compute")), None)
    if previous and previous.get("instance_type") == size and kept is not None:
        placement = previous
    else:
        try:
            placement = place(size, spec["instance_count"], candidates, endpoint.workspace.name, host).as_dict()
        except NoPlacement as exc:
            raise invalid([("instance_type", str(exc))], "NoPlacement") from None
    node_selector = next((item.node_selector for item in candidates if item.name == placement["kubernetes_compute"]), {})
    shape = instance_shape(placement, node_selector)
    if shape is None:
        raise invalid([("instance_type", f"'{size}' is not a VM size Dockyard knows.")], "InvalidDeployment")
    return placement, shape


def fix_endpoint_host(*, user, endpoint: OnlineEndpoint, placement: dict, deployment: str) -> None:
    """The first deployment fixes a managed endpoint's Kubernetes attachment: its route and Services live there, so
    every later deployment is placed among the computes on it; the endpoint reconciles to route there."""
    if endpoint.compute_id:
        return
    host = ComputeTarget.objects.select_related("cluster").filter(
        workspace=endpoint.workspace, type=ComputeType.KUBERNETES, name=placement["kubernetes_compute"]).first()
    if host is None:  # placement only picks computes with a host; one deleted meanwhile is a conflict to retry
        raise BadRequest(f"Kubernetes compute '{placement['kubernetes_compute']}' is gone; try again.",
                         code="NoPlacement", target="instance_type")
    endpoint.compute = host
    endpoint.placement = {"kubernetes_compute": host.name, "fixed_by": deployment,
                          "reason": f"Its first deployment '{deployment}' was placed on compute '{placement['compute']}', "
                                    f"which runs on Kubernetes compute '{host.name}': the endpoint's route and every "
                                    f"later deployment are there."}
    endpoint.generation += 1
    endpoint.provisioning_state = ProvisioningState.UPDATING
    endpoint.save(update_fields=["compute", "placement", "generation", "provisioning_state", "updated_at"])
    audit_record(actor=user, action=AuditAction.UPDATE, target_type="online-endpoint", target_name=endpoint.name,
                 workspace=endpoint.workspace, changes={"placement": [None, host.name]})


def unplaced_endpoint() -> dict:
    """A managed endpoint's placement before it has a deployment."""
    return {"kubernetes_compute": None, "reason": "Managed: Dockyard places it with its first deployment, on a compute "
                                                  "cluster of that deployment's instance_type (a VM size)."}
