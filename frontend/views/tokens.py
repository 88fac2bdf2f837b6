"""The user's own API tokens: list, create (the raw token is shown once), revoke."""
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from workspaces import selectors, services

from ..forms.workspaces import TokenForm
from .common import remembered_workspace


@login_required
def tokens(request):
    """List and create; a created token is rendered in this response only, never stored anywhere readable."""
    form = TokenForm(request.POST or None)
    created = None
    if request.method == "POST" and form.is_valid():
        token, raw = services.token_create(
            user=request.user, name=form.cleaned_data["name"], days=form.cleaned_data["expires_in_days"]
        )
        created, form = {"token": token, "raw": raw}, TokenForm()
    context = {
        **remembered_workspace(request), "nav": "tokens", "form": form, "created": created,
        "tokens": selectors.token_list(user=request.user), "now": timezone.now(),
    }
    response = render(request, "frontend/tokens.html", context)
    if created:
        response["Cache-Control"] = "no-store"  # the page holds a secret: no back-button or proxy copy
    return response


@login_required
@require_POST
def revoke(request, token_id):
    token = selectors.token_get(user=request.user, token_id=token_id)
    if token is None:
        raise Http404
    services.token_revoke(user=request.user, token=token)
    messages.success(request, f"Token {token.prefix}… revoked; scripts using it now get 401.")
    return redirect("frontend:tokens")
