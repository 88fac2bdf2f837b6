"""An attached VM in a real browser, against a real OpenSSH server (the `sshd` fixture): attach through the form, see
the fingerprint of the key the host presents, confirm it, and see the probes, the GPUs and a running job.

The attach reconcile is held back: the test plays its part with the real transport (compute/runners/ssh.py): it scans
the host key (no login), and after the confirm it logs in with the pinned key and the password to read the machine.
The GPUs are written as a stubbed nvidia-smi would report them (this host has none). The confirm service is the
attach branch's: until it is merged, the test stands in for it with the contract's behaviour (pin the key shown).
"""
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from compute import services, tasks
from compute.models import ComputeTarget
from compute.runners import ssh
from controlplane.reconciling import ProvisioningState
from jobs.choices import JobStatus, Target
from jobs.models import Job
from tests.sshd import start_sshd
from workspaces.services import workspace_create

from .conftest import sign_in

pytestmark = pytest.mark.browser

POLL = 10_000  # ms: a few of the page's 2-second polls
GPUS = [{"index": index, "name": "NVIDIA A100 80GB PCIe", "memory_mb": 81920, "uuid": f"GPU-5b1e2c7a-0000-4000-8000-00000000000{index}",
         "driver_version": "550.54.15"} for index in range(2)]
# What the probe reads, in one command over the real session (the attach's own probe parses more; this is enough to
# show that the values on the page are the host's).
PROBE = ". /etc/os-release; echo \"$PRETTY_NAME\"; uname -r; uname -m; nproc; " \
        "awk '/MemTotal/ {print int($2/1024)}' /proc/meminfo; df -Pm ~ | awk 'NR==2 {print $2; print $4}'"


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


def read_machine(host: ssh.SshHost) -> ssh.Result:
    with ssh.session(host) as session:
        return session.run(PROBE)


def first_contact(compute: ComputeTarget) -> str:
    """The reconcile's first contact: scan the key (no login), keep it, wait for the confirm."""
    properties = compute.properties
    line = off_the_loop(ssh.scan_host_key, properties["address"], properties["ssh_port"])
    shown = ssh.fingerprint(line)
    compute.properties = {**properties, "host_key": line}
    compute.status = {"host_key_fingerprint": shown, "host_key_confirmed": False,
                      "message": f"Confirm the host key {shown} to finish attaching."}
    compute.save(update_fields=["properties", "status"])
    return shown


def probe(compute: ComputeTarget) -> None:
    """The reconcile after the confirm: log in with the pinned key and the password, read the machine, Succeeded."""
    result = off_the_loop(read_machine, ssh.SshHost.of_record(compute.properties, compute.secrets))
    assert result.exit_status == 0, result.stderr
    os_name, kernel, arch, cpus, memory, total, free = result.stdout.decode().splitlines()
    compute.status = {**compute.status, "os": os_name, "kernel": kernel, "arch": arch, "cpus": int(cpus),
                      "memory_mb": int(memory), "disk_total_mb": int(total), "disk_free_mb": int(free), "docker": None,
                      "systemd": False, "gpus": GPUS}
    compute.provisioning_state, compute.checked_at = ProvisioningState.SUCCEEDED, timezone.now()
    compute.save(update_fields=["status", "provisioning_state", "checked_at"])


@pytest.fixture
def team(transactional_db, django_user_model, monkeypatch):
    """Olivia owns `vision`; the reconcile is held back (the test writes what it would)."""
    monkeypatch.setattr(tasks.reconcile_compute, "delay", lambda pk: None)
    owner = django_user_model.objects.create_user(username="olivia", password="correct-horse-battery")
    return workspace_create(user=owner, name="vision", display_name="Vision team")


@pytest.fixture
def confirm_service(monkeypatch):
    """compute_confirm_host_key as the contract has it, until the attach branch's is merged: the key shown is pinned."""
    calls = []

    def confirm(*, user, compute, fingerprint):
        calls.append(fingerprint)
        status, properties = dict(compute.status), dict(compute.properties)
        if status.get("presented_host_key_fingerprint"):  # a rotation: the new key replaces the pinned one
            status["host_key_fingerprint"] = status.pop("presented_host_key_fingerprint")
            properties["host_key"] = properties.pop("presented_host_key")
        assert fingerprint == status["host_key_fingerprint"]
        compute.status, compute.properties = {**status, "host_key_confirmed": True, "message": ""}, properties
        compute.provisioning_state, compute.provisioning_errors = ProvisioningState.CREATING, []
        compute.save(update_fields=["status", "properties", "provisioning_state", "provisioning_errors"])
        return compute

    if "placeholder" in (services.compute_confirm_host_key.__doc__ or ""):
        monkeypatch.setattr(services, "compute_confirm_host_key", confirm)
    return calls


def test_attach_a_vm_confirm_its_key_and_see_its_probes(team, sshd, confirm_service, page, screenshot):
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

    shown = first_contact(compute)
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
    assert confirm_service in ([shown], [])  # [] once the attach branch's service is merged
    expect(step).to_have_count(0)
    expect(panel.locator("[data-host-key]")).to_contain_text("confirmed")

    # The reconcile logs in and probes; a job runs on GPU 1; the page, polling while Creating, shows them
    Job.objects.create(workspace=team, name="train-resnet", target=Target.SSH, compute=compute, compute_name="gpubox",
                       status=JobStatus.RUNNING, runner={"gpus": [1]}, spec={"command": "python train.py"},
                       created_by=compute.created_by)
    probe(ComputeTarget.objects.get(name="gpubox"))
    expect(page.locator("#compute-state [data-state=Succeeded]")).to_be_visible(timeout=POLL)
    expect(panel.locator('[data-probe="Kernel"] td')).to_have_text(subprocess.run(
        ["uname", "-r"], capture_output=True, text=True).stdout.strip())  # the host's own, read over SSH
    expect(panel.locator('[data-probe="Docker"] td')).to_have_text("not installed")
    expect(panel.locator("#vm-gpus tbody tr")).to_have_count(2)
    expect(panel.locator('#vm-gpus tr[data-gpu="1"]')).to_contain_text("NVIDIA A100 80GB PCIe")
    expect(panel.locator('#vm-jobs tr[data-job="train-resnet"] [data-job-gpus]')).to_have_text("1")
    body = page.content()
    assert sshd.password not in body and compute.properties["host_key"].split()[1] not in body
    shot(page, screenshot, "i15-vm-probed")


@pytest.fixture
def reinstalled():
    """An sshd of this test's own, whose host key the test replaces (the shared one keeps its key for other tests)."""
    server = start_sshd()
    yield server
    server.stop()


def test_a_changed_host_key_is_shown_and_the_new_one_confirmed(team, reinstalled, confirm_service, page, screenshot):
    compute = ComputeTarget.objects.create(
        workspace=team, name="gpubox", type="virtualmachine", created_by=team.memberships.get().user,
        properties={"address": reinstalled.address, "ssh_port": reinstalled.port, "admin_username": reinstalled.username})
    compute.secrets, compute.secret_fields = {"admin_password": reinstalled.password}, ["admin_password"]
    compute.save()
    pinned = first_contact(compute)
    compute.status["host_key_confirmed"] = True
    compute.save(update_fields=["status"])
    probe(compute)

    # The host is reinstalled: the next connection meets another key and the reconcile stops, Failed
    reinstalled.new_host_key()
    with pytest.raises(ssh.HostKeyChanged) as refused:
        off_the_loop(read_machine, ssh.SshHost.of_record(compute.properties, compute.secrets))
    presented = ssh.fingerprint(refused.value.presented)
    assert presented == keygen_fingerprint(reinstalled.host_key) != pinned
    compute.properties = {**compute.properties, "presented_host_key": refused.value.presented}
    compute.status = {**compute.status, "presented_host_key_fingerprint": presented}
    compute.provisioning_state = ProvisioningState.FAILED
    compute.provisioning_errors = [{"code": "HostKeyChanged", "message": str(refused.value)}]
    compute.save()

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
    assert confirm_service in ([presented], [])
    probe(ComputeTarget.objects.get(name="gpubox"))  # the new key is pinned: the login goes through again
    expect(page.locator("#compute-state [data-state=Succeeded]")).to_be_visible(timeout=POLL)
    expect(page.locator("[data-host-key] code")).to_have_text(presented)
