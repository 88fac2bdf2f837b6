from django.urls import path
from rest_framework.routers import SimpleRouter

from . import views

router = SimpleRouter(trailing_slash=True)
router.register(r"workspaces/(?P<workspace_name>[^/.]+)/blobs", views.BlobViewSet, basename="blob")
router.register(r"workspaces/(?P<workspace_name>[^/.]+)/snapshots", views.SnapshotViewSet, basename="snapshot")
router.register(r"workspaces/(?P<workspace_name>[^/.]+)/uploads", views.UploadViewSet, basename="upload")

urlpatterns = [
    *router.urls,
    path("artifacts/fetch/<str:token>/", views.ArtifactFetchView.as_view(), name="artifact-fetch"),
]
