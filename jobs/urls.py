from django.urls import path
from rest_framework.routers import SimpleRouter

from . import views

router = SimpleRouter(trailing_slash=True)
router.trailing_slash = "/?"  # API.md writes `jobs/{name}/logs` and `/cancel` without the slash; both spellings work
router.register(r"workspaces/(?P<workspace_name>[^/.]+)/jobs", views.JobViewSet, basename="job")

urlpatterns = [
    *router.urls,
    # Not under a workspace: the signed token names the job (see jobs/uploads.py).
    path("artifacts/outputs/<str:token>/<str:rank>/", views.OutputsUploadView.as_view(), name="job-outputs-upload"),
]
