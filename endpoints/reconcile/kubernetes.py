"""Kubernetes deployments (Deployment + Service + HPA) and the endpoint's HTTPRoute; status from the rollout."""
import time

from django.conf import settings

from assets import delivery
from compute.choices import ComputeType
from compute.connections import connection_for, namespace_of
from compute.models import ComputeTarget
from compute.selectors import instance_type_shape
from controlplane.kube import client as kube
from controlplane.kube.pods import pending_reason
from controlplane.kube.resources import Shape
from controlplane.reconciling import ProvisioningState, problem, record_status

from ..manifests import (
    EXPIRES_ANNOTATION,
    HTTPROUTE_API,
    HTTPROUTE_CRD,
    MODEL_URL_KEY,
    SNAPSHOTS_ANNOTATION,
    code_secret_manifest,
    code_secret_name,
    deployment_manifest,
    deployment_object_name,
    endpoint_object_name,
    fetched_snapshots,
    hpa_manifest,
    httproute_manifest,
    service_manifest,
    snapshots_label,
)
from ..models import OnlineDeployment, OnlineEndpoint
from ..spec.placement import instance_shape

LOOK_EVERY = 3.0


def _names(deployment: OnlineDeployment) -> tuple[str, str]:
    endpoint = deployment.endpoint
    return namespace_of(endpoint.compute), deployment_object_name(endpoint.workspace.name, endpoint.name, deployment.name)


def placement_shape(deployment: OnlineDeployment) -> Shape | None:
    """Where the pods go: a managed deployment's placement (a compute cluster's pool, or nodes of its size on a
    Kubernetes compute), else its instance type on the endpoint's compute."""
    endpoint = deployment.endpoint
    if deployment.placement:
        return instance_shape(deployment.placement, endpoint.compute.properties.get("node_selector") or {})
    return instance_type_shape(compute=endpoint.compute, name=deployment.instance_type)


def render(deployment: OnlineDeployment) -> list[dict]:
    """Service, Deployment and (for target_utilization) the HPA; with an HPA the replica count is the HPA's.

    With an HPA the Deployment leaves `replicas` out: a forced apply of it would take the field back from the HPA
    on every reconcile and undo its scaling (the Kubernetes docs' advice for HPA targets).
    """
    endpoint = deployment.endpoint
    namespace, name = _names(deployment)
    shape = placement_shape(deployment)
    scale = deployment.spec["scale_settings"]
    common = {"name": name, "namespace": namespace, "workspace": endpoint.workspace.name, "endpoint": endpoint.name}
    replicas = None if scale["type"] == "target_utilization" else deployment.instance_count
    manifests = [
        service_manifest(**common, deployment=deployment.name),
        deployment_manifest(**common, spec=deployment.spec, resources=deployment.resources,
                            placement=shape, replicas=replicas,
                            fetch_image=settings.DOCKYARD_FETCH_IMAGE),
    ]
    if scale["type"] == "target_utilization":
        manifests.append(hpa_manifest(**common, deployment=deployment.name, scale=scale))
    return manifests


def _renew_fetch_urls(conn, deployment: OnlineDeployment) -> None:
    """Keep live fetch URLs of the deployment's current code and model in its Secret: new ones when it names other
    snapshots (the spec changed) or once half of their lifetime has passed (the resync looks at every deployment each
    minute), so a pod started at any time fetches what the spec names."""
    fetched = fetched_snapshots(deployment.spec)
    if not fetched:
        return
    namespace, name = _names(deployment)
    live = kube.get(conn, "v1", "Secret", code_secret_name(name), namespace)
    annotations = (live or {}).get("metadata", {}).get("annotations") or {}
    expires, named = annotations.get(EXPIRES_ANNOTATION, ""), snapshots_label(fetched)
    if annotations.get(SNAPSHOTS_ANNOTATION) == named and not delivery.renewal_due(expires):
        return
    lifetime = settings.DOCKYARD_ARTIFACT_URL_SECONDS
    endpoint = deployment.endpoint
    urls = {}
    for key, reference in fetched.items():
        what = "model" if key == MODEL_URL_KEY else "code"
        snapshot = delivery.snapshot_named(endpoint.workspace, reference)
        if snapshot is None:
            raise delivery.DeliveryRefused(f"The uploaded {what} {reference} is no longer stored in the workspace.")
        urls[key] = delivery.fetch_url(snapshot, lifetime, purpose=f"deployment {endpoint.name}/{deployment.name} {what}")
    kube.apply(conn, code_secret_manifest(name=name, namespace=namespace, workspace=endpoint.workspace.name,
                                          endpoint=endpoint.name, deployment=deployment.name, urls=urls,
                                          expires=int(time.time()) + lifetime, snapshots=named))


def delete_kube_deployment(deployment: OnlineDeployment) -> bool:
    """Remove the deployment's objects; True once the Deployment is gone."""
    conn = connection_for(deployment.endpoint.compute)
    namespace, name = _names(deployment)
    kube.delete(conn, "autoscaling/v2", "HorizontalPodAutoscaler", name, namespace)
    kube.delete(conn, "apps/v1", "Deployment", name, namespace)
    kube.delete(conn, "v1", "Service", name, namespace)
    kube.delete(conn, "v1", "Secret", code_secret_name(name), namespace)
    return kube.get(conn, "apps/v1", "Deployment", name, namespace) is None


def reconcile_kube_deployment(deployment: OnlineDeployment) -> float | None:
    """Apply the objects, then read the rollout: Succeeded when every replica of this generation is available."""
    conn = connection_for(deployment.endpoint.compute)
    manifests = render(deployment)
    if deployment.spec["scale_settings"]["type"] == "default":
        # Before the Deployment: an HPA left from target_utilization would clamp the new replica count to its bounds.
        namespace, name = _names(deployment)
        kube.delete(conn, "autoscaling/v2", "HorizontalPodAutoscaler", name, namespace)
    try:
        _renew_fetch_urls(conn, deployment)
        live = [kube.apply(conn, manifest) for manifest in manifests]
    except delivery.DeliveryRefused as exc:
        record_status(deployment, ProvisioningState.FAILED, [problem("SnapshotMissing", str(exc))], manifests=manifests)
        return None
    except kube.KubeRejected as exc:
        record_status(deployment, ProvisioningState.FAILED, [problem("Rejected", f"The cluster refused the deployment: {exc}")], manifests=manifests)
        return None
    pods = kube.list_objects(conn, "v1", "Pod", live[1]["metadata"]["namespace"], f"dockyard.dev/online-deployment={live[1]['metadata']['name']}")
    state, errors, status = observe_rollout(live[1], pods, deployment)
    if state not in (ProvisioningState.SUCCEEDED, ProvisioningState.FAILED):
        status["reason"] = _placement_gone(deployment) or status["reason"]
    record_status(deployment, state, errors, status=status, manifests=manifests)
    return None if state in (ProvisioningState.SUCCEEDED, ProvisioningState.FAILED) else LOOK_EVERY


def _placement_gone(deployment: OnlineDeployment) -> str:
    """Why a managed deployment's pods cannot start: the compute cluster it was placed on is gone ("" otherwise; asked
    only while the rollout waits, so a settled deployment costs no query)."""
    placement = deployment.placement
    if placement.get("compute_type") != "amlcompute":
        return ""
    there = ComputeTarget.objects.filter(workspace_id=deployment.endpoint.workspace_id, name=placement["compute"],
                                         type=ComputeType.AMLCOMPUTE).exclude(provisioning_state=ProvisioningState.DELETING)
    if there.exists():
        return ""
    return (f"Compute cluster '{placement['compute']}' this deployment was placed on is gone or being deleted: send the "
            f"deployment again (PATCH) to place it on another compute cluster of size {placement['instance_type']}.")


def observe_rollout(live: dict, pods: list[dict], deployment: OnlineDeployment) -> tuple[str, list, dict]:
    """(provisioning state, errors, status) from a Deployment object and its pods."""
    spec, status = live.get("spec") or {}, live.get("status") or {}
    desired = spec.get("replicas", 1)
    scale = deployment.spec["scale_settings"]
    if scale["type"] == "target_utilization":
        # The HPA raises the Deployment's default of 1 to min_instances only at its first sync (up to 15 s later): until
        # then, 1 ready replica is not the rollout done. Its own status is not read: it is empty before that sync and
        # says desiredReplicas 0 on a cluster without metrics.
        desired = max(desired, scale["min_instances"])
    counts = {key: status.get(key, 0) for key in ("replicas", "readyReplicas", "updatedReplicas", "availableReplicas")}
    current = status.get("observedGeneration", 0) >= live["metadata"].get("generation", 1)
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    progressing = conditions.get("Progressing") or {}
    waiting = [pod for pod in pods if (pod.get("status") or {}).get("phase") == "Pending"]
    summary = {"state": "Running", "replicas": desired, "ready_replicas": counts["readyReplicas"],
               "updated_replicas": counts["updatedReplicas"], "available_replicas": counts["availableReplicas"], "reason": ""}
    if progressing.get("reason") == "ProgressDeadlineExceeded":
        reason = progressing.get("message") or "The rollout did not progress in time."
        return ProvisioningState.FAILED, [problem("ProgressDeadlineExceeded", reason)], {**summary, "state": "Failed", "reason": reason}
    if current and counts["updatedReplicas"] >= desired and counts["availableReplicas"] >= desired:
        return ProvisioningState.SUCCEEDED, [], summary
    _, reason = pending_reason(waiting or pods, (spec.get("template") or {}).get("spec", {}).get("nodeSelector") or {})
    if not pods:
        reason = "Waiting for the Deployment's pods to be created."
    # A first rollout stays Creating until it succeeds (observed_generation is written on every look, so it cannot say).
    state = ProvisioningState.CREATING if deployment.provisioning_state == ProvisioningState.CREATING else ProvisioningState.UPDATING
    return state, [], {**summary, "state": "RollingOut", "reason": reason}


def reconcile_route(endpoint: OnlineEndpoint) -> dict:
    """The HTTPRoute with the traffic weights when the Gateway API is installed; says why not otherwise."""
    conn = connection_for(endpoint.compute)
    namespace = namespace_of(endpoint.compute)
    name = endpoint_object_name(endpoint.workspace.name, endpoint.name)
    if kube.get(conn, "apiextensions.k8s.io/v1", "CustomResourceDefinition", HTTPROUTE_CRD) is None:
        return {"state": "Unavailable", "reason": "The cluster has no Gateway API (HTTPRoute CRD): Dockyard's score URL routes the traffic.", "manifest": None}
    services = {item.name: deployment_object_name(endpoint.workspace.name, endpoint.name, item.name)
                for item in endpoint.deployments.exclude(provisioning_state=ProvisioningState.DELETING)}
    backends = {services[deployment]: weight for deployment, weight in endpoint.traffic.items() if deployment in services}
    mirror = next(((services[d], p) for d, p in endpoint.mirror_traffic.items() if p and d in services), None)
    manifest = httproute_manifest(name=name, namespace=namespace, workspace=endpoint.workspace.name, endpoint=endpoint.name,
                                  gateway=settings.DOCKYARD_GATEWAY, backends=backends, mirror=mirror)
    try:
        live = kube.apply(conn, manifest)
    except kube.KubeRejected as exc:  # e.g. an older Gateway API without requestMirror.percent: say so, do not crash
        return {"state": "Rejected", "reason": f"The cluster refused the HTTPRoute: {exc}", "manifest": manifest}
    parents = (live.get("status") or {}).get("parents") or []
    accepted = any(c.get("type") == "Accepted" and c.get("status") == "True" for p in parents for c in p.get("conditions") or [])
    return {"state": "Accepted" if accepted else "Pending", "reason": "" if accepted else f"Waiting for Gateway '{settings.DOCKYARD_GATEWAY}' to accept the route.",
            "manifest": manifest}


def delete_route(endpoint: OnlineEndpoint) -> None:
    conn = connection_for(endpoint.compute)
    namespace = namespace_of(endpoint.compute)
    kube.delete(conn, HTTPROUTE_API, "HTTPRoute", endpoint_object_name(endpoint.workspace.name, endpoint.name), namespace)
