"""A compute cluster's pool on its page: node counts, scaling, nodes and errors in words, polled by htmx."""
from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from compute.choices import ComputeType
from compute.models import ComputeTarget

from .common import compute_of_type, workspace_page

ENGINES = {
    "karpenter": ("Karpenter", "NodePool"),
    "cluster-api": ("Cluster API with cluster-autoscaler", "MachineDeployment"),
}
# What each scaling state means for work sent to the cluster.
SCALING = {
    "steady": "The pool has the nodes its work needs.",
    "scaling_up": "The autoscaler is adding nodes for work that waits.",
    "scaling_down": "Nodes idle for longer than the idle time are being removed.",
    "at_limit": "Every node max_instances allows is in use; more work waits in the queue.",
}
POLL_SECONDS = 2


def pool_context(compute: ComputeTarget) -> dict:
    """What the page shows of the pool: the status the reconcile wrote, with the engine and scaling in words."""
    status = compute.status or {}
    engine, kind = ENGINES.get(status.get("engine"), (status.get("engine") or "", "pool"))
    nodes = status.get("nodes") or []
    return {"pool": {
        **status, "observed": "current_node_count" in status, "engine_label": engine, "kind": kind,
        "scaling_text": SCALING.get(status.get("scaling"), status.get("scaling") or ""),
        "nodes": nodes, "ready_count": sum(1 for node in nodes if node.get("ready")),
        "autoscaler_errors": status.get("autoscaler_errors") or [],
    }, "poll_seconds": POLL_SECONDS}


def compute_cluster(workspace, name: str) -> ComputeTarget:
    """A compute cluster of the workspace, or 404: other types have no pool."""
    return compute_of_type(workspace, name, ComputeType.AMLCOMPUTE)


@login_required
def pool(request, ws, name):
    """The pool card alone: the compute page polls it, so node counts move without a reload."""
    context = workspace_page(request, ws)
    compute = compute_cluster(context["workspace"], name)
    context.update(compute=compute, oob=True, **pool_context(compute))  # oob: the header's state badge moves too
    return render(request, "frontend/compute/_pool.html", context)
