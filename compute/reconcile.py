"""Controller logic: bring the world in line with a compute record, then record what was observed."""
import logging

from .choices import ComputeType, ProvisioningState
from .models import ComputeTarget

logger = logging.getLogger(__name__)

# Types whose record is all there is until their backends arrive: nothing outside the database to create.
# Kubernetes connectivity (reach the API server, check RBAC, install CRDs) is reconciled by a later issue;
# until then a kubernetes record stays Creating.
RECORD_ONLY = {choice for choice in ComputeType} - {ComputeType.KUBERNETES}


def reconcile_compute(compute: ComputeTarget) -> None:
    """Reconcile one compute record (the caller holds its row lock)."""
    if compute.provisioning_state == ProvisioningState.DELETING:
        logger.info("Deleted compute", extra={"compute": compute.name, "workspace": compute.workspace_id})
        compute.delete()
        return
    state = ProvisioningState.SUCCEEDED if compute.type in RECORD_ONLY else ProvisioningState.CREATING
    _record_status(compute, state, [])


def _record_status(compute: ComputeTarget, state: str, errors: list[dict]) -> None:
    """Write status only when something changed, so a steady resync writes nothing."""
    observed = {"provisioning_state": state, "provisioning_errors": errors, "observed_generation": compute.generation}
    changed = [key for key, value in observed.items() if getattr(compute, key) != value]
    if not changed:
        return
    for key in changed:
        setattr(compute, key, observed[key])
    compute.save(update_fields=changed)
