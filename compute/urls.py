from django.urls import path
from rest_framework.routers import SimpleRouter

from . import views

router = SimpleRouter(trailing_slash=True)
router.register(r"workspaces/(?P<workspace_name>[^/.]+)/computes", views.ComputeViewSet, basename="compute")

urlpatterns = router.urls + [
    path("vm-sizes/", views.VmSizeView.as_view(), name="vm-sizes"),
    path("compute-types/", views.ComputeTypeView.as_view(), name="compute-types"),
]
