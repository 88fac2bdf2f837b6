"""Members of a workspace (owners add, re-role and remove them) and the workspace's audit events."""
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseClientRedirect
from rest_framework.exceptions import Throttled, ValidationError

from workspaces import access, selectors, services
from workspaces.choices import Role

from ..forms.workspaces import MemberForm, RoleForm
from .common import USER_ERRORS, error_rows, require, workspace_page

EVENTS_PER_PAGE = 25


def members_context(request, ws: str, **extra) -> dict:
    context = workspace_page(request, ws)
    members = selectors.member_list(workspace=context["workspace"])
    return {**context, "nav": "members", "members": members, "roles": Role.choices, **extra}


@login_required
def members(request, ws):
    """The member list; owners also get the add form, posted here."""
    context = members_context(request, ws)
    form = MemberForm(request.POST or None, initial={"username": request.GET.get("username", "")})
    missing = ""
    if request.method == "POST":
        require(request.user, context["workspace"], "manage")
        if form.is_valid():
            try:
                membership = services.member_add(
                    actor=request.user, workspace=context["workspace"], **form.cleaned_data
                )
            except Throttled as exc:
                form.add_error("username", str(exc.detail))
            except USER_ERRORS as exc:
                username, rows = form.cleaned_data["username"], error_rows(exc, target="username")
                for row in rows:
                    form.add_error("role" if row["target"] == "role" else "username", row["message"])
                # Staff get the way forward as a link: create the account, then come back and add it.
                if request.user.is_staff and any(row["target"] == "user" for row in rows):
                    missing = username
            else:
                messages.success(request, f"{membership.user.username} is now a {membership.role} of {ws}.")
                return redirect("frontend:members", ws=ws)
    return render(request, "frontend/workspace/members.html", {**context, "form": form, "missing_user": missing})


def membership_or_404(workspace, username: str):
    membership = selectors.member_get(workspace=workspace, username=username)
    if membership is None:
        raise Http404
    return membership


def member_change(change):
    """A POST that changes one membership; htmx gets the refreshed table, with the service's refusal shown in it."""

    @login_required
    @require_POST
    def view(request, ws, username):
        workspace = access.workspace_for(request.user, ws)
        require(request.user, workspace, "manage")
        membership = membership_or_404(workspace, username)
        error = ""
        try:
            change(request, membership)
        except USER_ERRORS as exc:
            error = error_rows(exc)[0]["message"]
        try:
            # Read again, permissions included: an owner may just have changed or removed their own membership.
            context = members_context(request, ws, member_error=error)
        except Http404:
            messages.info(request, f"You are no longer a member of {ws}.")
            return HttpResponseClientRedirect(reverse("frontend:home")) if request.htmx else redirect("frontend:home")
        if not request.htmx:
            if error:
                messages.error(request, error)
            return redirect("frontend:members", ws=ws)
        return render(request, "frontend/workspace/_members.html", context)

    return view


def change_role(request, membership):
    form = RoleForm(request.POST)
    if not form.is_valid():
        raise ValidationError(form.errors)
    services.member_update(actor=request.user, membership=membership, role=form.cleaned_data["role"])


def remove(request, membership):
    services.member_remove(actor=request.user, membership=membership)


member_role = member_change(change_role)
member_remove = member_change(remove)


@login_required
@require_POST
def local_compute(request, ws):
    """Staff turn local compute (and its network) on or off for the workspace; the service audits it."""
    workspace = access.workspace_for(request.user, ws)
    if not request.user.is_staff:
        raise PermissionDenied("Only staff can enable or disable local compute for a workspace.")
    try:
        services.workspace_local_compute_set(
            user=request.user, workspace=workspace, enabled="enabled" in request.POST, network="network" in request.POST
        )
    except USER_ERRORS as exc:
        messages.error(request, error_rows(exc)[0]["message"])
    else:
        state = "enabled" if workspace.local_compute_enabled else "off"
        messages.success(request, f"Local compute is {state} for {ws}.")
    return redirect("frontend:members", ws=ws)


@login_required
def events(request, ws):
    """Audit events newest first; "Load older" (htmx) asks for the page before the last event shown."""
    context = workspace_page(request, ws)
    before = request.GET.get("before", "")
    page = selectors.event_page(workspace=context["workspace"], before=before, size=EVENTS_PER_PAGE + 1)
    context.update(nav="events", events=page[:EVENTS_PER_PAGE], more=len(page) > EVENTS_PER_PAGE)
    template = "frontend/workspace/_event_rows.html" if request.htmx else "frontend/workspace/events.html"
    return render(request, template, context)
