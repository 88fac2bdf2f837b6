"""What model serving needs of the fake: probe and HPA v2 validation as kube-apiserver 1.36 does it, the HPA
controller keeping replicas within bounds, crash loop back-off, and the Gateway API HTTPRoute CRD (standard channel)."""
import copy
import json

import pytest
from kubernetes import client

from .helpers import deployment_manifest, status_of

PROBE = {"httpGet": {"path": "/", "port": 5001}, "periodSeconds": 10, "initialDelaySeconds": 10, "timeoutSeconds": 2,
         "successThreshold": 1, "failureThreshold": 30}


@pytest.fixture
def apps(kube_api):
    return client.AppsV1Api(kube_api)


@pytest.fixture
def core(kube_api):
    return client.CoreV1Api(kube_api)


@pytest.fixture
def autoscaling(kube_api):
    return client.AutoscalingV2Api(kube_api)


def with_probes(**probes) -> dict:
    manifest = deployment_manifest("web", replicas=1)
    manifest["spec"]["template"]["spec"]["containers"][0].update(probes)
    return manifest


def causes(body: dict) -> dict:
    found = {}
    for cause in body["details"]["causes"]:
        found.setdefault(cause["field"], cause["message"])
    return found


# --- probes --------------------------------------------------------------------------------------

def test_probes_are_accepted_and_defaulted_like_the_server(apps):
    created = apps.create_namespaced_deployment("default", with_probes(
        livenessProbe=PROBE, readinessProbe={"httpGet": {"port": "http"}, "successThreshold": 2}))
    container = created.spec.template.spec.containers[0]
    assert container.liveness_probe.http_get.scheme == "HTTP" and container.liveness_probe.timeout_seconds == 2
    readiness = container.readiness_probe
    assert (readiness.http_get.path, readiness.timeout_seconds, readiness.period_seconds, readiness.failure_threshold,
            readiness.success_threshold) == ("/", 1, 10, 3, 2)


@pytest.mark.parametrize("probe, kind, field, message", [
    ({**PROBE, "successThreshold": 2}, "livenessProbe", "livenessProbe.successThreshold", "Invalid value: 2: must be 1"),
    ({**PROBE, "successThreshold": 3}, "startupProbe", "startupProbe.successThreshold", "Invalid value: 3: must be 1"),
    ({**PROBE, "periodSeconds": -1}, "readinessProbe", "readinessProbe.periodSeconds",
     "Invalid value: -1: must be greater than or equal to 0"),
    ({**PROBE, "initialDelaySeconds": -5}, "livenessProbe", "livenessProbe.initialDelaySeconds",
     "Invalid value: -5: must be greater than or equal to 0"),
    ({"periodSeconds": 5}, "livenessProbe", "livenessProbe", "Required value: must specify a handler type"),
    ({**PROBE, "tcpSocket": {"port": 5001}}, "readinessProbe", "readinessProbe.tcpSocket",
     "Forbidden: may not specify more than 1 handler type"),
    ({**PROBE, "httpGet": {"path": "/", "port": 70000}}, "livenessProbe", "livenessProbe.httpGet.port",
     "Invalid value: 70000: must be between 1 and 65535, inclusive"),
    ({**PROBE, "httpGet": {"path": "/", "port": "Http_Port"}}, "livenessProbe", "livenessProbe.httpGet.port",
     'Invalid value: "Http_Port": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)'),
    ({**PROBE, "httpGet": {"path": "/", "port": 5001, "scheme": "TCP"}}, "livenessProbe", "livenessProbe.httpGet.scheme",
     'Unsupported value: "TCP": supported values: "HTTP", "HTTPS"'),
    ({**PROBE, "terminationGracePeriodSeconds": 5}, "readinessProbe", "readinessProbe.terminationGracePeriodSeconds",
     "Invalid value: 5: must not be set for readinessProbes"),
])
def test_invalid_probes_are_422_naming_the_field(apps, probe, kind, field, message):
    code, body = status_of(apps.create_namespaced_deployment, "default", with_probes(**{kind: probe}))
    path = f"spec.template.spec.containers[0].{field}"
    assert code == 422 and causes(body)[path] == message


# --- HPA v2 --------------------------------------------------------------------------------------

def hpa(**spec) -> dict:
    base = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2, "maxReplicas": 5,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                                     "averageUtilization": 70}}}]}
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
            "spec": {**base, **spec}}


@pytest.mark.parametrize("spec, field, message", [
    ({"minReplicas": 0}, "spec.minReplicas", "Invalid value: 0: must be greater than or equal to 1"),
    ({"maxReplicas": 0, "minReplicas": 1}, "spec.maxReplicas", "Invalid value: 0: must be greater than 0"),
    ({"maxReplicas": 1}, "spec.maxReplicas", "Invalid value: 1: must be greater than or equal to `minReplicas`"),
    ({"scaleTargetRef": {"kind": "Deployment"}}, "spec.scaleTargetRef.name", "Required value"),
    ({"metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 0}}}]},
     "spec.metrics[0].resource.target.averageUtilization", "Invalid value: 0: must be greater than 0"),
    ({"metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}]},
     "spec.metrics[0].resource.target.averageUtilization", "Required value: must set either a target raw value or a target utilization"),
    ({"metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Percent", "averageUtilization": 5}}}]},
     "spec.metrics[0].resource.target.type", 'Invalid value: "Percent": must be either Utilization, Value, or AverageValue'),
    ({"metrics": [{"type": "Resource"}]}, "spec.metrics[0].resource", "Required value: must populate information for the given metric source"),
    ({"metrics": [{"type": "Memory", "resource": {"name": "memory"}}]}, "spec.metrics[0].type",
     'Unsupported value: "Memory": supported values: "Object", "Pods", "Resource", "External", "ContainerResource"'),
])
def test_invalid_hpas_are_422_naming_the_field(autoscaling, spec, field, message):
    code, body = status_of(autoscaling.create_namespaced_horizontal_pod_autoscaler, "default", hpa(**spec))
    assert code == 422 and causes(body)[field] == message


def test_the_hpa_controller_keeps_replicas_within_bounds(fake_kube, apps, autoscaling):
    apps.create_namespaced_deployment("default", deployment_manifest("web", replicas=1))
    created = autoscaling.create_namespaced_horizontal_pod_autoscaler("default", hpa(), _preload_content=False)
    fresh = json.loads(created.data)
    # as kube-apiserver serves a new HPA: no generation, the status its one non-omitempty field
    assert "generation" not in fresh["metadata"] and fresh["status"] == {"desiredReplicas": 0}
    fake_kube.advance(14)  # the controller first syncs an HPA one sync period (15 s) after it appeared
    assert apps.read_namespaced_deployment("web", "default").spec.replicas == 1
    fake_kube.advance(1)
    assert apps.read_namespaced_deployment("web", "default").spec.replicas == 2  # raised to minReplicas
    status = autoscaling.read_namespaced_horizontal_pod_autoscaler("web", "default").status
    conditions = {c.type: (c.status, c.reason) for c in status.conditions}
    assert status.desired_replicas == 2 and status.observed_generation is None
    assert conditions["ScalingActive"] == ("False", "FailedGetResourceMetric")  # no metrics server in the fake
    assert conditions["ScalingLimited"] == ("True", "TooFewReplicas")
    assert fake_kube.events("default", "web", "SuccessfulRescale")[0]["message"] == \
        "New size: 2; reason: Current number of replicas below Spec.MinReplicas"
    apps.patch_namespaced_deployment("web", "default", {"spec": {"replicas": 9}})
    assert apps.read_namespaced_deployment("web", "default").spec.replicas == 9  # until the next sync
    fake_kube.advance(15)
    assert apps.read_namespaced_deployment("web", "default").spec.replicas == 5  # lowered to maxReplicas
    fake_kube.advance(15)
    assert autoscaling.read_namespaced_horizontal_pod_autoscaler("web", "default").status.current_replicas == 5


def test_without_metrics_an_hpa_within_bounds_keeps_desired_replicas_at_zero(fake_kube, apps, autoscaling):
    apps.create_namespaced_deployment("default", deployment_manifest("web", replicas=3))
    autoscaling.create_namespaced_horizontal_pod_autoscaler("default", hpa())
    fake_kube.advance(15)
    status = autoscaling.read_namespaced_horizontal_pod_autoscaler("web", "default").status
    conditions = {c.type: (c.status, c.reason) for c in status.conditions}
    assert (status.current_replicas, status.desired_replicas) == (3, 0)  # never computed: it keeps its 0
    assert conditions == {"AbleToScale": ("True", "SucceededGetScale"),
                          "ScalingActive": ("False", "FailedGetResourceMetric")}
    assert apps.read_namespaced_deployment("web", "default").spec.replicas == 3


def test_an_hpa_without_its_target_says_so(fake_kube, autoscaling):
    autoscaling.create_namespaced_horizontal_pod_autoscaler("default", hpa())
    fake_kube.advance(15)
    status = autoscaling.read_namespaced_horizontal_pod_autoscaler("web", "default").status
    (condition,) = status.conditions
    assert (condition.type, condition.status, condition.reason) == ("AbleToScale", "False", "FailedGetScale")
    assert condition.message.endswith('deployments/scale.apps "web" not found')


# --- crash loops ---------------------------------------------------------------------------------

def test_a_crashing_container_goes_into_crash_loop_back_off(fake_kube, apps, core):
    fake_kube.plan_pods(labels={"app": "web"}, run_seconds=2, exit_code=1, ready=False)
    apps.create_namespaced_deployment("default", deployment_manifest("web", replicas=1))
    fake_kube.advance(3)  # started at 1 s, exited at 3 s: restarted at once
    pod = core.list_namespaced_pod("default", label_selector="app=web").items[0]
    status = pod.status.container_statuses[0]
    assert status.state.running and status.restart_count == 1 and status.last_state.terminated.exit_code == 1
    fake_kube.advance(2)  # exited again: back-off 10 s
    pod = core.read_namespaced_pod(pod.metadata.name, "default")
    status = pod.status.container_statuses[0]
    who = f"{pod.metadata.name}_default({pod.metadata.uid})"
    assert pod.status.phase == "Running" and not status.ready and status.restart_count == 1
    assert (status.state.waiting.reason, status.state.waiting.message) == (
        "CrashLoopBackOff", f"back-off 10s restarting failed container=web pod={who}")
    assert (status.last_state.terminated.reason, status.last_state.terminated.exit_code) == ("Error", 1)
    assert fake_kube.events("default", pod.metadata.name, "BackOff")[0]["message"] == \
        f"Back-off restarting failed container web in pod {who}"
    fake_kube.advance(10)  # restarted after the back-off, then crashes again: 20 s now
    status = core.read_namespaced_pod(pod.metadata.name, "default").status.container_statuses[0]
    assert status.state.running and status.restart_count == 2
    fake_kube.advance(2)
    waiting = core.read_namespaced_pod(pod.metadata.name, "default").status.container_statuses[0].state.waiting
    assert waiting.message.startswith("back-off 20s restarting failed container=web")


# --- the Gateway API CRD -------------------------------------------------------------------------

ROUTE = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": {"name": "ep"},
         "spec": {"parentRefs": [{"name": "gw"}], "rules": [{
             "matches": [{"path": {"type": "PathPrefix", "value": "/team-a/ep"}}],
             "filters": [{"type": "RequestMirror", "requestMirror": {"backendRef": {"name": "green", "port": 80}, "percent": 10}}],
             "backendRefs": [{"name": "blue", "port": 80, "weight": 90}, {"name": "green", "port": 80, "weight": 10}]}]}}
ARGS = ("gateway.networking.k8s.io", "v1", "default", "httproutes")


def test_an_httproute_with_a_mirror_percent_is_defaulted_like_the_standard_crd(fake_kube, kube_api):
    fake_kube.install_gateway_api()
    created = client.CustomObjectsApi(kube_api).create_namespaced_custom_object(*ARGS, ROUTE)
    assert created["spec"]["parentRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw"}]
    rule = created["spec"]["rules"][0]
    assert rule["backendRefs"][0] == {"group": "", "kind": "Service", "name": "blue", "port": 80, "weight": 90}
    assert rule["filters"][0]["requestMirror"] == {"backendRef": {"group": "", "kind": "Service", "name": "green", "port": 80},
                                                   "percent": 10}
    crd = fake_kube.get("customresourcedefinitions", "httproutes.gateway.networking.k8s.io", group="apiextensions.k8s.io")
    assert crd["metadata"]["annotations"]["gateway.networking.k8s.io/bundle-version"] == "v1.3.0"


@pytest.mark.parametrize("mutate, field, message", [
    (lambda r: r["spec"]["rules"][0]["backendRefs"][0].pop("port"), "spec.rules[0].backendRefs[0]",
     'Invalid value: "object": Must have port for Service reference'),
    (lambda r: r["spec"]["rules"][0]["filters"][0]["requestMirror"].update(percent=101),
     "spec.rules[0].filters[0].requestMirror.percent", "Invalid value: 101: spec.rules[0].filters[0].requestMirror.percent "
                                                      "in body should be less than or equal to 100"),
    (lambda r: r["spec"]["rules"][0]["filters"][0]["requestMirror"].update(fraction={"numerator": 1}),
     "spec.rules[0].filters[0].requestMirror",
     'Invalid value: "object": Only one of percent or fraction may be specified in HTTPRequestMirrorFilter'),
    (lambda r: r["spec"]["rules"][0]["filters"][0].pop("requestMirror"), "spec.rules[0].filters[0]",
     'Invalid value: "object": filter.requestMirror must be specified for RequestMirror filter.type'),
    (lambda r: r["spec"]["rules"][0]["matches"][0]["path"].update(value="team-a"), "spec.rules[0].matches[0].path",
     "Invalid value: \"object\": value must be an absolute path and start with '/' when type one of ['Exact', 'PathPrefix']"),
])
def test_the_httproute_rules_the_standard_crd_enforces(fake_kube, kube_api, mutate, field, message):
    fake_kube.install_gateway_api()
    route = copy.deepcopy(ROUTE)
    mutate(route)
    code, body = status_of(client.CustomObjectsApi(kube_api).create_namespaced_custom_object, *ARGS, route)
    assert code == 422 and causes(body)[field] == message


def test_gateway_api_1_2_has_no_mirror_percent(fake_kube, kube_api):
    fake_kube.install_gateway_api("v1.2.0")
    objects = client.CustomObjectsApi(kube_api)
    created = objects.create_namespaced_custom_object(*ARGS, copy.deepcopy(ROUTE))  # a create prunes it silently
    assert "percent" not in created["spec"]["rules"][0]["filters"][0]["requestMirror"]
    route = copy.deepcopy(ROUTE)
    route["metadata"]["name"] = "applied"
    code, body = status_of(objects.patch_namespaced_custom_object, *ARGS, "applied", route,
                           _content_type="application/apply-patch+yaml", field_manager="dockyard", force=True)
    assert code == 500 and ".spec.rules[0].filters[0].requestMirror.percent: field not declared in schema" in body["message"]
