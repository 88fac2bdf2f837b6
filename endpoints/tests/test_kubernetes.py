"""Kubernetes online deployments against the fake API server, through the real kubernetes client, reconciled by hand.

A kubernetes compute is attached to the fake; endpoints and deployments are made through the API; reconcile runs
directly (no worker) and the fake's clock moves the rollout on. Scoring goes through the fake's service proxy to
real HTTP servers attached to the Services (the real inference server with the adder script, or a small WSGI app).
"""
import json
import os
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from django.conf import settings as django_settings
from kubernetes import client

from compute import reconcile as compute_reconcile
from compute.models import ComputeTarget
from controlplane.kube import client as kube
from endpoints import reconcile, tasks
from endpoints.manifests import deployment_object_name, endpoint_object_name
from endpoints.models import OnlineDeployment, OnlineEndpoint
from tests.fake_kube.backends import wsgi_backend
from tests.fake_kube.fixtures import api_client

WS = "team-a"
BASE = f"/api/v1/workspaces/{WS}/online-endpoints"
IMAGE = "registry.example.com/adder:1"
ADDER = Path(__file__).parent / "data" / "adder"
GATEWAY = ("gateway.networking.k8s.io", "v1", "default", "httproutes")
RELATED = ("endpoint", "endpoint__workspace", "endpoint__compute", "endpoint__compute__cluster")


@pytest.fixture(autouse=True)
def fresh_kube_clients():
    kube._clients.clear()
    yield
    kube._clients.clear()


@pytest.fixture
def fake(owner_api, workspace, fake_kube):
    """The fake cluster, attached as compute `k8s` (namespace default)."""
    body = {"name": "k8s", "type": "kubernetes", "kubeconfig": fake_kube.kubeconfig_yaml()}
    response = owner_api.post(f"/api/v1/workspaces/{WS}/computes/", body, format="json")
    assert response.status_code == 201, response.json()
    compute_reconcile.reconcile_compute(ComputeTarget.objects.get(name="k8s"))
    assert ComputeTarget.objects.get(name="k8s").provisioning_state == "Succeeded"
    return fake_kube


@pytest.fixture
def objects(fake):
    with api_client(fake) as api:
        yield api


def make_endpoint(api, name="adder", **fields) -> str:
    response = api.post(f"{BASE}/", {"name": name, "compute": "azureml:k8s", **fields}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()["keys"].get("primaryKey", "")


def make_deployment(api, name="blue", endpoint="adder", **fields) -> dict:
    body = {"name": name, "model": {"path": "/var/azureml-app/models/adder"}, "environment": {"image": IMAGE},
            "code_configuration": {"code": "/var/azureml-app/adder", "scoring_script": "score.py"},
            "environment_variables": {"DEPLOYMENT_NAME": name}, **fields}
    response = api.post(f"{BASE}/{endpoint}/deployments/", body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def look(name="blue", endpoint="adder") -> OnlineDeployment | None:
    """One reconcile of the deployment; the row afterwards (None once it is gone)."""
    row = OnlineDeployment.objects.select_related(*RELATED).filter(name=name, endpoint__name=endpoint).first()
    assert row is not None, f"no deployment {name}"
    reconcile.reconcile_deployment(row)
    return OnlineDeployment.objects.filter(pk=row.pk).first()


def route(endpoint="adder") -> OnlineEndpoint | None:
    """One reconcile of the endpoint (its HTTPRoute); the row afterwards."""
    row = OnlineEndpoint.objects.select_related("workspace", "compute", "compute__cluster").get(name=endpoint)
    reconcile.reconcile_endpoint(row)
    return OnlineEndpoint.objects.filter(pk=row.pk).first()


def name_of(deployment="blue", endpoint="adder") -> str:
    return deployment_object_name(WS, endpoint, deployment)


def live(fake, plural: str, name: str, group: str = "") -> dict | None:
    return fake.get(plural, name, "default", group=group)


def rolled_out(fake, name="blue", seconds=2) -> OnlineDeployment:
    look(name)
    fake.advance(seconds)
    row = look(name)
    assert row.provisioning_state == "Succeeded", (row.provisioning_state, row.status)
    return row


def backends_of(fake, endpoint="adder") -> dict[str, int]:
    httproute = live(fake, "httproutes", endpoint_object_name(WS, endpoint), "gateway.networking.k8s.io")
    return {ref["name"]: ref["weight"] for ref in httproute["spec"]["rules"][0]["backendRefs"]}


# --- objects and rollout -------------------------------------------------------------------------

def test_a_deployment_becomes_a_service_and_a_deployment_that_rolls_out(owner_api, fake):
    make_endpoint(owner_api)
    make_deployment(owner_api, instance_count=2)
    row = look()
    assert row.provisioning_state == "Creating"
    assert row.status["state"] == "RollingOut" and row.status["ready_replicas"] == 0
    name = name_of()
    service, deployment = live(fake, "services", name), live(fake, "deployments", name, "apps")
    assert service["spec"]["selector"] == {"dockyard.dev/online-deployment": name}
    assert service["spec"]["ports"][0] == {"name": "http", "port": 80, "targetPort": 5001, "protocol": "TCP"}
    assert service["spec"]["clusterIP"]  # allocated: a real ClusterIP Service
    assert deployment["spec"]["replicas"] == 2
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert (container["image"], container["readinessProbe"]["httpGet"]) == (IMAGE, {"path": "/", "port": 5001, "scheme": "HTTP"})
    assert row.manifests == [m for m in reconcile.kubernetes.render(row)]  # what was applied is what the API shows
    assert "HorizontalPodAutoscaler" not in {m["kind"] for m in row.manifests}
    fake.advance(2)  # the pods start and become ready
    row = look()
    assert row.provisioning_state == "Succeeded" and row.provisioning_errors == []
    assert {key: row.status[key] for key in ("state", "replicas", "ready_replicas", "available_replicas", "reason")} == \
        {"state": "Running", "replicas": 2, "ready_replicas": 2, "available_replicas": 2, "reason": ""}
    shown = owner_api.get(f"{BASE}/adder/deployments/blue/").json()
    assert shown["status"]["ready_replicas"] == 2 and shown["manifests"][1]["kind"] == "Deployment"


def test_unschedulable_pods_say_why_in_a_sentence(owner_api, fake):
    computes = f"/api/v1/workspaces/{WS}/computes/k8s/instancetypes/"
    for name, selector, cpu in (("h100", {"accelerator": "h100"}, "1"), ("huge", {}, "12")):
        body = {"name": name, "nodeSelector": selector,
                "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}, "limits": {"cpu": "16", "memory": "2Gi"}}}
        assert owner_api.post(computes, body, format="json").status_code == 201
    make_endpoint(owner_api)
    make_deployment(owner_api, "blue", instance_type="h100")
    make_deployment(owner_api, "green", instance_type="huge")
    look("blue"), look("green")
    fake.advance(5)
    blue, green = look("blue"), look("green")
    assert blue.provisioning_state == "Creating" and blue.status["ready_replicas"] == 0
    assert blue.status["reason"] == "Waiting for a node: no node matches the nodeSelector accelerator=h100."
    assert green.status["reason"] == "Waiting for a node: insufficient cpu."


def test_patching_instance_count_changes_replicas_updating_then_succeeded(owner_api, fake):
    make_endpoint(owner_api)
    make_deployment(owner_api)
    rolled_out(fake)
    response = owner_api.patch(f"{BASE}/adder/deployments/blue/", {"instance_count": 3}, format="json")
    assert response.status_code == 200 and response.json()["provisioning_state"] == "Updating"
    row = look()
    assert live(fake, "deployments", name_of(), "apps")["spec"]["replicas"] == 3
    assert row.provisioning_state == "Updating" and row.status["replicas"] == 3 and row.status["ready_replicas"] == 1
    fake.advance(2)
    row = look()
    assert row.provisioning_state == "Succeeded" and row.status["ready_replicas"] == 3
    assert row.observed_generation == row.generation


def test_an_image_that_cannot_be_pulled_is_the_reason(owner_api, fake):
    fake.plan_pods(labels={"dockyard.dev/deployment": "blue"}, image_pull_error="ErrImagePull")
    make_endpoint(owner_api)
    make_deployment(owner_api)
    look()
    fake.advance(2)
    row = look()
    assert row.provisioning_state == "Creating" and row.status["state"] == "RollingOut"
    assert row.status["reason"].startswith(f"The image {IMAGE} cannot be pulled (")
    assert "not found" in row.status["reason"]


def test_a_crashing_server_is_the_reason_and_the_deadline_fails_the_rollout(owner_api, fake):
    fake.plan_pods(labels={"dockyard.dev/deployment": "blue"}, run_seconds=2, exit_code=1, ready=False)
    make_endpoint(owner_api)
    make_deployment(owner_api)
    look()
    fake.advance(6)  # started, crashed, restarted, crashed again: back-off
    row = look()
    assert row.provisioning_state == "Creating"
    assert row.status["reason"].startswith("The container cannot start (CrashLoopBackOff): back-off 10s restarting failed "
                                           "container=inference-server pod=")
    fake.advance(600)  # the Deployment's progressDeadlineSeconds
    row = look()
    assert row.provisioning_state == "Failed" and row.status["state"] == "Failed"
    assert row.provisioning_errors[0]["code"] == "ProgressDeadlineExceeded"
    assert "has timed out progressing" in row.status["reason"]


def test_target_utilization_leaves_the_replica_count_to_the_hpa(owner_api, fake, objects):
    make_endpoint(owner_api)
    scale = {"type": "target_utilization", "min_instances": 2, "max_instances": 4, "target_utilization_percentage": 50}
    make_deployment(owner_api, scale_settings=scale)
    look()
    name = name_of()
    hpa = live(fake, "horizontalpodautoscalers", name, "autoscaling")
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 4)
    assert live(fake, "deployments", name, "apps")["spec"]["replicas"] == 1  # the Deployment's default
    fake.advance(2)
    # One replica is up, but the HPA has not synced yet (its first sync is 15 s after it appeared, its status says
    # desiredReplicas 0 until then and without metrics): the rollout is not done below min_instances.
    row = look()
    assert row.provisioning_state == "Creating" and row.status["replicas"] == 2
    fake.advance(13)
    assert live(fake, "deployments", name, "apps")["spec"]["replicas"] == 2  # the HPA raised it to its minimum
    fake.advance(2)
    assert look().provisioning_state == "Succeeded"
    # The HPA scales out under load; our next reconcile must not undo that.
    client.AppsV1Api(objects).patch_namespaced_deployment_scale(name, "default", {"spec": {"replicas": 4}})
    look()
    assert live(fake, "deployments", name, "apps")["spec"]["replicas"] == 4
    owner_api.patch(f"{BASE}/adder/deployments/blue/", {"scale_settings": {"type": "default"}, "instance_count": 1}, format="json")
    look()
    assert live(fake, "horizontalpodautoscalers", name, "autoscaling") is None
    assert live(fake, "deployments", name, "apps")["spec"]["replicas"] == 1


def test_logs_are_every_replicas_server_output(owner_api, fake):
    fake.plan_pods(labels={"dockyard.dev/deployment": "blue"}, logs="Initializing logger\nAML_FLASK_ONE_COMPATIBILITY set\n")
    make_endpoint(owner_api)
    make_deployment(owner_api, instance_count=2)
    rolled_out(fake)
    text = owner_api.get(f"{BASE}/adder/deployments/blue/logs", {"lines": 1}).content.decode()
    assert text.count("== blue") == 0 and text.count(f"== {name_of()}-") == 2
    assert text.count("AML_FLASK_ONE_COMPATIBILITY set") == 2 and "Initializing logger" not in text


# --- the endpoint's HTTPRoute --------------------------------------------------------------------

def test_httproute_weights_follow_traffic(owner_api, fake, objects):
    fake.install_gateway_api()
    make_endpoint(owner_api)
    make_deployment(owner_api, "blue")
    make_deployment(owner_api, "green")
    blue, green = name_of("blue"), name_of("green")
    assert owner_api.patch(f"{BASE}/adder/", {"traffic": {"blue": 90, "green": 10}}, format="json").status_code == 200
    endpoint = route()
    assert backends_of(fake) == {blue: 90, green: 10}
    assert endpoint.status["route"]["state"] == "Pending"  # no Gateway controller has accepted it yet
    assert endpoint.status["route"]["reason"] == "Waiting for Gateway 'dockyard' to accept the route."
    httproute = live(fake, "httproutes", endpoint_object_name(WS, "adder"), "gateway.networking.k8s.io")
    assert httproute["spec"]["parentRefs"] == [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "dockyard"}]
    assert endpoint.manifests[0]["kind"] == "HTTPRoute"

    owner_api.patch(f"{BASE}/adder/", {"traffic": {"blue": 100, "green": 0}, "mirror_traffic": {"green": 20}}, format="json")
    route()
    assert backends_of(fake) == {blue: 100, green: 0}
    rule = live(fake, "httproutes", endpoint_object_name(WS, "adder"), "gateway.networking.k8s.io")["spec"]["rules"][0]
    assert rule["filters"][0]["requestMirror"]["percent"] == 20
    assert rule["filters"][0]["requestMirror"]["backendRef"]["name"] == green

    owner_api.patch(f"{BASE}/adder/", {"traffic": {"blue": 50, "green": 50}, "mirror_traffic": {}}, format="json")
    route()
    rule = live(fake, "httproutes", endpoint_object_name(WS, "adder"), "gateway.networking.k8s.io")["spec"]["rules"][0]
    assert backends_of(fake) == {blue: 50, green: 50} and "filters" not in rule  # the mirror went with its field

    # A Gateway controller accepts the route: the endpoint says so.
    accepted = {"status": {"parents": [{"parentRef": {"name": "dockyard"}, "controllerName": "example.com/gateway",
                                        "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted",
                                                        "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}]}}
    client.CustomObjectsApi(objects).patch_namespaced_custom_object_status(*GATEWAY, endpoint_object_name(WS, "adder"), accepted)
    assert route().status["route"] == {"state": "Accepted", "reason": ""}


def test_without_the_gateway_api_the_route_is_unavailable_and_says_why(owner_api, fake):
    make_endpoint(owner_api)
    make_deployment(owner_api)
    owner_api.patch(f"{BASE}/adder/", {"traffic": {"blue": 100}}, format="json")
    endpoint = route()
    assert endpoint.provisioning_state == "Succeeded"
    assert endpoint.status["route"]["state"] == "Unavailable"
    assert "no Gateway API (HTTPRoute CRD)" in endpoint.status["route"]["reason"]
    assert endpoint.manifests == [] and not fake.requests.find(resource="httproutes")
    shown = owner_api.get(f"{BASE}/adder/").json()
    assert shown["status"]["route"]["state"] == "Unavailable"


def test_an_older_gateway_api_refuses_the_mirror_percent_and_the_endpoint_says_so(owner_api, fake):
    fake.install_gateway_api("v1.2.0")  # requestMirror.percent is standard from Gateway API v1.3.0
    make_endpoint(owner_api)
    make_deployment(owner_api, "blue")
    make_deployment(owner_api, "green")
    owner_api.patch(f"{BASE}/adder/", {"traffic": {"blue": 100}, "mirror_traffic": {"green": 10}}, format="json")
    endpoint = route()
    assert endpoint.status["route"]["state"] == "Rejected"
    assert "requestMirror.percent: field not declared in schema" in endpoint.status["route"]["reason"]


# --- deleting --------------------------------------------------------------------------------------

def test_deleting_a_deployment_with_traffic_is_400_and_removes_nothing(owner_api, fake):
    make_endpoint(owner_api)
    make_deployment(owner_api, "blue")
    make_deployment(owner_api, "green")
    rolled_out(fake, "blue"), rolled_out(fake, "green")
    owner_api.patch(f"{BASE}/adder/", {"traffic": {"blue": 100}, "mirror_traffic": {"green": 10}}, format="json")
    for deployment, share in (("blue", "100% of the traffic"), ("green", "10% mirrored traffic")):
        response = owner_api.delete(f"{BASE}/adder/deployments/{deployment}/")
        assert response.status_code == 400, response.content
        assert response.json()["error"]["code"] == "DeploymentHasTraffic" and share in response.json()["error"]["message"]
        row = look(deployment)
        assert row.provisioning_state == "Succeeded"
        assert live(fake, "deployments", name_of(deployment), "apps") and live(fake, "services", name_of(deployment))
    assert not fake.requests.find(verb="delete", resource="deployments")


def test_deleting_a_deployment_without_traffic_removes_its_objects_then_its_row_and_its_route_entry(owner_api, fake):
    fake.install_gateway_api()
    make_endpoint(owner_api)
    make_deployment(owner_api, "blue")
    make_deployment(owner_api, "green", scale_settings={"type": "target_utilization", "max_instances": 2})
    rolled_out(fake, "blue"), rolled_out(fake, "green")
    owner_api.patch(f"{BASE}/adder/", {"traffic": {"blue": 100, "green": 0}}, format="json")
    route()
    green = name_of("green")
    assert backends_of(fake) == {name_of("blue"): 100, green: 0}
    response = owner_api.delete(f"{BASE}/adder/deployments/green/")
    assert response.status_code == 202 and response.json()["provisioning_state"] == "Deleting"
    for _ in range(20):  # foreground deletion: pods, then the ReplicaSet, then the Deployment
        if look("green") is None:
            break
        fake.advance(5)
    assert not OnlineDeployment.objects.filter(name="green").exists()
    for plural, group in (("deployments", "apps"), ("services", ""), ("horizontalpodautoscalers", "autoscaling")):
        assert live(fake, plural, green, group) is None, plural
    assert not [pod for pod in fake.list("pods", "default") if pod["metadata"]["labels"].get("dockyard.dev/deployment") == "green"]
    route()
    assert backends_of(fake) == {name_of("blue"): 100}
    assert live(fake, "deployments", name_of("blue"), "apps")


def test_deleting_the_endpoint_removes_everything(owner_api, fake):
    fake.install_gateway_api()
    make_endpoint(owner_api)
    make_deployment(owner_api, "blue")
    make_deployment(owner_api, "green")
    owner_api.patch(f"{BASE}/adder/", {"traffic": {"blue": 70, "green": 30}}, format="json")
    look("blue"), look("green"), route()
    assert owner_api.delete(f"{BASE}/adder/").status_code == 202
    assert route().provisioning_state == "Deleting"  # it waits for its deployments
    for _ in range(20):
        remaining = [look(row.name) for row in OnlineDeployment.objects.all()]
        if not any(remaining):
            break
        fake.advance(5)
    assert route() is None and not OnlineEndpoint.objects.exists()
    assert live(fake, "httproutes", endpoint_object_name(WS, "adder"), "gateway.networking.k8s.io") is None
    left = [obj["metadata"]["name"] for plural, group in (("deployments", "apps"), ("services", ""), ("replicasets", "apps"))
            for obj in fake.list(plural, "default", group=group) if obj["metadata"]["name"] != "kubernetes"]
    assert left == []


# --- faults ------------------------------------------------------------------------------------------

class Task:
    """The bound Celery task as the reconcile tasks use it: `retry` raises what it is asked."""

    def __init__(self):
        self.request = type("Request", (), {"retries": 0, "called_directly": True})()

    def retry(self, **kwargs):
        return RetryRequested(kwargs)

    def apply_async(self, *args, **kwargs):  # the next look of the chain: the test looks by hand
        pass


class RetryRequested(Exception):
    pass


def test_transient_faults_are_retried_and_a_retry_after_is_honoured(owner_api, fake):
    from controlplane.reconciling import chained_run

    make_endpoint(owner_api)
    make_deployment(owner_api)
    pk = OnlineDeployment.objects.get(name="blue").pk

    def step():
        return chained_run(Task(), OnlineDeployment, pk, False, reconcile.reconcile_deployment, reconcile.LOOK_EVERY, tasks.RELATED)

    fake.faults.once("500", verb="patch", resource="deployments")
    with pytest.raises(RetryRequested) as retry:
        step()
    assert isinstance(retry.value.args[0]["exc"], kube.KubeTransient)
    assert live(fake, "deployments", name_of(), "apps") is None  # the Service went, the Deployment did not
    step()  # the retry
    assert live(fake, "deployments", name_of(), "apps") is not None

    fake.faults.once("429", verb="patch", resource="services")
    with pytest.raises(RetryRequested) as retry:
        step()
    asked = retry.value.args[0]
    assert asked["countdown"] >= 1 and asked["exc"].retry_after == 1.0  # the server's Retry-After sets the countdown
    sent = len(fake.requests.all())
    with pytest.raises(RetryRequested):
        step()  # too early: not even sent
    assert len(fake.requests.all()) == sent
    time.sleep(1.1)
    fake.advance(2)
    step()
    assert OnlineDeployment.objects.get(pk=pk).provisioning_state == "Succeeded"


# --- scoring through the API server's service proxy ---------------------------------------------------

def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def inference_server(tmp_path):
    """The real inference server (azureml-inference-server-http) serving the adder script, as blue's pods would."""
    port = free_port()
    venv = Path(django_settings.DOCKYARD_INFERENCE_VENV)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "AZUREML_ENTRY_SCRIPT": str(ADDER / "score.py"),
           "DEPLOYMENT_NAME": "blue", "OFFSET": "100"}
    process = subprocess.Popen([str(venv / "bin" / "gunicorn"), "-b", f"127.0.0.1:{port}", "-w", "1",
                                "azureml_inference_server_http.server.entry:app"], cwd=ADDER, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            raise AssertionError("the inference server did not start")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def green_app(environ, start_response):
    """Green's server: answers with its name (a different model), and a 500 for {"boom": true}."""
    body = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)) or b"{}")
    if body.get("boom"):
        start_response("500 INTERNAL SERVER ERROR", [("Content-Type", "text/plain")])
        return [b"green exploded"]
    start_response("200 OK", [("Content-Type", "application/json")])
    return [json.dumps({"sum": -sum(body.get("numbers", [])), "deployment": "green"}).encode()]


def test_score_goes_through_the_service_proxy_with_header_routing(owner_api, fake, client, inference_server):
    key = make_endpoint(owner_api)
    make_deployment(owner_api, "blue")
    make_deployment(owner_api, "green")
    rolled_out(fake, "blue"), rolled_out(fake, "green")
    owner_api.patch(f"{BASE}/adder/", {"traffic": {"blue": 100, "green": 0}}, format="json")
    url, auth = f"{BASE}/adder/score", {"HTTP_AUTHORIZATION": f"Bearer {key}"}
    with wsgi_backend(green_app) as green_url:
        fake.serve_service("default", name_of("blue"), inference_server)
        fake.serve_service("default", name_of("green"), green_url)
        assert client.post(url, {"numbers": [1, 2]}, content_type="application/json").status_code == 401
        answer = client.post(url, {"numbers": [1, 2]}, content_type="application/json", **auth)
        assert answer.status_code == 200, answer.content
        assert answer.json() == {"sum": 103, "deployment": "blue"} and answer["azureml-model-deployment"] == "blue"
        picked = client.post(url, {"numbers": [1, 2]}, content_type="application/json", HTTP_AZUREML_MODEL_DEPLOYMENT="green", **auth)
        assert picked.status_code == 200 and picked.json() == {"sum": -3, "deployment": "green"}
        assert picked["azureml-model-deployment"] == "green"
        failed = client.post(url, {"boom": True}, content_type="application/json", HTTP_AZUREML_MODEL_DEPLOYMENT="green", **auth)
        assert (failed.status_code, failed.content, failed["azureml-model-deployment"]) == (500, b"green exploded", "green")
        unknown = client.post(url, {"numbers": [1]}, content_type="application/json", HTTP_AZUREML_MODEL_DEPLOYMENT="red", **auth)
        assert unknown.status_code == 404
    proxied = [r for r in fake.requests.find(resource="services") if r.subresource == "proxy"]
    assert {r.name for r in proxied} == {f"{name_of('blue')}:80", f"{name_of('green')}:80"}
    assert all(r.path.endswith("/proxy/score") and r.verb == "create" for r in proxied)


def test_score_before_a_pod_is_ready_passes_the_proxys_503_on(owner_api, fake, client):
    key = make_endpoint(owner_api)
    make_deployment(owner_api)
    look()  # created, the pod not started yet
    owner_api.patch(f"{BASE}/adder/", {"traffic": {"blue": 100}}, format="json")
    answer = client.post(f"{BASE}/adder/score", {"numbers": [1]}, content_type="application/json",
                         HTTP_AUTHORIZATION=f"Bearer {key}")
    assert answer.status_code == 503 and answer["azureml-model-deployment"] == "blue"
    assert answer.json()["message"] == f'no endpoints available for service "{name_of()}"'
