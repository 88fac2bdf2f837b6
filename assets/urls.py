from django.urls import path, re_path
from rest_framework.routers import SimpleRouter

from . import views

WORKSPACE = r"^workspaces/(?P<workspace_name>[^/.]+)"

router = SimpleRouter(trailing_slash=True)
router.register(r"workspaces/(?P<workspace_name>[^/.]+)/blobs", views.BlobViewSet, basename="blob")
router.register(r"workspaces/(?P<workspace_name>[^/.]+)/snapshots", views.SnapshotViewSet, basename="snapshot")
router.register(r"workspaces/(?P<workspace_name>[^/.]+)/uploads", views.UploadViewSet, basename="upload")


def asset_routes(collection: str, viewset, basename: str) -> list:
    """API.md: `{collection}/` (GET, POST), `{collection}/{name}/versions/{version}/` (GET, DELETE: archive) and its
    `restore/` (POST: Azure ML's restore of an archived version)."""
    return [
        re_path(rf"{WORKSPACE}/{collection}/$", viewset.as_view({"get": "list", "post": "create"}),
                name=f"{basename}-list"),
        re_path(rf"{WORKSPACE}/{collection}/(?P<name>[^/]+)/versions/(?P<version>[^/]+)/$",
                viewset.as_view({"get": "retrieve", "delete": "destroy"}), name=f"{basename}-detail"),
        re_path(rf"{WORKSPACE}/{collection}/(?P<name>[^/]+)/versions/(?P<version>[^/]+)/restore/$",
                viewset.as_view({"post": "restore"}), name=f"{basename}-restore"),
    ]


urlpatterns = [
    *router.urls,
    *asset_routes("environments", views.EnvironmentViewSet, "environment"),
    *asset_routes("models", views.ModelViewSet, "model"),
    *asset_routes("data", views.DataViewSet, "data"),
    path("artifacts/fetch/<str:token>/", views.ArtifactFetchView.as_view(), name="artifact-fetch"),
]
