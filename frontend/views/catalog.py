"""The VM-size catalog page: every series and its sizes with vCPUs, memory, GPUs and the whole-node pod shape."""
from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from compute import selectors

from .common import remembered_workspace

GPU_CHOICES = {"": None, "true": True, "false": False}
WHERE_CHOICES = ("", "compute_cluster", "compute_instance")


@login_required
def vm_sizes(request):
    """The catalog, filtered by series (name or alias), GPUs and where the series is supported; unknown filter
    values count as no filter, as the page only offers valid ones."""
    gpu = request.GET.get("gpu", "")
    where = request.GET.get("supported_in", "")
    query = {
        "series": request.GET.get("series", "").strip(),
        "gpu": GPU_CHOICES.get(gpu),
        "supported_in": where if where in WHERE_CHOICES else "",
    }
    rows = selectors.vm_series_list(**query)
    context = {
        **remembered_workspace(request), "nav": "compute", "series": rows, "query": {**query, "gpu": gpu},
        "size_count": sum(len(row["sizes"]) for row in rows),
    }
    return render(request, "frontend/compute/vm_sizes.html", context)
