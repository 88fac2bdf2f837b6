"""Controller logic, one function per kind: read the record, make the cluster match, record what was observed."""
from .clusters import reconcile_compute_clusters
from .computes import reconcile_compute
from .instancetypes import Interrupted, reconcile_instance_type, reconcile_instance_types, sync_cluster

__all__ = ["Interrupted", "reconcile_compute", "reconcile_compute_clusters", "reconcile_instance_type", "reconcile_instance_types", "sync_cluster"]
