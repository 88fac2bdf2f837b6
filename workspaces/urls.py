from rest_framework.routers import SimpleRouter

from . import views

router = SimpleRouter(trailing_slash=True)
router.register("workspaces", views.WorkspaceViewSet, basename="workspace")
router.register(r"workspaces/(?P<workspace_name>[^/.]+)/members", views.MemberViewSet, basename="member")
router.register(r"workspaces/(?P<workspace_name>[^/.]+)/events", views.EventViewSet, basename="event")
router.register("tokens", views.TokenViewSet, basename="token")
router.register("users", views.UserViewSet, basename="user")

urlpatterns = router.urls
