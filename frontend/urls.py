from django.contrib.auth import views as auth_views
from django.urls import include, path

from .views import (
    assets,
    catalog,
    clusters,
    compute,
    deployments,
    endpoints,
    home,
    instance_types,
    instances,
    jobs,
    members,
    pools,
    tokens,
    uploads,
    users,
    vms,
)

app_name = "frontend"

workspace_urls = [
    path("", home.workspace, name="workspace"),
    path("compute/", compute.hub, name="compute"),
    # Two-segment paths for creating, so that a compute may be called "new".
    path("compute/<str:name>/", compute.detail, name="compute-detail"),
    path("compute/<str:name>/delete/", compute.delete, name="compute-delete"),
    # A compute instance's state panel (polled) and its Start / Stop / Restart.
    path("compute/<str:name>/instance/", instances.panel, name="instance-panel"),
    path("compute/<str:name>/instance/<str:verb>/", instances.action, name="instance-action"),
    # An attached VM's panel (polled while it attaches) and its host-key confirmation.
    path("compute/<str:name>/vm/", vms.panel, name="vm-panel"),
    path("compute/<str:name>/confirm-host-key/", vms.confirm_host_key, name="vm-confirm-host-key"),
    # A Kubernetes compute's sections, before the create routes so that a compute called "new" keeps them.
    path("compute/<str:name>/status/", clusters.status, name="cluster-status"),
    path("compute/<str:name>/pool/", pools.pool, name="compute-pool"),
    path("compute/<str:name>/recheck/", clusters.recheck, name="cluster-recheck"),
    path("compute/<str:name>/nodes/", clusters.nodes, name="cluster-nodes"),
    path("compute/<str:name>/instance-types/", clusters.instance_types, name="instance-types"),
    # Two-segment paths for creating, so that an instance type may be called "new".
    path("compute/<str:name>/instance-types/new/form/", instance_types.create, name="instance-type-create"),
    path("compute/<str:name>/instance-types/new/yaml/", instance_types.paste, name="instance-type-paste"),
    path("compute/<str:name>/instance-types/new/preview/", instance_types.preview, name="instance-type-preview"),
    path("compute/<str:name>/instance-types/<str:it>/", instance_types.detail, name="instance-type"),
    path("compute/<str:name>/instance-types/<str:it>/edit/", instance_types.edit, name="instance-type-edit"),
    path("compute/<str:name>/instance-types/<str:it>/delete/", instance_types.delete, name="instance-type-delete"),
    path("compute/new/kubernetes/contexts/", clusters.contexts, name="kubeconfig-contexts"),
    path("compute/new/<str:compute_type>/", compute.create, name="compute-create"),
    path("compute/new/<str:compute_type>/preview/", compute.preview, name="compute-preview"),
    path("compute/new/<str:compute_type>/yaml/", compute.paste, name="compute-paste"),
    path("jobs/", jobs.job_list, name="jobs"),
    # Two-segment paths for submitting, so that a job may be called "new" (its tabs have other names).
    path("jobs/new/form/", jobs.create, name="job-create"),
    path("jobs/new/paste/", jobs.paste, name="job-paste"),
    path("jobs/new/preview/", jobs.preview, name="job-preview"),
    path("jobs/new/instance-types/", jobs.instance_types, name="job-instance-types"),
    path("jobs/<str:name>/", jobs.detail, name="job"),
    path("jobs/<str:name>/status/", jobs.status, name="job-status"),
    path("jobs/<str:name>/cancel/", jobs.cancel, name="job-cancel"),
    path("jobs/<str:name>/delete/", jobs.delete, name="job-delete"),
    path("jobs/<str:name>/<str:section>/", jobs.detail, name="job-section"),
    path("endpoints/", endpoints.endpoint_list, name="endpoints"),
    path("endpoints/<str:name>/", endpoints.detail, name="endpoint"),
    path("endpoints/<str:name>/status/", endpoints.status, name="endpoint-status"),
    path("endpoints/<str:name>/traffic/", endpoints.traffic, name="endpoint-traffic"),
    path("endpoints/<str:name>/test/", endpoints.test, name="endpoint-test"),
    path("endpoints/<str:name>/keys/regenerate/", endpoints.regenerate, name="endpoint-regenerate"),
    path("endpoints/<str:name>/delete/", endpoints.delete, name="endpoint-delete"),
    # Two-segment paths for adding, so that a deployment may be called "new".
    path("endpoints/<str:name>/deployments/new/form/", deployments.create, name="deployment-create"),
    path("endpoints/<str:name>/deployments/new/paste/", deployments.paste, name="deployment-paste"),
    path("endpoints/<str:name>/deployments/new/preview/", deployments.preview, name="deployment-preview"),
    path("endpoints/<str:name>/deployments/<str:deployment>/scale/", deployments.scale, name="deployment-scale"),
    path("endpoints/<str:name>/deployments/<str:deployment>/delete/", deployments.delete, name="deployment-delete"),
    path("endpoints/<str:name>/<str:section>/", endpoints.detail, name="endpoint-section"),
    path("assets/", assets.asset_list, name="assets"),
    # Two-segment paths for registering, so that an asset may be called "new".
    path("assets/<str:kind>/new/yaml/", assets.create, name="asset-create"),
    path("assets/<str:kind>/<str:name>/", assets.versions, name="asset"),
    path("assets/<str:kind>/<str:name>/versions/<str:version>/", assets.version, name="asset-version"),
    path("assets/<str:kind>/<str:name>/versions/<str:version>/archive/", assets.archive, name="asset-archive"),
    path("assets/<str:kind>/<str:name>/versions/<str:version>/restore/", assets.restore, name="asset-restore"),
    path("uploads/plan/", uploads.plan, name="upload-plan"),
    path("members/", members.members, name="members"),
    path("members/<str:username>/role/", members.member_role, name="member-role"),
    path("members/<str:username>/remove/", members.member_remove, name="member-remove"),
    path("events/", members.events, name="events"),
    path("local-compute/", members.local_compute, name="local-compute"),
]

urlpatterns = [
    path("", home.home, name="home"),
    path(
        "login/",
        users.SignIn.as_view(template_name="frontend/login.html", redirect_authenticated_user=True),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("tokens/", tokens.tokens, name="tokens"),
    path("vm-sizes/", catalog.vm_sizes, name="vm-sizes"),
    path("tokens/<int:token_id>/revoke/", tokens.revoke, name="token-revoke"),
    path("users/new/", users.user_create, name="user-create"),
    path("invitation/<str:token>/", users.invitation, name="invitation"),
    path("w/<str:ws>/", include(workspace_urls)),
]
