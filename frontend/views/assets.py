"""Assets: a workspace's environments, models and data, the latest version of each name (read-only).

Registering and archiving go through the API and the CLI (`dockyard environment|model|data create -f`); this page
reads the same selectors as the API's lists.
"""
from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_GET

from assets import selectors
from assets.models import Data, Environment, Model

from .common import workspace_page

KINDS = (("environments", "Environments", Environment), ("models", "Models", Model), ("data", "Data", Data))


def _section(workspace, collection: str, title: str, record_type) -> dict:
    rows = list(selectors.asset_list(record_type=record_type, workspace=workspace))
    counts = selectors.asset_version_counts(record_type=record_type, workspace=workspace)
    for row in rows:
        row.version_count = counts.get(row.name, 1)
    return {"collection": collection, "title": title, "rows": rows,
            "api_path": f"/api/v1/workspaces/{workspace.name}/{collection}/"}


@login_required
@require_GET
def asset_list(request, ws):
    """Environments, models and data: the latest version of each name, how many versions it has, what it runs or holds."""
    context = workspace_page(request, ws)
    workspace = context["workspace"]
    context.update(nav="assets", sections=[_section(workspace, *kind) for kind in KINDS])
    return render(request, "frontend/assets/list.html", context)
