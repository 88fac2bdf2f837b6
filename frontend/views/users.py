"""Accounts: staff create a user (who gets a one-time link), and the new user sets a password through that link."""
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache

from workspaces import selectors, services

from ..forms.workspaces import SetPasswordForm, UserForm
from .common import USER_ERRORS, error_rows, remembered_workspace

# The link's token is in the page's address: it must not leave in a Referer to another site or stay in a cache.
# (`no-referrer` would also make the browser send `Origin: null` with the form, which CSRF checking refuses.)
PRIVATE_HEADERS = {"Referrer-Policy": "same-origin", "Cache-Control": "no-store"}


@login_required
def user_create(request):
    """Staff: a new account (user name, optional e-mail); its one-time link is shown in this response only."""
    if not request.user.is_staff:
        raise PermissionDenied("Only staff can create users.")
    form = UserForm(request.POST or None, initial={"username": request.GET.get("username", "")})
    created = None
    if request.method == "POST" and form.is_valid():
        try:
            user, invitation, raw = services.user_create(actor=request.user, **form.cleaned_data)
        except USER_ERRORS as exc:
            for row in error_rows(exc, target="username"):
                form.add_error("email" if row["target"] == "email" else "username", row["message"])
        else:
            link = request.build_absolute_uri(reverse("frontend:invitation", args=[raw]))
            created, form = {"user": user, "link": link, "expires_at": invitation.expires_at}, UserForm()
    context = {**remembered_workspace(request), "nav": "users", "form": form, "created": created,
               "back_to": request.GET.get("ws", "")}
    response = render(request, "frontend/users/new.html", context)
    if created:
        response["Cache-Control"] = "no-store"  # the page holds the link: no back-button or proxy copy
    return response


class SignIn(auth_views.LoginView):
    """The studio's sign-in; `?username=` fills the name in (where a just-set password sends its user)."""

    def get_initial(self):
        return {**super().get_initial(), "username": self.request.GET.get("username", "")}


@never_cache
def invitation(request, token):
    """The one-time link: anyone holding it sets the account's first password, once, before it expires."""
    invited = selectors.invitation_open(raw=token)
    if invited is None:
        return _private(render(request, "frontend/invitation.html", {"gone": services.INVITATION_GONE}, status=404))
    form = SetPasswordForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = services.invitation_accept(raw=token, password=form.cleaned_data["password"])
        except USER_ERRORS as exc:
            for row in error_rows(exc, target="password"):
                form.add_error("password", row["message"])
        else:
            messages.success(request, f"Your password is set, {user.username}: sign in with it.")
            return redirect(f"{reverse('frontend:login')}?username={user.username}")
    return _private(render(request, "frontend/invitation.html", {"form": form, "invited": invited.user}))


def _private(response):
    for header, value in PRIVATE_HEADERS.items():
        response[header] = value
    return response
