"""The studio's Endpoints pages through the Django test client: the list and create form, an endpoint's tabs (cards,
traffic sliders, Test, Consume, logs, manifests) and deleting an endpoint; test_deployment_views.py has the
deployments' own pages.

Records are made through endpoints.services (as the pages do); no worker runs here, so states stay where the test puts
them, and the Test tab's call to a deployment's server is replaced by a stand-in for `dataplane.forward`.
"""
import html
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from compute.models import ComputeTarget
from compute.runners import local as runner
from controlplane.reconciling import ProvisioningState
from endpoints import dataplane, keys
from endpoints.models import OnlineDeployment, OnlineEndpoint
from endpoints.reconcile.local import folder_of
from endpoints.services import endpoint_create

from .endpoint_pages import ADDER, DEPLOYMENT_FORM, EP, LIST, add, card_of, field_block, text

pytestmark = pytest.mark.usefixtures("local_endpoints")


# The list and the create form


def test_the_nav_leads_to_the_endpoints_page_not_a_placeholder(client_as, workspace):
    assert 'href="/w/team-a/endpoints/"' in text(client_as("reader").get("/w/team-a/compute/"))
    body = text(client_as("reader").get(LIST))
    assert "coming release" not in body and "No endpoints yet" in body
    assert "/api/v1/workspaces/team-a/online-endpoints/" in body


@pytest.mark.parametrize("role, may_create", [("reader", False), ("contributor", True), ("owner", True), ("staff", True)])
def test_the_create_form_only_for_roles_that_may_use_the_workspace(client_as, workspace, role, may_create):
    body = text(client_as(role).get(LIST))
    assert ('id="endpoint-form"' in body) is may_create
    assert ('data-bs-target="#create-endpoint"' in body) is may_create


def test_outsiders_get_404_and_anonymous_the_login(client_as, blue_green):
    client = client_as("outsider")
    for url in (LIST, EP, f"{EP}test/", f"{EP}consume/", f"{EP}logs/", f"{EP}manifests/", f"{EP}status/",
                f"{EP}deployments/new/form/", f"{EP}deployments/new/paste/"):
        assert client.get(url).status_code == 404, url
    for url in (LIST, f"{EP}traffic/", f"{EP}test/", f"{EP}keys/regenerate/", f"{EP}delete/",
                f"{EP}deployments/blue/scale/", f"{EP}deployments/blue/delete/"):
        assert client.post(url).status_code == 404, url
    response = client_as("anonymous").get(LIST)
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_create_shows_both_keys_once_and_they_are_the_endpoints(client_as, workspace):
    response = client_as("contributor").post(LIST, {"name": "adder", "compute": "local", "auth_mode": "key",
                                                    "description": "adds numbers"})
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    body = text(response)
    endpoint = OnlineEndpoint.objects.get(name="adder")
    assert (endpoint.compute_name, endpoint.auth_mode, endpoint.description) == ("local", "key", "adds numbers")
    assert "only time they are shown" in body
    shown = dict(re.findall(r'id="key-(primaryKey|secondaryKey)" value="([^"]+)"', body))
    assert set(shown) == {"primaryKey", "secondaryKey"} and shown["primaryKey"] != shown["secondaryKey"]
    assert keys.hash_key(shown["primaryKey"]) == endpoint.primary_key_hash
    assert keys.hash_key(shown["secondaryKey"]) == endpoint.secondary_key_hash
    assert 'href="/w/team-a/endpoints/adder/"' in body
    # …and never again
    again = text(client_as("contributor").get(LIST))
    assert shown["primaryKey"] not in again and 'data-endpoint="adder"' in again
    assert shown["primaryKey"] not in text(client_as("contributor").get(f"{EP}consume/"))


def test_a_token_endpoint_has_no_keys_to_show(client_as, workspace):
    body = text(client_as("owner").post(LIST, {"name": "tokened", "compute": "local", "auth_mode": "aml_token"}))
    assert "token authentication" in body and "key-primaryKey" not in body
    assert OnlineEndpoint.objects.get(name="tokened").primary_key_hash == ""


@pytest.mark.parametrize("form, field, message", [
    ({"name": "9lives", "compute": "local"}, "name", "starts with a letter"),
    ({"name": "adder", "compute": "nowhere"}, "compute", "There is no compute &#x27;nowhere&#x27;"),
    ({"name": "adder", "compute": "local", "auth_mode": "aad_token"}, "auth_mode", "auth_mode must be key or aml_token"),
])
def test_create_errors_are_shown_at_their_field_and_nothing_is_created(client_as, workspace, form, field, message):
    response = client_as("contributor").post(LIST, form)
    assert response.status_code == 200
    block = field_block(text(response), field)
    assert "is-invalid" in block and message in block
    assert 'class="collapse show mb-4" id="create-endpoint"' in text(response)  # the form stays open
    assert not OnlineEndpoint.objects.exists()


def test_a_taken_name_is_a_conflict_at_the_name(client_as, endpoint):
    block = field_block(text(client_as("owner").post(LIST, {"name": "adder", "compute": "local"})), "name")
    assert "already exists" in block
    assert OnlineEndpoint.objects.count() == 1


def test_a_reader_cannot_create_even_by_posting(client_as, workspace):
    assert client_as("reader").post(LIST, {"name": "adder", "compute": "local"}).status_code == 403
    assert not OnlineEndpoint.objects.exists()


def test_compute_choices_are_local_when_allowed_and_kubernetes_computes(client_as, settings, kubernetes, workspace):
    ComputeTarget.objects.create(workspace=workspace, name="vm-1", type="virtualmachine", properties={"address": "10.0.0.9"})
    block = field_block(text(client_as("owner").get(LIST)), "compute")
    assert 'value="local"' in block and 'value="k8s"' in block and 'value="vm-1"' not in block
    assert re.search(r'value="k8s" selected', block)  # a Kubernetes compute first, as teams mostly serve there
    settings.DOCKYARD_LOCAL_COMPUTE = False
    block = field_block(text(client_as("owner").get(LIST)), "compute")
    assert 'value="local"' not in block
    client_as("owner").post(LIST, {"name": "served", "compute": "k8s"})
    assert OnlineEndpoint.objects.get(name="served").compute == kubernetes


def test_a_managed_endpoint_is_created_without_a_compute(client_as, kubernetes):
    block = field_block(text(client_as("owner").get(LIST)), "compute")
    assert 'value="managed"' in block and "placed on a compute cluster" in block
    response = client_as("owner").post(LIST, {"name": "placed", "compute": "managed", "auth_mode": "key"})
    assert response.status_code == 200 and 'id="endpoint-created"' in text(response)  # its keys, shown once
    endpoint = OnlineEndpoint.objects.get(name="placed")
    assert endpoint.is_managed and endpoint.compute_id is None


def test_the_list_shows_compute_auth_state_deployments_and_traffic(client_as, blue_green, kube_endpoint):
    body = text(client_as("reader").get(LIST))
    for header in ("Name", "State", "Compute", "Authentication", "Deployments", "Traffic", "Created"):
        assert f"<th>{header}</th>" in body
    row = re.search(r'<tr data-endpoint="adder">(.*?)</tr>', body, re.S).group(1)
    assert "blue 90% · green 10%" in row and 'data-state="Succeeded"' in row and ">local<" in row and "Key" in row
    assert 'title="blue: Succeeded"' in row and 'title="green: Succeeded"' in row and "olivia" in row
    kube = re.search(r'<tr data-endpoint="fraud">(.*?)</tr>', body, re.S).group(1)
    assert "k8s" in kube and "no traffic" in kube and 'title="blue: Creating"' in kube
    assert "2 endpoints" in body


def test_the_list_refresh_is_the_card_alone(client_as, blue_green):
    body = text(client_as("reader").get(LIST, HTTP_HX_REQUEST="true"))
    assert body.lstrip().startswith('<div class="card" id="endpoint-list">') and "<html" not in body


# An endpoint's details: deployment cards and traffic


def test_cards_show_state_instance_type_replicas_restarts_and_reason(client_as, owner, endpoint):
    add(owner, endpoint, "blue", ProvisioningState.UPDATING, state="Restarting", ready_replicas=0, restarts=2,
        reason="The server exited with code 1 and is restarted (restart 2).")
    body = text(client_as("reader").get(EP))
    blue = card_of(body, "blue")
    assert 'data-state="Updating"' in blue and "none (local) — the server runs on the worker's host" in blue
    assert "<strong>0</strong> / 1 ready" in blue and "<th>Restarts</th><td>2</td>" in blue
    assert "restarted (restart 2)" in blue and f"in {ADDER}" in blue and ">score.py<" in blue
    assert "<th>Resources</th><td class=\"small\">—</td>" in blue  # a local process is not limited


def test_the_being_created_line_is_part_of_the_card_and_goes_when_it_succeeded(client_as, owner, endpoint):
    """Not a flash message, which stayed on the page after the deployment succeeded: the polled card says it."""
    response = client_as("contributor").post(f"{EP}deployments/new/form/", DEPLOYMENT_FORM, follow=True)
    page = text(response)
    assert "Deployment blue added." in page and "is being created" not in page
    assert "Being created: give it traffic once it is Succeeded." in card_of(page, "blue")
    OnlineDeployment.objects.filter(name="blue").update(provisioning_state=ProvisioningState.SUCCEEDED,
                                                        status={"state": "Running", "replicas": 1, "ready_replicas": 1})
    polled = text(client_as("contributor").get(f"{EP}status/"))
    assert "Being created" not in polled and 'data-state="Succeeded"' in polled


def test_kubernetes_cards_have_the_instance_count_form(client_as, kube_endpoint):
    blue = card_of(text(client_as("contributor").get("/w/team-a/endpoints/fraud/")), "blue")
    assert "cpu-large" in blue and 'name="instance_count" value="2"' in blue
    assert "<strong>0</strong> / 2 ready" in blue and "<th>Restarts</th><td>—</td>" in blue
    assert "requests cpu=2, memory=4Gi" in blue


def test_delete_is_disabled_with_a_reason_while_a_deployment_takes_traffic(client_as, owner, blue_green):
    add(owner, blue_green, "idle")
    body = text(client_as("contributor").get(EP))
    assert 'data-bs-title="It takes 90% of the traffic: move it to other deployments first."' in card_of(body, "blue")
    assert "disabled" in card_of(body, "green") and "/deployments/green/delete/" not in body
    assert 'action="/w/team-a/endpoints/adder/deployments/idle/delete/"' in card_of(body, "idle")


def test_a_reader_sees_everything_and_can_change_nothing(client_as, blue_green):
    body = text(client_as("reader").get(EP))
    assert 'data-deployment="blue"' in body and "blue 90% · green 10%" in body
    for absent in ("Add deployment", "delete-modal", "/traffic/\"", "Save traffic", "/scale/", "/delete/", "data-delete-blocked"):
        assert absent not in body, absent
    assert re.search(r'id="traffic-blue" name="traffic.blue" value="90" data-traffic-slider disabled', body)


def test_sliders_start_at_the_saved_split(client_as, blue_green):
    body = text(client_as("owner").get(EP))
    assert re.search(r'type="range" min="0" max="100" step="1" id="traffic-blue" name="traffic.blue" value="90"', body)
    assert 'name="traffic.green" value="10"' in body
    assert '<span id="traffic-total" data-traffic-total>100</span>' in body
    assert re.search(r'id="traffic-save" data-traffic-save>', body)  # enabled


def test_saving_a_valid_split(client_as, blue_green):
    client = client_as("contributor")
    response = client.post(f"{EP}traffic/", {"traffic.blue": "0", "traffic.green": "100",
                                                               "mirror_deployment": "blue", "mirror_percent": "20"})
    assert response.status_code == 302 and response["Location"] == EP
    endpoint = OnlineEndpoint.objects.get(pk=blue_green.pk)
    assert endpoint.traffic == {"blue": 0, "green": 100} and endpoint.mirror_traffic == {"blue": 20}
    follow = text(client.get(EP))
    assert "Traffic saved: green 100%; 20% mirrored to blue." in follow
    # the sliders now hold the saved split: nothing is ready to save until one moves
    assert "— as saved" in follow and "ready to save" not in follow and "data-traffic-changed" not in follow


@pytest.mark.parametrize("form, target, message", [
    ({"traffic.blue": "90", "traffic.green": "20"}, "traffic", "must total 0 or 100 (they total 110)"),
    ({"traffic.blue": "90", "traffic.green": "10", "traffic.ghost": "0"}, None, None),  # not a slider: ignored
    ({"traffic.blue": "100", "traffic.green": "0", "mirror_deployment": "green", "mirror_percent": "60"},
     "mirror_traffic.green", "At most 50%"),
    ({"traffic.blue": "50", "traffic.green": "50", "mirror_deployment": "green", "mirror_percent": "10"},
     "mirror_traffic.green", "already takes live traffic"),
    ({"traffic.blue": "ninety", "traffic.green": "10"}, "traffic.blue", "whole percentage"),
])
def test_the_server_checks_the_split_again_and_shows_why_not(client_as, blue_green, form, target, message):
    response = client_as("contributor").post(f"{EP}traffic/", form)
    endpoint = OnlineEndpoint.objects.get(pk=blue_green.pk)
    if target is None:
        assert response.status_code == 302 and endpoint.traffic == {"blue": 90, "green": 10}
        return
    assert response.status_code == 200
    errors = re.search(r'<div class="alert alert-danger py-2" role="alert" id="traffic-errors">(.*?)</div>\s*</div>', text(response), re.S)
    assert f"<code>{target}</code>" in errors.group(0) and message in html.unescape(errors.group(0))
    assert endpoint.traffic == {"blue": 90, "green": 10} and endpoint.mirror_traffic == {}
    assert f'value="{form["traffic.blue"]}" data-traffic-slider' in text(response)  # the sliders keep what was posted


def test_a_total_off_100_renders_save_disabled(client_as, blue_green):
    body = text(client_as("owner").post(f"{EP}traffic/", {"traffic.blue": "90", "traffic.green": "20"}))
    assert 'class="traffic-total traffic-bad"' in body and "must be 0 or 100" in body
    assert re.search(r'id="traffic-save" data-traffic-save disabled>', body)


def test_a_reader_cannot_post_traffic(client_as, blue_green):
    assert client_as("reader").post(f"{EP}traffic/", {"traffic.blue": "0", "traffic.green": "100"}).status_code == 403
    assert OnlineEndpoint.objects.get(pk=blue_green.pk).traffic == {"blue": 90, "green": 10}


def test_deleting_the_endpoint(client_as, blue_green):
    assert client_as("reader").post(f"{EP}delete/").status_code == 403
    response = client_as("contributor").post(f"{EP}delete/")
    assert response.status_code == 302 and response["Location"] == LIST
    assert OnlineEndpoint.objects.get(pk=blue_green.pk).provisioning_state == ProvisioningState.DELETING
    assert set(OnlineDeployment.objects.values_list("provisioning_state", flat=True)) == {ProvisioningState.DELETING}
    body = text(client_as("contributor").get(EP))
    assert "Being deleted" in body and "Add deployment" not in body


# Polling


def test_the_cards_poll_while_something_moves_and_stop_when_settled(client_as, owner, endpoint):
    blue = add(owner, endpoint, "blue", ProvisioningState.CREATING, state="Starting", ready_replicas=0)
    assert 'hx-get="/w/team-a/endpoints/adder/status/" hx-trigger="every 2s"' in text(client_as("reader").get(EP))
    OnlineDeployment.objects.filter(pk=blue.pk).update(provisioning_state=ProvisioningState.SUCCEEDED,
                                                      status={"state": "Running", "replicas": 1, "ready_replicas": 1})
    OnlineEndpoint.objects.filter(pk=endpoint.pk).update(provisioning_state=ProvisioningState.SUCCEEDED)
    polled = text(client_as("reader").get(f"{EP}status/"))
    assert polled.lstrip().startswith('<div id="deployment-cards">')  # settled: no further polling
    assert '<span id="endpoint-state" hx-swap-oob="true">' in polled and 'data-state="Succeeded"' in polled


# Test


@pytest.fixture
def answers(monkeypatch):
    """Replace the call to a deployment's server: every request answers as the adder would; the calls are kept."""
    calls = []

    def forward(deployment, body, content_type):
        calls.append((deployment.name, body, content_type))
        return dataplane.Answer(200, "application/json", b'{"sum": 6, "deployment": "%s"}' % deployment.name.encode(), deployment.name)

    monkeypatch.setattr(dataplane, "forward", forward)
    return calls


def test_the_test_tab_sends_json_and_shows_the_answer_and_who_served_it(client_as, blue_green, answers):
    response = client_as("contributor").post(f"{EP}test/", {"request": '{"numbers": [1, 2, 3]}', "deployment": ""},
                                             HTTP_HX_REQUEST="true")
    body = text(response)
    assert response.status_code == 200 and body.lstrip().startswith('<div class="card" id="test-result">')
    served = re.search(r'data-testid="served-by">(\w+)<', body).group(1)
    assert served in ("blue", "green") and answers == [(served, b'{"numbers": [1, 2, 3]}', "application/json")]
    assert '"sum": 6' in html.unescape(body) and 'data-testid="test-status">200 OK<' in body


def test_the_test_tab_can_name_the_deployment(client_as, blue_green, answers):
    body = text(client_as("contributor").post(f"{EP}test/", {"request": '{"numbers": [1]}', "deployment": "green"}))
    assert 'data-testid="served-by">green<' in body and answers[0][0] == "green"
    assert '<option value="green" selected>' in body  # the full page keeps the choice


@pytest.mark.parametrize("request_text, message", [("{numbers: 1}", "not valid JSON"), ("", "not valid JSON")])
def test_the_test_tab_refuses_what_is_not_json_without_calling(client_as, blue_green, answers, request_text, message):
    body = text(client_as("contributor").post(f"{EP}test/", {"request": request_text}, HTTP_HX_REQUEST="true"))
    assert message in body and answers == []


def test_the_test_tab_shows_why_no_deployment_answered(client_as, owner, endpoint, answers):
    add(owner, endpoint, "blue")
    body = text(client_as("contributor").post(f"{EP}test/", {"request": "{}"}, HTTP_HX_REQUEST="true"))
    assert 'data-testid="test-status">404 NoTraffic<' in body and "sends no traffic to any deployment" in html.unescape(body)
    assert answers == []


def test_a_failed_answer_links_to_the_deployments_logs(client_as, blue_green, monkeypatch):
    def forward(deployment, body, content_type):
        return dataplane.Answer(500, "text/plain", b"An unexpected error occurred in scoring script.", deployment.name)

    monkeypatch.setattr(dataplane, "forward", forward)
    body = text(client_as("contributor").post(f"{EP}test/", {"request": "{}", "deployment": "green"}, HTTP_HX_REQUEST="true"))
    assert 'data-testid="test-status">500 Internal Server Error<' in body
    assert f'href="{EP}logs/?deployment=green" data-testid="test-logs-link"' in body


def test_the_test_tab_is_for_contributors(client_as, blue_green, answers):
    body = text(client_as("reader").get(f"{EP}test/"))
    assert "Testing needs the contributor role" in body and 'id="test-form"' not in body
    assert client_as("reader").post(f"{EP}test/", {"request": "{}"}).status_code == 403
    assert answers == []


# Consume


def test_consume_shows_url_curl_and_key_prefixes(client_as, blue_green):
    body = text(client_as("contributor").get(f"{EP}consume/"))
    url = "http://testserver/api/v1/workspaces/team-a/online-endpoints/adder/score"
    assert f'id="consume-url" value="{url}"' in body
    curl = html.unescape(re.search(r'<pre class="yaml command mb-3" id="curl-example"><code>(.*?)</code>', body, re.S).group(1))
    assert curl.split() == ["curl", "-X", "POST", url, "\\", "-H", '"Authorization:', 'Bearer', '$KEY"', "\\",
                            "-H", '"Content-Type:', 'application/json"', "\\", "-d", "@request.json"]
    for key_type in ("primary", "secondary"):
        assert f"{blue_green.key_prefixes[key_type]}…" in body
        assert f'Regenerate<span class="visually-hidden"> {key_type}</span>' in body
        assert re.search(r'made \d{4}-\d\d-\d\d \d\d:\d\d<', body)


def test_a_reader_sees_the_url_but_no_keys(client_as, blue_green):
    body = text(client_as("reader").get(f"{EP}consume/"))
    assert "curl -X POST" in body and blue_green.key_prefixes["primary"] not in body and "Regenerate" not in body
    assert client_as("reader").post(f"{EP}keys/regenerate/", {"key_type": "primary"}).status_code == 403
    assert OnlineEndpoint.objects.get(pk=blue_green.pk).primary_key_hash == blue_green.primary_key_hash


def test_regenerating_a_key_shows_the_new_one_once(client_as, blue_green):
    response = client_as("contributor").post(f"{EP}keys/regenerate/", {"key_type": "secondary"})
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    new = re.search(r'id="new-key-value" value="([^"]+)"', text(response)).group(1)
    endpoint = OnlineEndpoint.objects.get(pk=blue_green.pk)
    assert keys.hash_key(new) == endpoint.secondary_key_hash != blue_green.secondary_key_hash
    assert endpoint.primary_key_hash == blue_green.primary_key_hash  # the other key keeps working
    assert f"{new[:6]}…" in text(response) and "only time it is shown" in text(response)
    assert new not in text(client_as("contributor").get(f"{EP}consume/"))


def test_a_token_endpoint_has_no_keys_to_regenerate(client_as, owner, workspace):
    endpoint_create(user=owner, workspace=workspace, data={"name": "tokened", "compute": "local", "auth_mode": "aml_token"})
    body = text(client_as("owner").get("/w/team-a/endpoints/tokened/consume/"))
    assert "Regenerate" not in body and "Dockyard API token" in body
    response = client_as("owner").post("/w/team-a/endpoints/tokened/keys/regenerate/", {"key_type": "primary"}, follow=True)
    assert "it has no keys" in html.unescape(text(response))


# Logs and manifests


def test_logs_show_the_last_lines_of_the_chosen_deployment(client_as, blue_green):
    for name in ("blue", "green"):
        deployment = OnlineDeployment.objects.select_related("endpoint__workspace").get(name=name)
        folder = folder_of(deployment)
        folder.mkdir(parents=True)
        (folder / runner.LOG_FILE).write_text("".join(f"{name} line {n}\n" for n in range(1, 6)))
    body = text(client_as("reader").get(f"{EP}logs/"))
    assert "blue line 5" in body and "green line" not in body and "5 lines of blue" in body
    pane = text(client_as("reader").get(f"{EP}logs/?deployment=green&lines=50", HTTP_HX_REQUEST="true"))
    assert pane.lstrip().startswith('<div id="log-pane" data-deployment="green">')
    assert re.findall(r'<div class="log-line">(.*?)</div>', pane) == [f"green line {n}" for n in range(1, 6)]
    pane = text(client_as("reader").get(f"{EP}logs/?deployment=green&lines=2", HTTP_HX_REQUEST="true"))
    assert re.findall(r'<div class="log-line">(.*?)</div>', pane) == ["green line 4", "green line 5"]


def test_logs_of_a_deployment_that_printed_nothing(client_as, blue_green):
    assert "blue has printed nothing yet" in text(client_as("reader").get(f"{EP}logs/"))


def test_a_local_endpoint_has_no_manifests(client_as, blue_green):
    body = text(client_as("reader").get(f"{EP}manifests/"))
    assert "Not a Kubernetes endpoint" in body


def test_a_kubernetes_endpoint_shows_its_httproute_and_deployment_objects(client_as, kube_endpoint):
    route = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
             "metadata": {"name": "team-a-fraud", "namespace": "ml"},
             "spec": {"rules": [{"backendRefs": [{"name": "team-a-fraud-blue", "port": 80, "weight": 100}]}]}}
    OnlineEndpoint.objects.filter(pk=kube_endpoint.pk).update(
        manifests=[route], status={"route": {"state": "Accepted", "reason": ""}})
    objects = [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "team-a-fraud-blue"}},
               {"spec": {"replicas": 2}, "kind": "Deployment", "apiVersion": "apps/v1", "metadata": {"name": "team-a-fraud-blue"}}]
    OnlineDeployment.objects.filter(name="blue").update(manifests=objects)
    body = html.unescape(text(client_as("reader").get("/w/team-a/endpoints/fraud/manifests/")))
    assert "kind: HTTPRoute" in body and "weight: 100" in body and 'id="route-state">Accepted<' in body
    deployment = re.search(r'data-deployment-manifest="blue">(.*?)</pre>', body, re.S).group(1)
    assert "kind: Service" in deployment and "---" in deployment
    assert re.search(r"apiVersion: apps/v1\nkind: Deployment\nmetadata:", deployment)  # kubectl's key order


def test_a_cluster_without_the_gateway_api_says_so(client_as, kube_endpoint):
    OnlineEndpoint.objects.filter(pk=kube_endpoint.pk).update(status={"route": {
        "state": "Unavailable", "reason": "The cluster has no Gateway API (HTTPRoute CRD): Dockyard's score URL routes the traffic."}})
    body = html.unescape(text(client_as("reader").get("/w/team-a/endpoints/fraud/manifests/")))
    assert "No HTTPRoute is applied: The cluster has no Gateway API" in body
    assert "Rendered when the worker first applies the deployment." in body  # blue has none yet
    details = html.unescape(text(client_as("reader").get("/w/team-a/endpoints/fraud/")))
    assert re.search(r'id="route-status"><span class="badge rounded-pill route route-unavailable">Unavailable</span>', details)


@pytest.mark.parametrize("url", ["nope/", "adder/nope/"])
def test_unknown_endpoints_and_tabs_are_404(client_as, endpoint, url):
    assert client_as("owner").get(f"{LIST}{url}").status_code == 404


def test_the_list_costs_the_same_queries_for_many_endpoints(client_as, owner, workspace, endpoint, django_assert_num_queries):
    add(owner, endpoint, "blue")
    client = client_as("reader")
    client.get(LIST)  # the first request of a session costs more
    with CaptureQueriesContext(connection) as one:
        client.get(LIST)
    for number in range(5):
        more, _ = endpoint_create(user=owner, workspace=workspace, data={"name": f"more-{number}", "compute": "local"})
        add(owner, more, "blue")
        add(owner, more, "green")
    with django_assert_num_queries(len(one)):
        assert 'data-endpoint="more-4"' in text(client.get(LIST))
