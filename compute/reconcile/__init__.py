"""Controller logic, one function per kind: read the record, make the cluster match, record what was observed."""
from .computes import reconcile_compute
from .instancetypes import reconcile_instance_type, sync_cluster

__all__ = ["reconcile_compute", "reconcile_instance_type", "sync_cluster"]
