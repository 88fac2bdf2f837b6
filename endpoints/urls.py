from django.urls import path
from rest_framework.routers import SimpleRouter

from . import views

router = SimpleRouter(trailing_slash=True)
router.trailing_slash = "/?"  # API.md writes `score` and `keys` without the slash; both spellings work
router.register(r"workspaces/(?P<workspace_name>[^/.]+)/online-endpoints", views.OnlineEndpointViewSet, basename="online-endpoint")
router.register(
    r"workspaces/(?P<workspace_name>[^/.]+)/online-endpoints/(?P<endpoint_name>[^/]+)/deployments",
    views.OnlineDeploymentViewSet, basename="online-deployment",
)

urlpatterns = [
    path("workspaces/<str:workspace_name>/online-endpoints/<str:name>/score", views.ScoreView.as_view(), name="score"),
    # the same view with a trailing slash, described once in the schema (as API.md writes it, without)
    path("workspaces/<str:workspace_name>/online-endpoints/<str:name>/score/", views.ScoreView.as_view(schema=None)),
    *router.urls,
]
