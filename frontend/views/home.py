"""Home (workspaces), the workspace landing redirect, and the pages of features still to come."""
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render

from workspaces import access, selectors, services

from ..forms.workspaces import WorkspaceForm
from .common import USER_ERRORS, error_rows, remembered_workspace, workspace_page


@login_required
def home(request):
    """Workspaces the user can open, and the form that creates one."""
    form = WorkspaceForm(request.POST or None)
    may_create = access.may_create_workspaces(request.user)
    if request.method == "POST" and not may_create:
        raise PermissionDenied("Only staff can create workspaces on this server.")
    if request.method == "POST" and form.is_valid():
        try:
            workspace = services.workspace_create(user=request.user, **form.cleaned_data)
        except USER_ERRORS as exc:
            for row in error_rows(exc, target="name"):
                form.add_error(row["target"] if row["target"] in form.fields else None, row["message"])
        else:
            messages.success(request, f"Workspace {workspace.name} created; you are its owner.")
            return redirect("frontend:compute", ws=workspace.name)
    context = {**remembered_workspace(request), "nav": "home", "form": form, "may_create": may_create}
    context["workspaces"] = selectors.workspace_card_list(user=request.user)
    return render(request, "frontend/home.html", context)


@login_required
def workspace(request, ws):
    workspace_page(request, ws)
    return redirect("frontend:compute", ws=ws)


def coming_soon(nav: str, title: str, what: str, api_path: str):
    """An honest empty page for a feature that is not built yet: what it will be and where its API will live."""

    @login_required
    def view(request, ws):
        context = {**workspace_page(request, ws), "nav": nav, "title": title, "what": what}
        context["api_path"] = api_path.format(ws=ws)
        return render(request, "frontend/coming_soon.html", context)

    return view
