from django.contrib.auth import views as auth_views
from django.urls import include, path

from .views import compute, home, members, tokens

app_name = "frontend"

workspace_urls = [
    path("", home.workspace, name="workspace"),
    path("compute/", compute.hub, name="compute"),
    # Two-segment paths for creating, so that a compute may be called "new".
    path("compute/<str:name>/", compute.detail, name="compute-detail"),
    path("compute/<str:name>/delete/", compute.delete, name="compute-delete"),
    path("compute/new/<str:compute_type>/", compute.create, name="compute-create"),
    path("compute/new/<str:compute_type>/preview/", compute.preview, name="compute-preview"),
    path("jobs/", home.jobs, name="jobs"),
    path("endpoints/", home.endpoints, name="endpoints"),
    path("members/", members.members, name="members"),
    path("members/<str:username>/role/", members.member_role, name="member-role"),
    path("members/<str:username>/remove/", members.member_remove, name="member-remove"),
    path("events/", members.events, name="events"),
]

urlpatterns = [
    path("", home.home, name="home"),
    path(
        "login/",
        auth_views.LoginView.as_view(template_name="frontend/login.html", redirect_authenticated_user=True),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("tokens/", tokens.tokens, name="tokens"),
    path("tokens/<int:token_id>/revoke/", tokens.revoke, name="token-revoke"),
    path("w/<str:ws>/", include(workspace_urls)),
]
