from django.urls import path
from rest_framework.routers import SimpleRouter

from . import views

router = SimpleRouter(trailing_slash=True)
router.register(r"workspaces/(?P<workspace_name>[^/.]+)/computes", views.ComputeViewSet, basename="compute")
router.register(
    r"workspaces/(?P<workspace_name>[^/.]+)/computes/(?P<compute_name>[^/]+)/instancetypes",
    views.InstanceTypeViewSet, basename="instancetype",
)

urlpatterns = router.urls + [
    path("vm-sizes/", views.VmSizeView.as_view(), name="vm-sizes"),
    path("vm-sizes/<str:size>/", views.VmSizeDetailView.as_view(), name="vm-size"),
    path("workspaces/<str:workspace_name>/computes/<str:compute_name>/nodes/", views.NodeView.as_view(), name="nodes"),
    path("compute-types/", views.ComputeTypeView.as_view(), name="compute-types"),
]
