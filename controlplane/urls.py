from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerView

from controlplane import api

api_v1 = [
    path("", include("workspaces.urls")),
    path("", include("compute.urls")),
    path("", include("jobs.urls")),
    path("", include("endpoints.urls")),
    path("openapi.json", SpectacularJSONAPIView.as_view(), name="openapi"),  # JSON, as its name says
    path("docs/", SpectacularSwaggerView.as_view(url_name="openapi"), name="api-docs"),
]

urlpatterns = [
    path("api/v1/", include(api_v1)),
    path("admin/", admin.site.urls),
    path("", include("frontend.urls")),
]

handler404 = api.handler404
handler500 = api.handler500
