from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerSplitView

from controlplane import api

api_v1 = [
    path("", include("workspaces.urls")),
    path("", include("compute.urls")),
    path("", include("jobs.urls")),
    path("", include("endpoints.urls")),
    path("", include("assets.urls")),
    path("openapi.json", SpectacularJSONAPIView.as_view(), name="openapi"),  # JSON, as its name says
    # the split view serves Swagger UI's start-up script as a file (?script), so the page needs no inline script (CSP)
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="openapi"), name="api-docs"),
]

urlpatterns = [
    path("api/v1/", include(api_v1)),
    path("admin/", admin.site.urls),
    path("", include("frontend.urls")),
]

handler404 = api.handler404
handler500 = api.handler500
