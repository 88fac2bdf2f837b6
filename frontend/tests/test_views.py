"""The studio's pages through the Django test client: access, what each role sees, and the forms end to end."""
import re

import pytest
import yaml

from compute.choices import ComputeType
from compute.models import ComputeTarget
from compute.services import compute_create
from controlplane.reconciling import ProvisioningState
from workspaces.authentication import hash_token
from workspaces.models import ApiToken, AuditEvent, Membership, Workspace
from workspaces.services import member_add, workspace_create

KUBECONFIG = """apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev
  cluster: {server: "https://10.0.0.5:6443"}
contexts:
- name: dev
  context: {cluster: dev, user: admin}
users:
- name: admin
  user: {token: kube-secret-token}
"""
SSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nssh-secret-material\n-----END OPENSSH PRIVATE KEY-----\n"
RESOURCE_ID = "/subscriptions/0000/resourceGroups/rg/providers/Microsoft.Synapse/workspaces/syn/bigDataPools/pool"

WORKSPACE_PAGES = [
    "/w/team-a/compute/",
    "/w/team-a/compute/?tab=clusters",
    "/w/team-a/compute/?tab=kubernetes",
    "/w/team-a/compute/?tab=attached",
    "/w/team-a/compute/gpu-box/",
    "/w/team-a/jobs/",
    "/w/team-a/assets/",
    "/w/team-a/endpoints/",
    "/w/team-a/members/",
    "/w/team-a/events/",
]

# One valid form post per compute type, and the tab it must show up in.
VALID_FORMS = {
    "computeinstance": ({"name": "ci-1", "size": "Standard_DS3_v2", "idle_time_before_shutdown_minutes": "30"}, "instances"),
    "amlcompute": (
        {"name": "cpu-cluster", "size": "Standard_FX4mds", "tier": "low_priority", "min_instances": "0",
         "max_instances": "4", "idle_time_before_scale_down": "300"},
        "clusters",
    ),
    "kubernetes": ({"name": "k8s-dev", "kubeconfig": KUBECONFIG, "namespace": "team-a", "node_selector": "pool=gpu\n"}, "kubernetes"),
    "virtualmachine": ({"name": "vm-1", "address": "10.0.0.9", "admin_username": "azureuser", "ssh_private_key": SSH_KEY}, "attached"),
    "hdinsight": ({"name": "hdi-1", "address": "hdi.example.com", "admin_username": "sshuser", "admin_password": "pw-secret"}, "attached"),
    "datalakeanalytics": ({"name": "dla-1", "resource_id": RESOURCE_ID}, "attached"),
    "synapsespark": ({"name": "syn-1", "resource_id": RESOURCE_ID}, "attached"),
    "databricks": ({"name": "dbx-1", "workspace_url": "https://adb-1.2.azuredatabricks.net", "access_token": "dapi-secret"}, "attached"),
    "batch": ({"name": "batch-1", "account_name": "mybatch", "account_key": "batch-secret"}, "attached"),
}


def text(response) -> str:
    return response.content.decode()


@pytest.fixture
def gpu_box(workspace, owner):
    """An attached VM with a stored secret, for the details page."""
    return compute_create(
        user=owner, workspace=workspace,
        data={"name": "gpu-box", "type": "virtualmachine", "address": "10.0.0.7", "admin_username": "azureuser",
              "admin_password": "vm-secret-password", "tags": {"team": "vision"}},
    )


# Access


@pytest.mark.parametrize("path", ["/", "/tokens/", *WORKSPACE_PAGES, "/w/team-a/compute/new/amlcompute/",
                                  "/w/team-a/assets/models/new/yaml/", "/w/team-a/assets/models/m/versions/1/"])
def test_pages_need_a_login(client, workspace, path):
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


def test_login_with_password_then_logout_by_post_only(client, owner):
    page = client.get("/login/")
    assert page.status_code == 200 and 'name="csrfmiddlewaretoken"' in text(page)
    response = client.post("/login/", {"username": "olivia", "password": "correct-horse-battery"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/logout/").status_code == 405
    assert client.post("/logout/")["Location"] == "/login/"
    assert client.get("/").status_code == 302


def test_wrong_password_is_shown_on_the_login_page(client, owner):
    response = client.post("/login/", {"username": "olivia", "password": "nope"})
    assert response.status_code == 200
    assert "correct username and password" in text(response)


@pytest.mark.parametrize("path", WORKSPACE_PAGES)
@pytest.mark.parametrize("role", ["reader", "owner", "staff"])
def test_each_workspace_page_renders_for_members(client_as, gpu_box, role, path):
    response = client_as(role).get(path)
    assert response.status_code == 200
    body = text(response)
    assert 'data-testid="workspace-switcher"' in body and "Team A" in body
    assert 'href="/w/team-a/members/"' in body  # left navigation


@pytest.mark.parametrize("path", WORKSPACE_PAGES)
def test_non_members_get_404_not_403(client_as, gpu_box, path):
    response = client_as("outsider").get(path)
    assert response.status_code == 404
    assert "not a member" in text(response)


@pytest.mark.parametrize(
    "path, data",
    [
        ("/w/team-a/compute/new/amlcompute/", {"name": "x-cluster"}),
        ("/w/team-a/compute/gpu-box/delete/", {}),
        ("/w/team-a/members/", {"username": "oscar", "role": "owner"}),
        ("/w/team-a/members/olivia/role/", {"role": "reader"}),
        ("/w/team-a/members/olivia/remove/", {}),
    ],
)
def test_posts_recheck_the_role(client_as, users, gpu_box, path, data):
    assert client_as("outsider").post(path, data).status_code == 404
    response = client_as("contributor").post(path, data)
    assert response.status_code == 403
    assert "owner role" in text(response)
    assert Membership.objects.get(user=users["owner"]).role == "owner"
    assert ComputeTarget.objects.get(name="gpu-box").provisioning_state != ProvisioningState.DELETING
    assert not ComputeTarget.objects.filter(name="x-cluster").exists()


def test_workspace_switcher_lists_only_my_workspaces(client_as, users, workspace):
    workspace_create(user=users["outsider"], name="secret-team")
    workspace_create(user=users["reader"], name="reader-lab")
    body = text(client_as("reader").get("/w/team-a/compute/"))
    assert 'href="/w/reader-lab/compute/"' in body and 'href="/w/team-a/compute/"' in body
    assert "secret-team" not in body


# What each role sees


def test_reader_sees_no_manage_buttons(client_as, gpu_box):
    reader = client_as("reader")
    hub = text(reader.get("/w/team-a/compute/?tab=instances"))
    assert "/compute/new/" not in hub and "Owners of this workspace can create them" in hub
    assert "/compute/new/" not in text(reader.get("/w/team-a/compute/?tab=attached"))
    assert "delete-modal" not in text(reader.get("/w/team-a/compute/gpu-box/"))
    members = text(reader.get("/w/team-a/members/"))
    assert "Add member" not in members and "hx-post" not in members and "role-reader" in members
    assert reader.get("/w/team-a/compute/new/computeinstance/").status_code == 403


def test_owner_sees_manage_buttons(owner_client, gpu_box):
    empty_tab = text(owner_client.get("/w/team-a/compute/?tab=instances"))
    assert 'href="/w/team-a/compute/new/computeinstance/"' in empty_tab and "Create" in empty_tab
    attached = text(owner_client.get("/w/team-a/compute/?tab=attached"))
    assert "New" in attached and 'href="/w/team-a/compute/new/databricks/"' in attached
    assert "delete-modal" in text(owner_client.get("/w/team-a/compute/gpu-box/"))
    members = text(owner_client.get("/w/team-a/members/"))
    assert "Add member" in members and "/w/team-a/members/olivia/role/" in members


# Home and workspaces


def test_home_lists_workspaces_with_role_and_counts(client_as, gpu_box):
    body = text(client_as("contributor").get("/"))
    assert "Team A" in body and "role-contributor" in body
    assert "1 compute" in body and "3 members" in body


def test_create_workspace_from_home(owner_client, owner):
    response = owner_client.post("/", {"name": "vision", "display_name": "Vision", "description": "CV team"})
    assert response.status_code == 302 and response["Location"] == "/w/vision/compute/"
    assert Membership.objects.get(workspace__name="vision", user=owner).role == "owner"


@pytest.mark.parametrize(
    "name, message", [("Bad_Name", "Must be a DNS label"), ("team-a", "already exists"), ("", "This field is required")]
)
def test_workspace_errors_are_shown_inline(owner_client, workspace, name, message):
    response = owner_client.post("/", {"name": name})
    assert response.status_code == 200
    assert 'class="invalid-feedback"' in text(response) and message in text(response)
    assert Workspace.objects.count() == 1


def test_endpoints_are_an_honest_empty_state(client_as, workspace):
    endpoints = text(client_as("reader").get("/w/team-a/endpoints/"))
    assert "/api/v1/workspaces/team-a/online-endpoints/" in endpoints


# Compute hub and create forms


@pytest.mark.parametrize("compute_type", list(VALID_FORMS))
def test_create_page_renders_every_type(owner_client, workspace, compute_type):
    response = owner_client.get(f"/w/team-a/compute/new/{compute_type}/")
    assert response.status_code == 200
    body = text(response)
    assert 'hx-trigger="input changed delay:300ms' in body
    assert f"type: {compute_type}" in body  # the YAML panel starts filled in


def test_unknown_type_is_404(owner_client, workspace):
    assert owner_client.get("/w/team-a/compute/new/quantum/").status_code == 404


@pytest.fixture
def host(workspace, owner):
    """The Kubernetes compute a compute cluster lives on (the workspace's only one, so the form may leave it out)."""
    return ComputeTarget.objects.create(
        workspace=workspace, name="k8s-host", type="kubernetes", created_by=owner,
        provisioning_state=ProvisioningState.SUCCEEDED, properties={"server": "https://10.0.0.5:6443", "namespace": "ml"})


@pytest.mark.parametrize("compute_type", list(VALID_FORMS))
def test_valid_form_creates_the_compute_in_its_tab(owner_client, workspace, host, compute_type):
    form, tab = VALID_FORMS[compute_type]
    response = owner_client.post(f"/w/team-a/compute/new/{compute_type}/", form)
    assert response.status_code == 302, re.findall(r'invalid-feedback[^>]*>([^<]+)', text(response))
    # A Kubernetes cluster goes to its own page, which shows the attach checks as they run; a compute cluster to its
    # own, which shows its nodes; a compute instance to its own, which shows it settle into Running; an SSH host to its
    # own, which shows the host key to confirm and then the probes.
    own_page = compute_type in ("kubernetes", "amlcompute", "computeinstance", "virtualmachine", "hdinsight")
    landing = f"/w/team-a/compute/{form['name']}/" if own_page else f"/w/team-a/compute/?tab={tab}"
    assert response["Location"] == landing
    compute = ComputeTarget.objects.get(workspace=workspace, name=form["name"])
    assert compute.type == compute_type and compute.created_by.username == "olivia"
    listed = text(owner_client.get(f"/w/team-a/compute/?tab={tab}"))
    assert f'data-compute="{form["name"]}"' in listed and 'data-state="Creating"' in listed
    other_tab = "instances" if tab != "instances" else "clusters"
    assert f'data-compute="{form["name"]}"' not in text(owner_client.get(f"/w/team-a/compute/?tab={other_tab}"))


def test_form_fields_become_typed_values(owner_client, workspace, host):
    owner_client.post("/w/team-a/compute/new/amlcompute/", {**VALID_FORMS["amlcompute"][0], "tags": "team=vision\ncost=42\n"})
    compute = ComputeTarget.objects.get(name="cpu-cluster")
    assert compute.properties["max_instances"] == 4 and compute.properties["tier"] == "low_priority"
    assert compute.tags == {"team": "vision", "cost": "42"}
    owner_client.post("/w/team-a/compute/new/kubernetes/", VALID_FORMS["kubernetes"][0])
    kube = ComputeTarget.objects.get(name="k8s-dev")
    assert kube.properties["node_selector"] == {"pool": "gpu"} and kube.properties["server"] == "https://10.0.0.5:6443"
    assert kube.secrets["kubeconfig"] == KUBECONFIG


def test_schedule_row_becomes_a_recurrence(owner_client, workspace, host):
    form = {**VALID_FORMS["computeinstance"][0], "schedule_action": "stop", "schedule_time": "19:30",
            "schedule_days": ["Monday", "Friday"], "schedule_time_zone": "Europe/Berlin"}
    assert owner_client.post("/w/team-a/compute/new/computeinstance/", form).status_code == 302
    (schedule,) = ComputeTarget.objects.get(name="ci-1").properties["schedules"]["compute_start_stop"]
    assert schedule["action"] == "stop"
    assert schedule["trigger"]["schedule"] == {"hours": [19], "minutes": [30], "week_days": ["Monday", "Friday"]}
    assert schedule["trigger"]["frequency"] == "week" and schedule["trigger"]["time_zone"] == "Europe/Berlin"


def test_a_windows_time_zone_shows_with_its_iana_name_and_its_next_firing(owner_client, workspace, host):
    form = {**VALID_FORMS["computeinstance"][0], "schedule_action": "stop", "schedule_time": "19:30",
            "schedule_time_zone": "Pacific Standard Time"}
    assert owner_client.post("/w/team-a/compute/new/computeinstance/", form).status_code == 302
    (schedule,) = ComputeTarget.objects.get(name="ci-1").properties["schedules"]["compute_start_stop"]
    assert schedule["trigger"]["time_zone"] == "Pacific Standard Time"  # stored as written
    body = owner_client.get("/w/team-a/compute/ci-1/").content.decode()
    zone = re.search(r"<td data-time-zone>(.*?)</td>", body, re.S).group(1)
    assert "Pacific Standard Time" in zone and "(America/Los_Angeles)" in zone
    assert re.search(r"<td data-when>(.*?)</td>", body, re.S).group(1) == "every day at 19:30"
    sentence = re.search(r"<td data-sentence>(.*?)</td>", body, re.S).group(1)
    assert sentence.startswith("Stops every day at 19:30 Pacific Standard Time") and "next: " in sentence
    assert "data-backend" not in body  # compute instances run: no "records only" note


def test_a_stored_nested_secret_shows_hidden_in_its_mapping_of_the_yaml():
    from frontend.forms.compute import body_yaml

    shown = yaml.safe_load(body_yaml("virtualmachine", {"name": "vm", "ssh_settings": {"admin_username": "azureuser"}},
                                     ("ssh_settings.admin_password",)))
    assert shown["ssh_settings"] == {"admin_username": "azureuser", "admin_password": "<hidden>"}


def test_kubeconfig_may_come_as_a_file(owner_client, workspace):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("config", KUBECONFIG.encode())
    response = owner_client.post("/w/team-a/compute/new/kubernetes/", {"name": "k8s-file", "kubeconfig_file": upload})
    assert response.status_code == 302
    assert ComputeTarget.objects.get(name="k8s-file").secrets["kubeconfig"] == KUBECONFIG


def field_error(body: str, field: str) -> str:
    """The error text rendered under one field of the create form."""
    for chunk in body.split('<div class="mb-3 field ')[1:]:
        if f'for="id_{field}"' in chunk:
            return " ".join(re.findall(r'invalid-feedback d-block">([^<]+)<', chunk))
    return ""


@pytest.mark.parametrize(
    "compute_type, form, field, message",
    [
        ("amlcompute", {"name": "1cluster"}, "name", "must start with a letter"),
        ("amlcompute", {"name": "c1", "min_instances": "5", "max_instances": "2"}, "min_instances", "must not exceed max_instances"),
        ("amlcompute", {"name": "c1", "size": "Standard_NC6"}, "size", "retired"),
        ("computeinstance", {"name": "c1", "size": "Standard_FX4mds"}, "size", "compute clusters only"),
        ("computeinstance", {"name": "c1", "idle_time_before_shutdown_minutes": "5"}, "idle_time_before_shutdown_minutes", "between 15 minutes"),
        ("computeinstance", {"name": "c1", "schedule_action": "start", "schedule_time": ""}, "schedule", "HH:MM"),
        ("computeinstance", {"name": "c1", "schedule_action": "start", "schedule_time": "08:00", "schedule_time_zone": "Mars/Olympus"}, "schedule", "not a known time zone"),
        ("kubernetes", {"name": "k1"}, "kubeconfig", "A kubeconfig is required"),
        ("kubernetes", {"name": "k1", "kubeconfig": "kind: Config\n"}, "kubeconfig", "no current-context"),
        ("kubernetes", {"name": "k1", "kubeconfig": KUBECONFIG, "node_selector": "just-a-word"}, "node_selector", "is not key=value"),
        ("virtualmachine", {"name": "v1", "address": "169.254.169.254", "admin_username": "u", "admin_password": "p"}, "address", "cloud metadata"),
        ("virtualmachine", {"name": "v1", "address": "10.0.0.1", "admin_username": "u"}, "admin_password", "Give admin_password or ssh_private_key"),
        ("batch", {"name": "b1", "account_name": "UPPER"}, "account_name", "lowercase"),
    ],
)
def test_invalid_form_shows_errors_next_to_fields_and_creates_nothing(owner_client, workspace, compute_type, form, field, message):
    response = owner_client.post(f"/w/team-a/compute/new/{compute_type}/", form)
    assert response.status_code == 200
    assert message in field_error(text(response), field)
    assert not ComputeTarget.objects.exists()


def test_secrets_are_not_echoed_after_a_failed_post(owner_client, workspace):
    response = owner_client.post("/w/team-a/compute/new/kubernetes/", {"name": "1bad", "kubeconfig": KUBECONFIG})
    assert response.status_code == 200
    assert "kube-secret-token" not in text(response) and "kubeconfig: &lt;hidden&gt;" in text(response)


def test_taken_name_is_reported_at_the_name(owner_client, gpu_box):
    response = owner_client.post("/w/team-a/compute/new/batch/", {"name": "gpu-box", "account_name": "abc", "account_key": "k"})
    assert response.status_code == 200
    assert "already exists" in field_error(text(response), "name")
    assert ComputeTarget.objects.get(name="gpu-box").type == "virtualmachine"


def test_size_suggestions_follow_the_catalog(owner_client, workspace):
    cluster = text(owner_client.get("/w/team-a/compute/new/amlcompute/"))
    instance = text(owner_client.get("/w/team-a/compute/new/computeinstance/"))
    assert 'value="Standard_FX4mds"' in cluster and 'value="Standard_FX4mds"' not in instance
    for retired in ("Standard_NC6", "Standard_NV6", "Standard_HB60rs", "Standard_A2"):
        assert f'value="{retired}"' not in cluster and f'value="{retired}"' not in instance
    assert 'value="Standard_NC6s_v3"' in instance and "1 × NVIDIA V100" in instance  # the instance form's size picker


def test_yaml_preview_is_the_api_body_without_secrets(owner_client, workspace):
    response = owner_client.post(
        "/w/team-a/compute/new/kubernetes/preview/",
        {"name": "k8s-dev", "kubeconfig": KUBECONFIG, "namespace": "ml", "node_selector": "pool=gpu\nzone=a", "description": ""},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    assert "kube-secret-token" not in text(response)
    assert yaml.safe_load(text(response)) == {
        "name": "k8s-dev", "type": "kubernetes", "kubeconfig": "<hidden>", "namespace": "ml",
        "node_selector": {"pool": "gpu", "zone": "a"},
    }
    password = owner_client.post("/w/team-a/compute/new/databricks/preview/", {"name": "d", "access_token": "dapi-123"})
    assert yaml.safe_load(text(password))["access_token"] == "<hidden>" and "dapi-123" not in text(password)
    assert not ComputeTarget.objects.exists()


def test_yaml_preview_keeps_numbers_as_numbers(owner_client, workspace):
    response = owner_client.post("/w/team-a/compute/new/amlcompute/preview/", {"name": "c", "max_instances": "4", "min_instances": "x"})
    assert yaml.safe_load(text(response)) == {"name": "c", "type": "amlcompute", "max_instances": 4, "min_instances": "x"}


def test_preview_needs_manage(client_as, workspace):
    assert client_as("reader").post("/w/team-a/compute/new/amlcompute/preview/", {"name": "c"}).status_code == 403


def test_refresh_returns_only_the_list(owner_client, gpu_box):
    response = owner_client.get("/w/team-a/compute/?tab=attached", HTTP_HX_REQUEST="true")
    body = text(response)
    # (the tab refreshes itself while gpu-box, Creating, is being contacted)
    assert body.lstrip().startswith('<div class="card" id="compute-list"') and "<html" not in body
    assert 'data-compute="gpu-box"' in body


def test_tabs_show_counts(owner_client, gpu_box):
    body = text(owner_client.get("/w/team-a/compute/"))
    assert re.search(r"Attached computes <span class=\"badge rounded-pill count\">1</span>", body)
    assert re.search(r"Compute instances <span class=\"badge rounded-pill count\">0</span>", body)


# Compute details and delete


def test_details_show_properties_and_secrets_only_as_set(client_as, gpu_box):
    body = text(client_as("reader").get("/w/team-a/compute/gpu-box/"))
    assert "vm-secret-password" not in body
    assert re.search(r"<th>admin_password</th><td><span[^>]*><i[^>]*></i> set</span>", body)
    assert re.search(r"<th>ssh_private_key</th><td><span class=\"text-body-secondary\">not set</span>", body)
    assert "10.0.0.7" in body and "team: vision" in body and 'data-state="Creating"' in body
    assert "admin_password: &lt;hidden&gt;" in body  # the YAML panel


def test_details_show_provisioning_errors(client_as, gpu_box):
    gpu_box.provisioning_state = ProvisioningState.FAILED
    gpu_box.provisioning_errors = [{"code": "Unreachable", "message": "ssh: connect to host 10.0.0.7 port 22 timed out"}]
    gpu_box.save()
    body = text(client_as("reader").get("/w/team-a/compute/gpu-box/"))
    assert "Provisioning failed" in body and "port 22 timed out" in body and 'data-state="Failed"' in body


def test_unknown_compute_is_404(client_as, workspace):
    assert client_as("owner").get("/w/team-a/compute/nope/").status_code == 404


def test_delete_marks_the_compute_deleting(owner_client, gpu_box):
    response = owner_client.post("/w/team-a/compute/gpu-box/delete/")
    assert response.status_code == 302 and response["Location"] == "/w/team-a/compute/?tab=attached"
    assert ComputeTarget.objects.get(pk=gpu_box.pk).provisioning_state == ProvisioningState.DELETING
    assert "delete-modal" not in text(owner_client.get("/w/team-a/compute/gpu-box/"))


def test_delete_is_post_only(owner_client, gpu_box):
    assert owner_client.get("/w/team-a/compute/gpu-box/delete/").status_code == 405


# Members


def test_owner_adds_a_member(owner_client, users):
    response = owner_client.post("/w/team-a/members/", {"username": "oscar", "role": "contributor"})
    assert response.status_code == 302
    assert Membership.objects.get(workspace__name="team-a", user=users["outsider"]).role == "contributor"
    assert 'data-member="oscar"' in text(owner_client.get("/w/team-a/members/"))


@pytest.mark.parametrize(
    "username, message", [("nobody", "cannot be added: there is no active user by that name"), ("reader-user", "already a member")]
)
def test_member_add_errors_are_shown_at_the_username(owner_client, users, username, message):
    response = owner_client.post("/w/team-a/members/", {"username": username, "role": "owner"})
    assert response.status_code == 200
    assert re.search(r'is-invalid" id="id_username".*?invalid-feedback">[^<]*' + message, text(response), re.S)
    assert Membership.objects.filter(workspace__name="team-a").count() == 3


def test_role_change_by_htmx_returns_the_table(owner_client, users):
    response = owner_client.post("/w/team-a/members/reader-user/role/", {"role": "contributor"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert text(response).lstrip().startswith('<div class="card" id="members">')
    assert Membership.objects.get(user=users["reader"]).role == "contributor"


def test_the_last_owner_cannot_step_down_or_leave(owner_client, users):
    for path, data in (("/w/team-a/members/olivia/role/", {"role": "reader"}), ("/w/team-a/members/olivia/remove/", {})):
        response = owner_client.post(path, data, HTTP_HX_REQUEST="true")
        assert response.status_code == 200
        assert 'class="alert alert-danger' in text(response) and "The last owner cannot be" in text(response)
        assert Membership.objects.get(user=users["owner"]).role == "owner"


def test_last_owner_error_without_htmx_is_a_message(owner_client, users):
    response = owner_client.post("/w/team-a/members/olivia/remove/", follow=True)
    assert "The last owner cannot be removed" in text(response)


def test_owner_removes_a_member(owner_client, users):
    response = owner_client.post("/w/team-a/members/reader-user/remove/", HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and 'data-member="reader-user"' not in text(response)
    assert not Membership.objects.filter(user=users["reader"]).exists()


def test_an_owner_who_leaves_is_sent_home(owner_client, users, workspace):
    Membership.objects.filter(user=users["reader"]).update(role="owner")
    response = owner_client.post("/w/team-a/members/olivia/remove/", HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and response["HX-Redirect"] == "/"
    assert not Membership.objects.filter(user=users["owner"], workspace=workspace).exists()


def test_unknown_member_is_404(owner_client, workspace):
    assert owner_client.post("/w/team-a/members/ghost/remove/").status_code == 404


# Events


def test_events_newest_first_with_changed_fields(owner_client, users, workspace):
    member_add(actor=users["owner"], workspace=workspace, username="oscar", role="reader")
    rows = re.findall(r'<tr data-event="\d+">(.*?)</tr>', text(owner_client.get("/w/team-a/events/")), re.S)
    assert "oscar" in rows[0] and "<code>role</code>" in rows[0] and "reader" in rows[0]
    assert "workspace" in rows[-1] and "team-a" in rows[-1]


def test_events_load_older_pages_by_cursor(owner_client, users, workspace, django_assert_max_num_queries):
    for number in range(30):
        AuditEvent.objects.create(workspace=workspace, actor_name="olivia", action="update", target_type="compute", target_name=f"c{number}")
    first = text(owner_client.get("/w/team-a/events/"))
    ids = [int(pk) for pk in re.findall(r'data-event="(\d+)"', first)]
    assert len(ids) == 25 and ids == sorted(ids, reverse=True) and "Load older" in first
    with django_assert_max_num_queries(12):
        older = owner_client.get(f"/w/team-a/events/?before={ids[-1]}", HTTP_HX_REQUEST="true")
    older_ids = [int(pk) for pk in re.findall(r'data-event="(\d+)"', text(older))]
    total = AuditEvent.objects.filter(workspace=workspace).count()
    assert len(older_ids) == total - 25 and max(older_ids) < min(ids)
    assert "Load older" not in text(older) and "<html" not in text(older)


# Tokens


def test_token_is_shown_exactly_once(owner_client, owner):
    response = owner_client.post("/tokens/", {"name": "laptop", "expires_in_days": "30"})
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    raw = re.search(r'id="new-token" value="(dy_[^"]+)"', text(response))[1]
    token = ApiToken.objects.get(user=owner, name="laptop")
    assert token.key_hash == hash_token(raw) and "only time it is shown" in text(response)
    listing = text(owner_client.get("/tokens/"))
    assert raw not in listing and f"{token.prefix}…" in listing


def test_tokens_list_only_my_own_and_revoke(client_as, users):
    from workspaces.services import token_create

    mine, _ = token_create(user=users["reader"], name="mine")
    theirs, _ = token_create(user=users["owner"], name="theirs")
    reader = client_as("reader")
    body = text(reader.get("/tokens/"))
    assert mine.prefix in body and theirs.prefix not in body
    assert reader.post(f"/tokens/{theirs.pk}/revoke/").status_code == 404
    assert reader.post(f"/tokens/{mine.pk}/revoke/").status_code == 302
    assert list(ApiToken.objects.values_list("name", flat=True)) == ["theirs"]


def test_tokens_page_keeps_the_last_workspace_in_the_navigation(client_as, workspace):
    reader = client_as("reader")
    reader.get("/w/team-a/events/")
    assert 'href="/w/team-a/compute/"' in text(reader.get("/tokens/"))


def test_compute_types_in_the_form_match_the_serializers():
    from compute.serializers import SERIALIZERS
    from frontend.forms.compute import TYPE_FIELDS

    assert set(TYPE_FIELDS) == set(SERIALIZERS) == set(VALID_FORMS) == set(ComputeType.values)
