"""An attached VM in the studio: the attach form's fingerprint field, the page in each state the attach leaves it in
(key to confirm, probed with GPUs and a running job, a changed key), the confirm post, the hub's row; no secret shown.

The records' status is set directly here, as the attach reconcile writes it (compute/reconcile/vms.py): the pages are
tested, not the SSH side.
"""
import html
import re
from datetime import UTC, datetime

import pytest
from django.test import Client

from compute import services
from compute.models import ComputeTarget
from compute.spec.attached import VirtualMachine
from controlplane.api import BadRequest, Conflict
from controlplane.reconciling import ProvisioningState
from jobs.choices import JobStatus, Target
from jobs.models import Job

PAGE = "/w/team-a/compute/gpubox/"
KEY = "SHA256:yqjBXBcNTWhDm5dnfL6W6yAv0T6Xvj1mjDRBn8Y+Zq8"
NEW_KEY = "SHA256:Nq8BZk3y1Zp0m3bZ4dM6h1o2mD7PpF5Xq0V9cJkqW2E"
HOST_KEY_LINE = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeHostKeyLineOnlyForTheStudioTests0000000"
PRESENTED_LINE = HOST_KEY_LINE.replace("Fake", "Next")
PASSWORD = "vm-secret-password-7"
PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAstudioTestKeyBody\n-----END OPENSSH PRIVATE KEY-----\n"
PROBES = {
    "host_key_fingerprint": KEY, "host_key_confirmed": True, "os": "Ubuntu 22.04.4 LTS", "kernel": "6.5.0-1017-azure",
    "arch": "x86_64", "cpus": 24, "memory_mb": 221184, "disk_total_mb": 1024000, "disk_free_mb": 512000,
    "docker": "26.1.3", "systemd": True,
    "gpus": [
        {"index": 0, "name": "NVIDIA A100 80GB PCIe", "memory_mb": 81920, "uuid": "GPU-1f0c3a2e-aaaa-bbbb-cccc-000000000000",
         "driver_version": "550.54.15"},
        {"index": 1, "name": "NVIDIA A100 80GB PCIe", "memory_mb": 81920, "uuid": "GPU-1f0c3a2e-aaaa-bbbb-cccc-000000000001",
         "driver_version": "550.54.15"},
    ],
}


def text(response) -> str:
    return response.content.decode()


def vm(workspace, owner, state: str, status: dict, **fields) -> ComputeTarget:
    """A VM record as the attach reconcile leaves it, with a password and a private key stored."""
    compute = ComputeTarget(
        workspace=workspace, name="gpubox", type="virtualmachine", created_by=owner, provisioning_state=state,
        status=status, properties={"address": "10.0.0.7", "ssh_port": 2222, "admin_username": "azureuser",
                                   "host_key": HOST_KEY_LINE, **fields.pop("properties", {})}, **fields)
    compute.secrets = {"admin_password": PASSWORD, "ssh_private_key": PRIVATE_KEY}
    compute.secret_fields = ["admin_password", "ssh_private_key"]
    compute.save()
    return compute


@pytest.fixture
def awaiting(workspace, owner):
    return vm(workspace, owner, ProvisioningState.CREATING, {
        "host_key_fingerprint": KEY, "host_key_confirmed": False,
        "message": f"Confirm the host key {KEY} to finish attaching."})


@pytest.fixture
def probed(workspace, owner):
    return vm(workspace, owner, ProvisioningState.SUCCEEDED, PROBES, checked_at=datetime(2026, 12, 3, 8, 0, tzinfo=UTC))


@pytest.fixture
def key_changed(workspace, owner):
    return vm(workspace, owner, ProvisioningState.FAILED, {**PROBES, "presented_host_key_fingerprint": NEW_KEY},
              provisioning_errors=[{"code": "HostKeyChanged", "message": f"The host at 10.0.0.7 presented {NEW_KEY}."}],
              properties={"presented_host_key": PRESENTED_LINE})


def job(workspace, owner, compute, name: str, status: str, gpus=None) -> Job:
    return Job.objects.create(workspace=workspace, name=name, target=Target.SSH, compute=compute, compute_name=compute.name,
                              status=status, runner={"gpus": gpus} if gpus is not None else {}, created_by=owner,
                              spec={"command": "python train.py"})


def confirm_card(body: str) -> str:
    match = re.search(r'<div class="card mb-4 border-\w+" id="host-key-confirm".*?</form>|id="host-key-confirm".*?</p>\s*</div>', body, re.S)
    return match.group(0) if match else ""


def no_secret_in(body: str) -> None:
    for secret in (PASSWORD, "studioTestKeyBody", "PRIVATE KEY", HOST_KEY_LINE.split()[1], PRESENTED_LINE.split()[1]):
        assert secret not in body, secret


def probe_values(body: str) -> dict[str, str]:
    return {label: html.unescape(value) for label, value in re.findall(r'<tr data-probe="([^"]+)"><th>[^<]+</th><td>([^<]*)</td>', body)}


# The attach form


def test_the_attach_form_offers_the_optional_fingerprint_field(owner_client, workspace):
    body = text(owner_client.get("/w/team-a/compute/new/virtualmachine/"))
    assert 'name="host_key_fingerprint"' in body and "Host key fingerprint (SHA256:…)" in body
    label = re.search(r'<label class="form-label" for="id_host_key_fingerprint">(.*?)</label>', body, re.S).group(1)
    assert "*" not in label  # optional


def test_the_yaml_preview_carries_the_fingerprint_beside_the_address(owner_client, workspace):
    response = owner_client.post("/w/team-a/compute/new/virtualmachine/preview/", {
        "name": "gpubox", "address": "10.0.0.7", "admin_username": "azureuser", "admin_password": PASSWORD,
        "host_key_fingerprint": f" {KEY} "})
    assert f"host_key_fingerprint: {KEY}\n" in text(response) and PASSWORD not in text(response)


def test_an_attach_lands_on_the_vm_page(owner_client, workspace):
    response = owner_client.post("/w/team-a/compute/new/virtualmachine/", {
        "name": "gpubox", "address": "10.0.0.7", "ssh_port": "22", "admin_username": "azureuser", "admin_password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == PAGE
    body = text(owner_client.get(PAGE))
    assert 'id="vm-panel"' in body and "Dockyard is reading the key the host presents" in body
    assert "Records only" not in body  # the VM is no record only any more
    no_secret_in(body)


@pytest.mark.skipif("host_key_fingerprint" not in VirtualMachine.own,
                    reason="the attach branch adds host_key_fingerprint to the virtualmachine body")
def test_an_attach_with_a_fingerprint_keeps_it(owner_client, workspace):
    response = owner_client.post("/w/team-a/compute/new/virtualmachine/", {
        "name": "gpubox", "address": "10.0.0.7", "admin_username": "azureuser", "admin_password": PASSWORD,
        "host_key_fingerprint": KEY})
    assert response.status_code == 302 and response["Location"] == PAGE
    assert ComputeTarget.objects.get(name="gpubox").properties["host_key_fingerprint"] == KEY


# The page in each state


def test_creating_with_a_key_to_confirm_shows_the_confirm_step_and_does_not_poll(owner_client, awaiting):
    body = text(owner_client.get(PAGE))
    card = confirm_card(body)
    assert "The host at <strong>10.0.0.7:2222</strong> presented this key:" in card
    assert f'data-presented>{KEY}</code>' in card
    assert "Compare it with <code>ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub</code> on the host, then confirm." in card
    assert f'<input type="hidden" name="fingerprint" value="{KEY}">' in card and "Confirm this key" in card
    assert 'action="/w/team-a/compute/gpubox/confirm-host-key/"' in card
    assert "not confirmed" in body and 'id="vm-gpus"' not in body  # nothing probed before the login
    assert 'hx-get="/w/team-a/compute/gpubox/vm/"' not in body  # a person has to act: no polling meanwhile
    no_secret_in(body)


def test_a_reader_sees_the_key_but_no_confirm_button(client_as, awaiting):
    body = text(client_as("reader").get(PAGE))
    assert KEY in body and "An owner of the workspace confirms it." in body
    assert "Confirm this key" not in body and "confirm-host-key" not in body


def test_creating_before_the_key_is_read_polls_the_panel(owner_client, workspace, owner):
    vm(workspace, owner, ProvisioningState.CREATING, {})
    body = text(owner_client.get(PAGE))
    assert 'hx-get="/w/team-a/compute/gpubox/vm/" hx-trigger="every 2s" hx-swap="outerHTML"' in body
    assert 'id="host-key-confirm"' not in body
    panel = owner_client.get(f"{PAGE}vm/", HTTP_HX_REQUEST="true")
    assert panel.status_code == 200 and text(panel).lstrip().startswith("<div id=\"vm-panel\"")
    assert 'id="compute-state" hx-swap-oob="true"' in text(panel)  # the header's badge moves with it


def test_a_confirmed_host_still_attaching_polls_and_offers_nothing_to_confirm(owner_client, workspace, owner):
    vm(workspace, owner, ProvisioningState.CREATING, {"host_key_fingerprint": KEY, "host_key_confirmed": True})
    body = text(owner_client.get(PAGE))
    assert 'id="host-key-confirm"' not in body and "confirmed</span>" in body
    assert 'hx-get="/w/team-a/compute/gpubox/vm/"' in body


def test_succeeded_shows_the_probes_the_gpus_and_the_running_jobs(owner_client, workspace, owner, probed):
    job(workspace, owner, probed, "train-resnet", JobStatus.RUNNING, gpus=[0, 1])
    job(workspace, owner, probed, "waiting-one", JobStatus.QUEUED)
    job(workspace, owner, probed, "done-before", JobStatus.COMPLETED, gpus=[0])
    elsewhere = ComputeTarget.objects.create(workspace=workspace, name="otherbox", type="virtualmachine",
                                             properties={"address": "10.0.0.8", "admin_username": "u"})
    job(workspace, owner, elsewhere, "other-host", JobStatus.RUNNING, gpus=[0])
    body = text(owner_client.get(PAGE))
    assert probe_values(body) == {
        "Operating system": "Ubuntu 22.04.4 LTS", "Kernel": "6.5.0-1017-azure", "Architecture": "x86_64", "CPUs": "24",
        "Memory": "216 GiB", "Disk (jobs folder)": "500 GiB free of 1000 GiB", "Docker": "26.1.3",
        "systemd as PID 1": "yes", "Last checked": "2026-12-03 08:00:00 UTC",
    }
    gpus = [tuple(re.search(rf"data-gpu-{part}>([^<]+)<", row).group(1) for part in ("index", "name", "memory", "uuid", "driver"))
            for row in re.findall(r'<tr data-gpu="\d+">(.*?)</tr>', body, re.S)]
    assert gpus == [
        ("0", "NVIDIA A100 80GB PCIe", "80 GiB", "GPU-1f0c3a2e-aaaa-bbbb-cccc-000000000000", "550.54.15"),
        ("1", "NVIDIA A100 80GB PCIe", "80 GiB", "GPU-1f0c3a2e-aaaa-bbbb-cccc-000000000001", "550.54.15"),
    ]
    assert 'class="table align-middle mb-0 nodes"' in body  # the look of a cluster's nodes
    jobs = dict(re.findall(r'<tr data-job="([^"]+)">.*?data-job-gpus>([^<]+)<', body, re.S))
    assert jobs == {"train-resnet": "0, 1", "waiting-one": "none"}  # not the ended job, not another host's
    assert 'href="/w/team-a/jobs/train-resnet/"' in body
    assert 'id="host-key-confirm"' not in body and "hx-trigger" not in body.split('id="vm-panel"')[1].split(">")[0]
    no_secret_in(body)


def test_a_host_without_docker_or_gpus_says_so(owner_client, workspace, owner):
    vm(workspace, owner, ProvisioningState.SUCCEEDED, {**PROBES, "docker": None, "systemd": False, "gpus": []})
    body = text(owner_client.get(PAGE))
    values = probe_values(body)
    assert values["Docker"] == "not installed" and values["systemd as PID 1"] == "no"
    assert "No GPUs: <code>nvidia-smi</code> is not on the host or lists none." in body
    assert "No job runs here now." in body


def test_a_changed_key_warns_and_offers_the_new_key_to_confirm(owner_client, key_changed):
    body = text(owner_client.get(PAGE))
    card = confirm_card(body)
    assert "The host key changed" in card and f"Dockyard pinned <code>{KEY}</code>" in card
    assert "pinned; the host now presents another" in body
    assert f'data-presented>{NEW_KEY}</code>' in card
    assert f'<input type="hidden" name="fingerprint" value="{NEW_KEY}">' in card
    assert "Provisioning failed" in body and "HostKeyChanged" in body
    no_secret_in(body)


def test_the_details_yaml_and_properties_leave_out_the_key_lines(owner_client, key_changed):
    body = text(owner_client.get(PAGE))
    assert "presented_host_key" not in body and "<th>host_key</th>" not in body
    assert "admin_password: &lt;hidden&gt;" in body


# The confirm post


@pytest.fixture
def confirmed(monkeypatch):
    """The service's calls, recorded (compute/services.py's real one is tested where it lives)."""
    calls = []

    def confirm(*, user, compute, fingerprint):
        calls.append((user.username, compute.name, fingerprint))
        return compute

    monkeypatch.setattr(services, "compute_confirm_host_key", confirm)
    return calls


def test_the_owner_confirms_the_key_shown(owner_client, awaiting, confirmed):
    response = owner_client.post(f"{PAGE}confirm-host-key/", {"fingerprint": KEY})
    assert response.status_code == 302 and response["Location"] == PAGE
    assert confirmed == [("olivia", "gpubox", KEY)]
    assert f"Host key {KEY} confirmed" in text(owner_client.get(PAGE))


def test_staff_confirm_too(client_as, awaiting, confirmed):
    assert client_as("staff").post(f"{PAGE}confirm-host-key/", {"fingerprint": KEY}).status_code == 302
    assert confirmed == [("sam", "gpubox", KEY)]


@pytest.mark.parametrize("error, shown", [
    (Conflict("Compute 'gpubox' has no host key waiting for confirmation."), "no host key waiting"),
    (BadRequest("SHA256:other is not the key the host presented."), "is not the key the host presented"),
])
def test_a_refused_confirm_is_said_on_the_page(owner_client, awaiting, monkeypatch, error, shown):
    def refuse(**kwargs):
        raise error

    monkeypatch.setattr(services, "compute_confirm_host_key", refuse)
    response = owner_client.post(f"{PAGE}confirm-host-key/", {"fingerprint": "SHA256:other"}, follow=True)
    assert response.status_code == 200 and shown in text(response)


@pytest.mark.parametrize("role, code", [("reader", 403), ("contributor", 403), ("outsider", 404)])
def test_only_owners_and_staff_confirm(client_as, awaiting, confirmed, role, code):
    assert client_as(role).post(f"{PAGE}confirm-host-key/", {"fingerprint": KEY}).status_code == code
    assert confirmed == []


def test_anonymous_is_sent_to_sign_in_and_get_is_refused(client_as, owner_client, awaiting, confirmed):
    response = client_as("anonymous").post(f"{PAGE}confirm-host-key/", {"fingerprint": KEY})
    assert response.status_code == 302 and response["Location"].startswith("/login/")
    assert owner_client.get(f"{PAGE}confirm-host-key/").status_code == 405
    assert confirmed == []


def test_the_confirm_post_needs_the_csrf_token(owner, awaiting, confirmed):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    assert client.post(f"{PAGE}confirm-host-key/", {"fingerprint": KEY}).status_code == 403
    assert confirmed == []
    page = text(client.get(PAGE))
    token = re.search(r'id="host-key-confirm".*?name="csrfmiddlewaretoken" value="([^"]+)"', page, re.S).group(1)
    assert client.post(f"{PAGE}confirm-host-key/", {"fingerprint": KEY, "csrfmiddlewaretoken": token}).status_code == 302
    assert confirmed == [("olivia", "gpubox", KEY)]


def test_other_types_have_no_vm_routes(owner_client, workspace, owner):
    ComputeTarget.objects.create(workspace=workspace, name="k8s", type="kubernetes", properties={"namespace": "ml"})
    assert owner_client.get("/w/team-a/compute/k8s/vm/").status_code == 404
    assert owner_client.post("/w/team-a/compute/k8s/confirm-host-key/", {"fingerprint": KEY}).status_code == 404


# The hub's attached tab


def test_the_attached_tab_says_what_each_vm_waits_for(owner_client, workspace, owner, awaiting):
    ComputeTarget.objects.create(
        workspace=workspace, name="rotated", type="virtualmachine", provisioning_state=ProvisioningState.FAILED,
        status={"host_key_fingerprint": KEY, "host_key_confirmed": True, "presented_host_key_fingerprint": NEW_KEY},
        properties={"address": "10.0.0.9", "admin_username": "u"})
    ComputeTarget.objects.create(workspace=workspace, name="fresh", type="virtualmachine",
                                 provisioning_state=ProvisioningState.CREATING, properties={"address": "10.0.0.10", "admin_username": "u"})
    ComputeTarget.objects.create(workspace=workspace, name="ready", type="virtualmachine", status=PROBES,
                                 provisioning_state=ProvisioningState.SUCCEEDED, properties={"address": "10.0.0.11", "admin_username": "u"})
    body = text(owner_client.get("/w/team-a/compute/?tab=attached"))
    rows = dict(re.findall(r'<tr data-compute="([^"]+)">(.*?)</tr>', body, re.S))
    note = {name: re.search(r"data-state-note>([^<]+)<", row) for name, row in rows.items()}
    assert {name: match.group(1) if match else "" for name, match in note.items()} == {
        "gpubox": "Awaiting host-key confirmation", "rotated": "Host key changed", "fresh": "Contacting the host", "ready": ""}
    assert "u@10.0.0.11:22 · 24 CPUs · 2 GPUs" in rows["ready"] and "CPUs" not in rows["fresh"]
    assert 'hx-trigger="every 2s"' in body  # `fresh` is being contacted: the tab refreshes itself
