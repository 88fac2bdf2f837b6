"""The studio's compute instances: the hub tab's rows (state, user, shape, last activity), who sees which buttons and
open links, Start / Stop / Restart through the service (CSRF, 403, errors in the row), the details page's panel
(idle shutdown, why it stopped, where it runs, polling while between states) and schedules as sentences."""
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from compute.choices import DesiredState, InstanceState, StopCause
from compute.models import ComputeInstance, ComputeTarget
from controlplane.reconciling import ProvisioningState
from frontend.templatetags.studio import schedule_sentence
from workspaces.choices import Role
from workspaces.models import Membership

TAB = "/w/team-a/compute/?tab=instances"
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]


def text(response) -> str:
    return response.content.decode()


def make_instance(workspace, owner, name: str, user, state: str = InstanceState.RUNNING, **fields) -> ComputeTarget:
    """A compute instance as the create service and the reconcile leave it (the test writes the observed state)."""
    properties = {"kubernetes_compute": "k8s", "size": "Standard_DS3_v2", "idle_time_before_shutdown_minutes": 30,
                  **fields.pop("properties", {})}
    compute = ComputeTarget.objects.create(workspace=workspace, name=name, type="computeinstance", created_by=owner,
                                           provisioning_state=ProvisioningState.SUCCEEDED, properties=properties)
    desired = DesiredState.STOPPED if state in (InstanceState.STOPPED, InstanceState.STOPPING) else DesiredState.RUNNING
    ComputeInstance.objects.create(compute=compute, assigned_user=user, state=state, desired_state=desired,
                                   state_changed_at=timezone.now(), **fields)
    return compute


@pytest.fixture
def host(workspace, owner):
    return ComputeTarget.objects.create(
        workspace=workspace, name="k8s", type="kubernetes", created_by=owner, provisioning_state=ProvisioningState.SUCCEEDED,
        properties={"server": "https://k8s.example.internal:6443", "namespace": "ml-team"})


@pytest.fixture
def box(workspace, owner, users, host):
    """`box`, running, assigned to the contributor, last active 14:02 with an idle kernel."""
    at = timezone.localtime().replace(hour=14, minute=2, second=0, microsecond=0)
    return make_instance(workspace, owner, "box", users["contributor"], last_activity=at, last_activity_source="kernel idle")


def row_of(body: str, name: str) -> str:
    match = re.search(rf'<tr data-compute="{name}".*?</tr>', body, re.S)
    assert match, f"no row {name}"
    return match.group(0)


def buttons(row: str) -> dict[str, bool]:
    """{action: enabled} of the row's Start / Stop / Restart."""
    found = re.findall(r'<button[^>]*data-action="(\w+)"[^>]*?( disabled)?>', row, re.S)
    return {action: not disabled for action, disabled in found}


def links(row: str) -> dict[str, str]:
    return dict((label, url) for url, label in re.findall(r'<a [^>]*href="([^"]+)" target="_blank"[^>]*data-app="([^"]+)"', row))


def test_the_tab_shows_state_user_shape_and_last_activity(client_as, box, workspace, owner, users):
    make_instance(workspace, owner, "starting-box", users["owner"], InstanceState.STARTING)
    make_instance(workspace, owner, "broken-box", users["owner"], InstanceState.FAILED,
                  state_reason="No node fits 4 vCPUs and 14 GiB: the cluster's largest node has 2 vCPUs.")
    make_instance(workspace, owner, "gpu-box", users["owner"], InstanceState.STOPPED, properties={"instance_type": "gpu-small"})
    body = text(client_as("contributor").get(TAB))
    row = row_of(body, "box")
    assert 'data-state="Running"' in row and "state-success" in row
    assert "contributor-user" in row
    assert "Standard_DS3_v2 (4 vCPUs, 14 GiB)" in row
    assert re.search(r"data-last-activity>14:02, kernel idle<", row)
    assert "spinner-border" in row_of(body, "starting-box")
    failed = row_of(body, "broken-box")
    assert "state-danger" in failed and 'title="No node fits 4 vCPUs' in failed and "<details" in failed
    assert "instance type gpu-small" in row_of(body, "gpu-box") and "state-secondary" in row_of(body, "gpu-box")
    assert 'hx-trigger="every 2s"' in body  # starting-box is between states: the tab polls


def test_a_settled_tab_does_not_poll(client_as, box):
    assert "hx-trigger=\"every" not in text(client_as("contributor").get(TAB))


@pytest.mark.parametrize(("role", "acts", "opens"), [
    ("contributor", True, True),  # the assigned user
    ("owner", True, False),  # owners start and stop anyone's instance, but open only their own
    ("staff", True, True),
    ("reader", False, False),
])
def test_who_sees_buttons_and_open_links(client_as, box, role, acts, opens):
    row = row_of(text(client_as(role).get(TAB)), "box")
    assert buttons(row) == ({"start": False, "stop": True, "restart": True} if acts else {})
    expected = {"JupyterLab": "/instances/team-a/box/jupyter/lab", "VS Code": "/instances/team-a/box/vscode/",
                "Terminal": "/instances/team-a/box/jupyter/terminals/1"}
    assert links(row) == (expected if opens else {})


def test_another_contributor_sees_neither(client_as, box, workspace, make_user):
    other = make_user("carla")
    Membership.objects.create(workspace=workspace, user=other, role=Role.CONTRIBUTOR)
    client = Client()
    client.force_login(other)
    row = row_of(text(client.get(TAB)), "box")
    assert buttons(row) == {} and links(row) == {}


def test_a_stopped_instance_offers_start_and_no_links(client_as, workspace, owner, users, host):
    make_instance(workspace, owner, "box", users["contributor"], InstanceState.STOPPED)
    row = row_of(text(client_as("contributor").get(TAB)), "box")
    assert buttons(row) == {"start": True, "stop": False, "restart": False}
    assert links(row) == {}


def test_stop_from_the_row_asks_the_service_and_swaps_the_row(client_as, box):
    response = client_as("contributor").post("/w/team-a/compute/box/instance/stop/", {"view": "row"})
    assert response.status_code == 200
    instance = ComputeInstance.objects.get(compute=box)
    assert (instance.desired_state, instance.stop_cause) == (DesiredState.STOPPED, StopCause.USER)
    assert ComputeTarget.objects.get(pk=box.pk).generation == box.generation + 1
    row = text(response)
    assert row.lstrip().startswith("<tr") and 'data-compute="box"' in row
    # asked to stop, not stopped yet: shown as Stopping (the reconcile writes its own state next), Stop no longer offered
    assert 'data-state="Stopping"' in row and buttons(row) == {"start": False, "stop": False, "restart": False}
    assert links(row) == {}


def test_a_refused_action_is_said_in_the_row_and_changes_nothing(client_as, box):
    response = client_as("contributor").post("/w/team-a/compute/box/instance/start/", {"view": "row"})
    assert response.status_code == 200
    assert "already running" in text(response) and "data-action-error" in text(response)
    assert ComputeTarget.objects.get(pk=box.pk).generation == box.generation


@pytest.mark.parametrize(("role", "code"), [("reader", 403), ("outsider", 404), ("anonymous", 302)])
def test_others_cannot_act(client_as, box, role, code):
    response = client_as(role).post("/w/team-a/compute/box/instance/stop/", {"view": "row"})
    assert response.status_code == code
    assert ComputeInstance.objects.get(compute=box).desired_state == DesiredState.RUNNING


def test_a_contributor_not_assigned_gets_403(box, workspace, make_user):
    other = make_user("carla")
    Membership.objects.create(workspace=workspace, user=other, role=Role.CONTRIBUTOR)
    client = Client()
    client.force_login(other)
    assert client.post("/w/team-a/compute/box/instance/stop/").status_code == 403
    assert ComputeInstance.objects.get(compute=box).desired_state == DesiredState.RUNNING


def test_actions_need_the_csrf_token_the_page_carries(box, users):
    client = Client(enforce_csrf_checks=True)
    client.force_login(users["contributor"])
    assert client.post("/w/team-a/compute/box/instance/stop/").status_code == 403
    assert ComputeInstance.objects.get(compute=box).desired_state == DesiredState.RUNNING
    token = re.search(r'"X-CSRFToken": "([^"]+)"', text(client.get(TAB))).group(1)
    assert client.post("/w/team-a/compute/box/instance/stop/", HTTP_X_CSRFTOKEN=token).status_code == 200
    assert ComputeInstance.objects.get(compute=box).desired_state == DesiredState.STOPPED


@pytest.mark.parametrize(("method", "path", "code"), [
    ("get", "/w/team-a/compute/box/instance/stop/", 405),
    ("post", "/w/team-a/compute/box/instance/explode/", 404),
    ("post", "/w/team-a/compute/k8s/instance/stop/", 404),  # not a compute instance
    ("get", "/w/team-a/compute/nope/instance/", 404),
])
def test_wrong_requests(owner_client, box, method, path, code):
    assert getattr(owner_client, method)(path).status_code == code


def test_details_page_says_idle_shutdown_where_it_runs_and_links(client_as, box):
    body = text(client_as("contributor").get("/w/team-a/compute/box/"))
    panel = re.search(r'<div class="card mb-4" id="instance-panel".*?</div>\s*</div>', body, re.S).group(0)
    assert "Stops after 30 min idle; last activity 14:02 (kernel idle)." in panel
    assert re.search(r'data-host>Kubernetes compute <a href="/w/team-a/compute/k8s/">k8s</a>, namespace <code>ml-team</code>', panel)
    assert "Standard_DS3_v2 (4 vCPUs, 14 GiB)" in panel
    assert links(panel)["JupyterLab"] == "/instances/team-a/box/jupyter/lab"
    assert "hx-trigger" not in panel  # running: nothing to poll for
    assert "{#" not in body and "{% comment" not in body
    assert re.search(r'<span id="compute-state">\s*<span [^>]*data-state="Running"', body)  # the title shows the run state


def test_details_page_polls_while_starting_and_says_why_it_stopped(client_as, workspace, owner, users, host):
    make_instance(workspace, owner, "box", users["contributor"], InstanceState.STARTING)
    client = client_as("contributor")
    body = text(client.get("/w/team-a/compute/box/"))
    assert 'hx-get="/w/team-a/compute/box/instance/"' in body and 'hx-trigger="every 2s"' in body
    at = timezone.localtime().replace(hour=14, minute=2, second=0, microsecond=0)
    ComputeInstance.objects.filter(compute__name="box").update(
        state=InstanceState.STOPPED, desired_state=DesiredState.STOPPED, stop_cause=StopCause.IDLE, last_activity=at,
        last_activity_source="kernel idle")
    panel = text(client.get("/w/team-a/compute/box/instance/"))
    assert "Stopped: idle for 30 min; last activity 14:02, kernel idle." in panel
    assert re.search(r'<span id="compute-state" hx-swap-oob="true">\s*<span [^>]*data-state="Stopped"', panel)
    assert "hx-trigger" not in panel  # settled: the polling stops


def test_stop_from_the_details_page_swaps_the_panel(client_as, box):
    response = client_as("staff").post("/w/team-a/compute/box/instance/restart/", {"view": "panel"})
    assert response.status_code == 200 and 'id="instance-panel"' in text(response)
    assert ComputeInstance.objects.get(compute=box).restart_requested_at is not None


def test_details_page_shows_schedules_as_sentences(client_as, workspace, owner, users, host):
    weekly = {"type": "recurrence", "frequency": "week", "interval": 1, "time_zone": "Europe/Berlin",
              "schedule": {"hours": [8], "minutes": [0], "week_days": WEEKDAYS}}
    make_instance(workspace, owner, "box", users["contributor"], properties={
        "schedules": {"compute_start_stop": [{"action": "start", "state": "enabled", "trigger": weekly}]}})
    body = text(client_as("contributor").get("/w/team-a/compute/box/"))
    sentence = re.search(r"<td data-sentence>(.*?)</td>", body, re.S).group(1)
    assert re.fullmatch(r"Starts every weekday at 08:00 Europe/Berlin <span[^>]*>next: (Mon|Tue|Wed|Thu|Fri) [-\d]+ 08:00</span>",
                        sentence.strip())


def test_a_valid_form_creates_the_instance_for_the_member_it_names(owner_client, users, host):
    form = {"name": "ci-1", "kubernetes_compute": "k8s", "size": "Standard_D4s_v3", "assigned_user": "contributor-user",
            "idle_time_before_shutdown_minutes": "45"}
    response = owner_client.post("/w/team-a/compute/new/computeinstance/", form)
    assert response.status_code == 302 and response["Location"] == "/w/team-a/compute/ci-1/"
    compute = ComputeTarget.objects.get(name="ci-1")
    assert compute.instance.assigned_user == users["contributor"] and compute.instance.state == InstanceState.CREATING
    body = text(owner_client.get("/w/team-a/compute/ci-1/"))
    assert 'hx-trigger="every 2s"' in body and "Stops after 45 min idle." in body


def recurrence(frequency, interval, days=None, hours=(8,), minutes=(0,), zone="UTC") -> dict:
    schedule = {"hours": list(hours), "minutes": list(minutes), **({"week_days": days} if days else {})}
    return {"type": "recurrence", "frequency": frequency, "interval": interval, "schedule": schedule, "time_zone": zone}


@pytest.mark.parametrize(("row", "sentence"), [
    ({"action": "start", "trigger": recurrence("week", 1, WEEKDAYS, zone="Europe/Berlin")},
     "Starts every weekday at 08:00 Europe/Berlin"),
    ({"action": "stop", "trigger": recurrence("day", 1, hours=(18,), minutes=(30,))}, "Stops every day at 18:30 UTC"),
    ({"action": "stop", "trigger": recurrence("week", 1, ["Saturday", "Sunday"], hours=(20,))},
     "Stops every weekend day at 20:00 UTC"),
    ({"action": "start", "trigger": recurrence("week", 2, ["Monday"], hours=(7,), minutes=(15,))},
     "Starts every 2 weeks on Monday at 07:15 UTC"),
    ({"action": "start", "trigger": recurrence("week", 1, ["Friday", "Monday"])}, "Starts every Monday, Friday at 08:00 UTC"),
    ({"action": "stop", "trigger": {"type": "cron", "expression": "0 18 * * 1-5", "time_zone": "Pacific Standard Time"}},
     "Stops on the cron schedule 0 18 * * 1-5 (Pacific Standard Time)"),
    ({"action": "start", "state": "Disabled", "trigger": recurrence("day", 1)}, "Starts every day at 08:00 UTC (disabled)"),
])
def test_schedule_sentences(row, sentence):
    assert schedule_sentence(row) == sentence


def test_last_activity_of_another_day_shows_its_date(client_as, workspace, owner, users, host):
    at = timezone.localtime() - timedelta(days=3)
    make_instance(workspace, owner, "box", users["contributor"], last_activity=at, last_activity_source="terminal")
    row = row_of(text(client_as("contributor").get(TAB)), "box")
    assert f"{at:%Y-%m-%d %H:%M}, terminal" in row


def select_options(body: str, name: str) -> dict[str, bool]:
    """{value: selected} of one <select> of the form."""
    block = re.search(rf'<select[^>]*name="{name}".*?</select>', body, re.S).group(0)
    return {value: bool(selected) for value, selected in re.findall(r'<option value="([^"]*)"( selected)?', block)}


def test_the_create_form_offers_hosts_members_instance_types_and_sizes(owner_client, users, host, settings, workspace):
    body = text(owner_client.get("/w/team-a/compute/new/computeinstance/"))
    assert select_options(body, "kubernetes_compute") == {"k8s": True}  # the only host: chosen
    assert select_options(body, "assigned_user") == {"olivia": True, "contributor-user": False}  # no reader
    assert 'name="instance_type"' in body and 'list="id_instance_type_sizes"' in body
    assert 'data-size-picker' in body and 'value="Standard_DS3_v2"' in body
    assert 'value="Standard_FX4mds"' not in body  # a cluster-only size
    assert 'name="schedule_action"' in body and 'href="/w/team-a/compute/new/computeinstance/yaml/"' in body
    settings.DOCKYARD_LOCAL_COMPUTE = True
    workspace.local_compute_enabled = True
    workspace.save(update_fields=["local_compute_enabled"])
    body = text(owner_client.get("/w/team-a/compute/new/computeinstance/"))
    assert select_options(body, "kubernetes_compute") == {"": False, "k8s": True, "local": False}


@pytest.mark.parametrize(("form", "field", "message"), [
    ({"size": "Standard_FX4mds"}, "size", "compute clusters only"),
    ({"idle_time_before_shutdown_minutes": "5"}, "idle_time_before_shutdown_minutes", "between 15 minutes"),
    ({"assigned_user": "reader-user"}, "assigned_user", "is a reader of workspace"),
    ({"kubernetes_compute": "local"}, "kubernetes_compute", "local"),
    ({"schedule_action": "start", "schedule_time": "08:00", "schedule_time_zone": "Mars/Olympus"}, "schedule",
     "not a known time zone"),
])
def test_the_create_form_shows_errors_at_their_field(owner_client, users, host, form, field, message):
    response = owner_client.post("/w/team-a/compute/new/computeinstance/", {"name": "ci-1", **form})
    assert response.status_code == 200
    chunk = re.search(rf'<div class="mb-3 field field-\w+">\s*<label class="form-label" for="id_{field}".*?<div class="form-text">',
                      text(response), re.S).group(0)
    assert message in " ".join(re.findall(r'invalid-feedback d-block">([^<]+)<', chunk))
    assert not ComputeTarget.objects.filter(name="ci-1").exists()
