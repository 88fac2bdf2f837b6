"""Compute instances over the API: where they run, their user, start/stop/restart, run state and links in GET."""
import pytest
from django.contrib.auth import get_user_model

from compute.models import ComputeInstance, ComputeTarget
from compute.tests.factories import as_checked, body, create_compute, host
from controlplane.reconciling import ProvisioningState
from tests.support import assert_error
from workspaces.models import AuditEvent, Membership

URL = "/api/v1/workspaces/team-a/computes/"
LINKS = {"jupyterlab": "/instances/team-a/notebook/jupyter/lab", "vscode": "/instances/team-a/notebook/vscode/",
         "terminal": "/instances/team-a/notebook/jupyter/terminals/1"}


@pytest.fixture
def k8s(workspace):
    return host(workspace)


@pytest.fixture
def notebook(workspace, owner, k8s):
    return create_compute(workspace, owner, "computeinstance")


def instance_of(compute: ComputeTarget) -> ComputeInstance:
    return ComputeInstance.objects.get(compute=compute)


def observed(compute: ComputeTarget, state: str) -> None:
    """As if reconcile had seen the instance in `state`."""
    ComputeInstance.objects.filter(compute=compute).update(state=state)


# --- create -------------------------------------------------------------------------------------------------------

def test_create_makes_the_run_state_and_a_token_never_shown(owner_api, workspace, k8s, owner):
    response = owner_api.post(URL, body("computeinstance"), format="json")
    assert response.status_code == 201, response.json()
    shown = response.json()
    assert (shown["kubernetes_compute"], shown["assigned_user"], shown["size"], shown["instance_type"]) == (
        "k8s", "olivia", "Standard_DS3_v2", None)
    assert (shown["state"], shown["desired_state"], shown["stop_cause"], shown["last_activity"]) == (
        "Creating", "running", "", None)
    assert shown["applications"] == LINKS
    compute = ComputeTarget.objects.get(name="notebook")
    token = compute.secrets["token"]
    assert len(token) == 43 and token not in response.content.decode()
    assert token not in compute.secrets_encrypted  # encrypted at rest
    assert (instance_of(compute).assigned_user, instance_of(compute).state) == (owner, "Creating")
    assert token not in owner_api.get(URL + "notebook/").content.decode()


def test_neither_instance_type_nor_size_means_the_default_instance_type(owner_api, workspace, k8s):
    response = owner_api.post(URL, body("computeinstance", size=None), format="json")
    assert response.status_code == 201, response.json()
    assert (response.json()["size"], response.json()["instance_type"]) == (None, None)


@pytest.mark.parametrize("computes, named, expected", [
    (["k8s"], None, "k8s"),
    (["k8s", "gpu"], "gpu", "gpu"),
])
def test_kubernetes_compute_is_the_only_one_or_the_one_named(owner_api, workspace, computes, named, expected):
    for name in computes:
        ComputeTarget.objects.create(workspace=workspace, name=name, type="kubernetes", properties={"namespace": "ml"})
    response = owner_api.post(URL, body("computeinstance", kubernetes_compute=named), format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["kubernetes_compute"] == expected


@pytest.mark.parametrize("computes, named, local, says", [
    (["k8s", "gpu"], None, False, "Several kubernetes computes could host this compute instance (gpu, k8s)"),
    ([], None, False, "this workspace has none"),
    (["k8s"], "nowhere", False, "There is no compute named 'nowhere' in this workspace; the kubernetes computes here: k8s."),
    (["k8s"], "local", False, "Local compute is not enabled for workspace 'team-a'"),
])
def test_kubernetes_compute_refused_names_the_choices(owner_api, workspace, computes, named, local, says):
    for name in computes:
        ComputeTarget.objects.create(workspace=workspace, name=name, type="kubernetes", properties={"namespace": "ml"})
    before = ComputeTarget.objects.count()
    error = assert_error(owner_api.post(URL, body("computeinstance", kubernetes_compute=named), format="json"), 400,
                         "ValidationError", "kubernetes_compute")
    assert says in str(error)
    assert ComputeTarget.objects.count() == before and not ComputeInstance.objects.exists()


@pytest.mark.usefixtures("local_compute")
@pytest.mark.parametrize("named", [None, "local"])
def test_local_where_the_workspace_allows_it(owner_api, workspace, named):
    response = owner_api.post(URL, body("computeinstance", kubernetes_compute=named), format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["kubernetes_compute"] == "local"


@pytest.mark.usefixtures("local_compute")
def test_local_has_no_instance_types(owner_api, workspace):
    data = body("computeinstance", kubernetes_compute="local", size=None, instance_type="small")
    assert_error(owner_api.post(URL, data, format="json"), 400, "ValidationError", "instance_type")


def test_instance_type_or_size_not_both(owner_api, workspace, k8s):
    error = assert_error(owner_api.post(URL, body("computeinstance", instance_type="small"), format="json"), 400,
                         "ValidationError", "instance_type")
    assert "not both" in str(error)


def test_an_instance_type_the_proven_cluster_lacks_is_refused_naming_its_types(owner_api, workspace, k8s):
    as_checked(k8s)
    data = body("computeinstance", size=None, instance_type="huge")
    error = assert_error(owner_api.post(URL, data, format="json"), 400, "ValidationError", "instance_type")
    assert "has no instance type 'huge'; it has: defaultinstancetype." in str(error)
    ok = owner_api.post(URL, body("computeinstance", size=None, instance_type="defaultinstancetype"), format="json")
    assert ok.status_code == 201, ok.json()


def test_an_instance_type_of_an_unchecked_cluster_is_taken_for_reconcile_to_judge(owner_api, workspace, k8s):
    response = owner_api.post(URL, body("computeinstance", size=None, instance_type="huge"), format="json")
    assert response.status_code == 201, response.json()


def test_patch_choosing_an_instance_type_replaces_the_size(owner_api, notebook):
    response = owner_api.patch(URL + "notebook/", {"instance_type": "small"}, format="json")
    assert response.status_code == 200, response.json()
    assert (response.json()["instance_type"], response.json()["size"]) == ("small", None)


def test_kubernetes_compute_is_fixed_once_created(owner_api, workspace, notebook):
    ComputeTarget.objects.create(workspace=workspace, name="gpu", type="kubernetes", properties={"namespace": "ml"})
    assert_error(owner_api.patch(URL + "notebook/", {"kubernetes_compute": "gpu"}, format="json"), 400, "ImmutableField",
                 "kubernetes_compute")


# --- assigned user ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("username, says", [
    ("oscar", "'oscar' is not a member of workspace 'team-a'"),
    ("reader-user", "'reader-user' is a reader of workspace 'team-a'"),
    ("nobody", "'nobody' is not a member of workspace 'team-a'"),
    ("bad name!", "Must be a user name"),
])
def test_assigned_user_must_be_a_contributor_or_owner_of_the_workspace(owner_api, users, k8s, username, says):
    error = assert_error(owner_api.post(URL, body("computeinstance", assigned_user=username), format="json"), 400,
                         "ValidationError", "assigned_user")
    assert says in str(error)
    assert not ComputeTarget.objects.filter(type="computeinstance").exists()


def test_an_owner_reassigns_it(owner_api, users, notebook):
    response = owner_api.patch(URL + "notebook/", {"assigned_user": "contributor-user"}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["assigned_user"] == "contributor-user"
    assert instance_of(notebook).assigned_user == users["contributor"]
    event = AuditEvent.objects.filter(action="update", target_name="notebook").get()
    assert event.changes["assigned_user"] == ["olivia", "contributor-user"]


# --- SSH and the other refused fields -----------------------------------------------------------------------------

@pytest.mark.parametrize("field, value", [("ssh_public_access_enabled", True), ("ssh_public_access_enabled", "yes"),
                                          ("ssh_settings", {"ssh_key_value": "ssh-ed25519 AAAAC3 me"})])
def test_ssh_is_refused_with_the_reason(owner_api, k8s, field, value):
    error = assert_error(owner_api.post(URL, body("computeinstance", **{field: value}), format="json"), 400,
                         "ValidationError", field)
    assert "open a terminal in its JupyterLab" in str(error)


def test_no_ssh_said_plainly_is_taken(owner_api, k8s):
    data = body("computeinstance", ssh_public_access_enabled=False, ssh_settings={})
    assert owner_api.post(URL, data, format="json").status_code == 201


# --- start / stop / restart ---------------------------------------------------------------------------------------

def test_stop_then_start(owner_api, notebook, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        response = owner_api.post(URL + "notebook/stop/")
    assert response.status_code == 202, response.json()
    assert (response.json()["desired_state"], response.json()["stop_cause"]) == ("stopped", "user")
    assert len(callbacks) == 1  # reconcile after commit
    notebook.refresh_from_db()
    assert notebook.generation == 2
    observed(notebook, "Stopped")
    response = owner_api.post(URL + "notebook/start/")
    assert response.status_code == 202, response.json()
    assert (response.json()["desired_state"], response.json()["stop_cause"]) == ("running", "")
    verbs = list(AuditEvent.objects.filter(action="action", target_name="notebook").order_by("pk").values_list(
        "verb", "changes"))
    assert verbs == [("stop", {"desired_state": ["running", "stopped"], "stop_cause": ["", "user"]}),
                     ("start", {"desired_state": ["stopped", "running"], "stop_cause": ["user", ""]})]


@pytest.mark.parametrize("state, desired, action, says", [
    ("Running", "running", "start", "It is already running"),
    ("Creating", "running", "start", "It is already creating"),
    ("Stopped", "stopped", "stop", "It is already stopped"),
    ("Stopping", "stopped", "stop", "It is already stopping"),
    ("Stopped", "stopped", "restart", "start it instead"),
    ("Starting", "running", "restart", "It is still starting"),
])
def test_what_cannot_be_done_now_is_a_conflict_changing_nothing(owner_api, notebook, state, desired, action, says):
    ComputeInstance.objects.filter(compute=notebook).update(state=state, desired_state=desired)
    before = (notebook.generation, AuditEvent.objects.count())
    error = assert_error(owner_api.post(URL + f"notebook/{action}/"), 409, "Conflict")
    assert says in error["message"]
    notebook.refresh_from_db()
    assert (notebook.generation, AuditEvent.objects.count()) == before


def test_a_failed_instance_can_be_started_again(owner_api, notebook):
    observed(notebook, "Failed")
    assert owner_api.post(URL + "notebook/start/").status_code == 202
    notebook.refresh_from_db()
    assert notebook.generation == 2


def test_restart_of_a_running_instance_asks_for_a_new_pod(owner_api, notebook):
    observed(notebook, "Running")
    response = owner_api.post(URL + "notebook/restart/")
    assert response.status_code == 202, response.json()
    assert instance_of(notebook).restart_requested_at is not None


@pytest.mark.parametrize("action", ["start", "stop", "restart"])
def test_other_types_are_refused(owner_api, workspace, owner, action):
    create_compute(workspace, owner, "amlcompute")
    error = assert_error(owner_api.post(URL + f"cpu-cluster/{action}/"), 400, "UnsupportedComputeType", "name")
    assert "only a compute instance" in error["message"]


def test_an_instance_being_deleted_is_not_started(owner_api, notebook):
    ComputeTarget.objects.filter(pk=notebook.pk).update(provisioning_state=ProvisioningState.DELETING)
    assert_error(owner_api.post(URL + "notebook/stop/"), 409, "Conflict")


def test_its_assigned_contributor_starts_and_stops_it_and_opens_it(api_as, users, workspace, owner, k8s):
    create_compute(workspace, owner, "computeinstance", assigned_user="contributor-user")
    contributor = api_as("contributor")
    assert contributor.get(URL + "notebook/").json()["applications"] == LINKS
    assert contributor.post(URL + "notebook/stop/").status_code == 202
    # the owner may stop and start it, but not open it: only its user (and staff) do
    assert api_as("owner").get(URL + "notebook/").json()["applications"] is None
    assert api_as("staff").get(URL + "notebook/").json()["applications"] == LINKS


def test_a_contributor_who_is_not_its_user_may_not_act_or_open(api_as, users, notebook):
    contributor = api_as("contributor")
    assert contributor.get(URL + "notebook/").json()["applications"] is None
    error = assert_error(contributor.post(URL + "notebook/stop/"), 403, "Forbidden")
    assert "assigned user" in error["message"]
    assert instance_of(notebook).desired_state == "running"


# --- lists --------------------------------------------------------------------------------------------------------

def test_list_queries_do_not_grow_with_instances(owner_api, workspace, owner, k8s, django_assert_max_num_queries):
    create_compute(workspace, owner, "computeinstance", name="one")
    with django_assert_max_num_queries(20) as one:
        owner_api.get(URL)
    for index in range(10):
        create_compute(workspace, owner, "computeinstance", name=f"box{index}")
    with django_assert_max_num_queries(len(one.captured_queries)):
        rows = owner_api.get(URL).json()["results"]
    assert len(rows) == 12
    assert {row["applications"]["jupyterlab"] for row in rows if row["type"] == "computeinstance"} == {
        f"/instances/team-a/{name}/jupyter/lab" for name in ["one", *(f"box{i}" for i in range(10))]}


def test_an_instance_whose_user_was_deleted_shows_no_user_and_no_links(owner_api, workspace, make_user, k8s):
    gone = make_user("gone")
    Membership.objects.create(workspace=workspace, user=gone, role="contributor")
    create_compute(workspace, gone, "computeinstance")
    get_user_model().objects.filter(pk=gone.pk).delete()
    shown = owner_api.get(URL + "notebook/").json()
    assert (shown["assigned_user"], shown["applications"]) == (None, None)
