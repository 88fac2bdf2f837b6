"""An attached VM in a real browser, against a real OpenSSH server (the `sshd` fixture): attach through the form, see
the fingerprint of the key the host presents, confirm it, and see the probes, the GPUs and a running job.

The worker is held back so the test decides when the compute reconcile runs: it runs the real one, which scans the
host key (no login) and, after the confirm, logs in with the pinned key and the password and probes the machine.
The sshd's logins find a fake nvidia-smi (two GPUs) and docker first on PATH (tests/ssh_stubs.py): this host has
neither GPUs nor a Docker engine.
"""
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.db import connection
from playwright.sync_api import expect

from compute import reconcile as compute_reconcile
from compute import services, tasks
from compute.models import ComputeTarget
from controlplane.kube.errors import KubeTransient
from controlplane.reconciling import ProvisioningState
from jobs.choices import JobStatus, Target
from jobs.models import Job
from tests import ssh_stubs
from tests.sshd import start_sshd
from workspaces.services import workspace_create

from .conftest import sign_in

pytestmark = pytest.mark.browser

POLL = 10_000  # ms: a few of the page's 2-second polls


def shot(page, screenshot, name: str) -> None:
    page.evaluate("window.scrollTo(0, 0)")  # a full-page shot of a scrolled page draws the sticky top bar mid-page
    screenshot(page, name)


def keygen_fingerprint(key_line: str) -> str:
    """What `ssh-keygen -lf` prints for the key: the admin's side of the comparison."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "host_key.pub"
        path.write_text(key_line + "\n")
        return subprocess.run(["ssh-keygen", "-lf", str(path)], capture_output=True, text=True, check=True).stdout.split()[1]


def off_the_loop(function, *args):
    """Call the SSH transport in a thread of its own: Playwright's sync API keeps an event loop running in this one."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(function, *args).result()


def reconcile(name: str = "gpubox") -> ComputeTarget:
    """One compute reconcile, as the task runs it (held back from the worker so the test decides when)."""
    def run():
        try:
            compute_reconcile.reconcile_compute(ComputeTarget.objects.get(name=name))
        except KubeTransient:
            pass  # an unreachable host: recorded on the compute, retried by the task
        finally:
            connection.close()
    off_the_loop(run)
    return ComputeTarget.objects.get(name=name)


@pytest.fixture
def gpubox():
    """An sshd of this test's own whose logins find a fake nvidia-smi with two GPUs (and a fake docker)."""
    with ssh_stubs.sshd_with_stubs(gpus=2) as (server, _stubs):
        yield server


@pytest.fixture
def team(transactional_db, django_user_model, monkeypatch):
    """Olivia owns `vision`; the reconcile is held back (the test writes what it would)."""
    monkeypatch.setattr(tasks.reconcile_compute, "delay", lambda pk: None)
    owner = django_user_model.objects.create_user(username="olivia", password="correct-horse-battery")
    return workspace_create(user=owner, name="vision", display_name="Vision team")


def test_attach_a_vm_confirm_its_key_and_see_its_probes(team, gpubox, page, screenshot):
    sshd = gpubox
    sign_in(page, "olivia")
    page.goto("/w/vision/compute/new/virtualmachine/")
    page.get_by_label("Compute name").fill("gpubox")
    page.get_by_label("Host address").fill(sshd.address)
    page.get_by_label("SSH port").fill(str(sshd.port))
    page.get_by_label("User name").fill(sshd.username)
    page.get_by_label("Password", exact=True).fill(sshd.password)
    expect(page.get_by_label("Host key fingerprint (SHA256:…)")).to_have_value("")  # optional: confirmed on the page
    expect(page.locator("#yaml-preview")).to_contain_text(f"address: {sshd.address}")
    shot(page, screenshot, "i15-vm-attach-form")
    page.get_by_role("button", name="Attach").click()

    # Its own page, polling while Dockyard contacts the host
    expect(page).to_have_url("/w/vision/compute/gpubox/")
    panel = page.locator("#vm-panel")
    expect(panel.locator("[data-host-key]")).to_contain_text("Dockyard is reading the key the host presents")
    compute = ComputeTarget.objects.get(name="gpubox")
    assert compute.secrets["admin_password"] == sshd.password and compute.properties["ssh_port"] == sshd.port

    shown = reconcile().status["host_key_fingerprint"]
    assert shown == keygen_fingerprint(sshd.host_key)  # what the admin compares on the host
    step = page.locator("#host-key-confirm")
    expect(step).to_be_visible(timeout=POLL)
    expect(step.locator("[data-presented]")).to_have_text(shown)
    expect(step).to_contain_text(f"The host at {sshd.address}:{sshd.port} presented this key: {shown}.")
    expect(step).to_contain_text("Compare it with ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub on the host, then confirm.")
    shot(page, screenshot, "i15-vm-confirm-host-key")
    page.goto("/w/vision/compute/?tab=attached")
    expect(page.locator('tr[data-compute="gpubox"] [data-state-note]')).to_have_text("Awaiting host-key confirmation")
    shot(page, screenshot, "i15-vm-attached-tab")
    page.goto("/w/vision/compute/gpubox/")

    step.get_by_role("button", name="Confirm this key").click()
    expect(page.locator(".alert-success")).to_contain_text(f"Host key {shown} confirmed")
    expect(step).to_have_count(0)
    expect(panel.locator("[data-host-key]")).to_contain_text("confirmed")

    # The reconcile logs in and probes; a job runs on GPU 1; the page, polling while Creating, shows them
    Job.objects.create(workspace=team, name="train-resnet", target=Target.SSH, compute=compute, compute_name="gpubox",
                       status=JobStatus.RUNNING, runner={"gpus": [1]}, spec={"command": "python train.py"},
                       created_by=compute.created_by)
    assert reconcile().provisioning_state == ProvisioningState.SUCCEEDED
    expect(page.locator("#compute-state [data-state=Succeeded]")).to_be_visible(timeout=POLL)
    expect(panel.locator('[data-probe="Kernel"] td')).to_have_text(subprocess.run(
        ["uname", "-r"], capture_output=True, text=True).stdout.strip())  # the host's own, read over SSH
    expect(panel.locator('[data-probe="Docker"] td')).to_contain_text("24.0.7")  # the fake docker's version
    expect(panel.locator("#vm-gpus tbody tr")).to_have_count(2)
    expect(panel.locator('#vm-gpus tr[data-gpu="1"]')).to_contain_text("NVIDIA A100 80GB PCIe")
    expect(panel.locator('#vm-jobs tr[data-job="train-resnet"] [data-job-gpus]')).to_have_text("1")
    body = page.content()
    assert sshd.password not in body and sshd.host_key.split()[1] not in body
    shot(page, screenshot, "i15-vm-probed")


@pytest.fixture
def reinstalled():
    """An sshd of this test's own, whose host key the test replaces (the shared one keeps its key for other tests)."""
    server = start_sshd()
    yield server
    server.close()


def test_a_changed_host_key_is_shown_and_the_new_one_confirmed(team, reinstalled, page, screenshot):
    compute = ComputeTarget.objects.create(
        workspace=team, name="gpubox", type="virtualmachine", created_by=team.memberships.get().user,
        properties={"address": reinstalled.address, "ssh_port": reinstalled.port, "admin_username": reinstalled.username})
    compute.secrets, compute.secret_fields = {"admin_password": reinstalled.password}, ["admin_password"]
    compute.save()
    pinned = reconcile().status["host_key_fingerprint"]
    services.compute_confirm_host_key(user=compute.created_by, compute=ComputeTarget.objects.get(pk=compute.pk),
                                      fingerprint=pinned)
    assert reconcile().provisioning_state == ProvisioningState.SUCCEEDED

    # The host is reinstalled: the next check meets another key and stops, Failed, logging in nowhere
    reinstalled.new_host_key()
    compute = reconcile()
    presented = compute.status["presented_host_key_fingerprint"]
    assert presented == keygen_fingerprint(reinstalled.host_key) != pinned
    assert (compute.provisioning_state, compute.provisioning_errors[0]["code"]) == (ProvisioningState.FAILED,
                                                                                    "HostKeyChanged")

    sign_in(page, "olivia")
    page.goto("/w/vision/compute/gpubox/")
    step = page.locator("#host-key-confirm")
    expect(step.locator("[data-key-changed]")).to_contain_text(f"Dockyard pinned {pinned} for this host")
    expect(step.locator("[data-presented]")).to_have_text(presented)
    expect(page.locator(".alert-danger").first).to_contain_text("Provisioning failed")
    shot(page, screenshot, "i15-vm-host-key-changed")
    page.goto("/w/vision/compute/?tab=attached")
    expect(page.locator('tr[data-compute="gpubox"] [data-state-note]')).to_have_text("Host key changed")
    page.goto("/w/vision/compute/gpubox/")

    step.get_by_role("button", name="Confirm this key").click()
    expect(step).to_have_count(0)
    assert reconcile().provisioning_state == ProvisioningState.SUCCEEDED  # the new key is pinned: logged in again
    expect(page.locator("#compute-state [data-state=Succeeded]")).to_be_visible(timeout=POLL)
    expect(page.locator("[data-host-key] code")).to_have_text(presented)
