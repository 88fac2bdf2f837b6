"""Attached VMs (and HDInsight's SSH head node) in the studio: the host-key confirmation step, the probes and GPUs the
attach read, the jobs running there; polled while the attach is under way."""
from dataclasses import dataclass, field

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from compute import selectors, services
from compute.choices import SSH_TYPES
from compute.models import ComputeTarget
from controlplane.reconciling import ProvisioningState
from jobs import selectors as job_selectors

from ..templatetags.studio import megabytes
from .common import USER_ERRORS, error_rows, require, workspace_page

POLL_SECONDS = 2
KEYGEN = "ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub"
# The key lines are public, but the page speaks in fingerprints: a line is long and says nothing to compare.
HIDDEN_PROPERTIES = ("host_key", "presented_host_key", "host_key_confirmed")  # kept by the check; the page says it
AWAITING = "Awaiting host-key confirmation"
KEY_CHANGED = "Host key changed"
CONTACTING = "Contacting the host"


@dataclass
class VmView:
    """An SSH host as its page shows it: which key waits for confirmation, what the probes read, what runs there."""

    compute: ComputeTarget
    target: str
    note: str  # the state in words beside the badge ("Awaiting host-key confirmation")
    to_confirm: str  # the fingerprint the confirm step offers, "" when there is nothing to confirm
    pinned: str  # the fingerprint Dockyard pinned, when the host now presents another
    probes: list[tuple[str, str]] = field(default_factory=list)
    gpus: list[dict] = field(default_factory=list)
    jobs: list[dict] = field(default_factory=list)
    probed: bool = False

    @property
    def polling(self) -> bool:
        """While the attach runs on its own; not while it waits for a person to confirm the key."""
        return self.compute.provisioning_state in (ProvisioningState.CREATING, ProvisioningState.UPDATING) and \
            not self.to_confirm


def ssh_target(compute: ComputeTarget) -> str:
    properties = compute.properties
    return f"{properties.get('admin_username', '')}@{properties.get('address', '')}:{properties.get('ssh_port', 22)}"


def key_changed(compute: ComputeTarget) -> bool:
    return compute.provisioning_state == ProvisioningState.FAILED and bool((compute.status or {}).get("presented_host_key_fingerprint"))


def awaiting_confirmation(compute: ComputeTarget) -> bool:
    """A key waits for an admin: shown, not confirmed (the record's own flag turns at the confirm, the status's at the
    check that follows it)."""
    status = compute.status or {}
    confirmed = status.get("host_key_confirmed") or (compute.properties or {}).get("host_key_confirmed")
    return bool(status.get("host_key_fingerprint")) and not confirmed and \
        compute.provisioning_state in (ProvisioningState.CREATING, ProvisioningState.UPDATING)


def state_note(compute: ComputeTarget) -> str:
    """What an SSH host's state means beyond its badge, for its row in the hub and its page; "" when the badge says it."""
    if compute.type not in SSH_TYPES:
        return ""
    if key_changed(compute):
        return KEY_CHANGED
    if awaiting_confirmation(compute):
        return AWAITING
    if compute.provisioning_state == ProvisioningState.CREATING:
        return CONTACTING
    return ""


def probe_rows(status: dict, checked_at) -> list[tuple[str, str]]:
    """The probes as label/value rows (values the host did not report show as an em dash)."""
    disk = f"{megabytes(status.get('disk_free_mb'))} free of {megabytes(status.get('disk_total_mb'))}"
    docker = status.get("docker")
    systemd = status.get("systemd")
    return [
        ("Operating system", status.get("os") or "—"),
        ("Kernel", status.get("kernel") or "—"),
        ("Architecture", status.get("arch") or "—"),
        ("CPUs", str(status["cpus"]) if status.get("cpus") is not None else "—"),
        ("Memory", megabytes(status.get("memory_mb"))),
        ("Disk (jobs folder)", disk),
        ("Docker", docker or "not installed"),
        ("systemd as PID 1", "—" if systemd is None else ("yes" if systemd else "no")),
        ("Last checked", checked_at.strftime("%Y-%m-%d %H:%M:%S %Z") if checked_at else "—"),
    ]


def job_rows(compute: ComputeTarget) -> list[dict]:
    """The jobs on the host that have not ended, with the GPUs each was allotted."""
    rows = []
    for job in job_selectors.jobs_running_on(compute=compute):
        gpus = (job.runner or {}).get("gpus")
        rows.append({"job": job, "gpus": ", ".join(str(index) for index in gpus) if gpus else "none"})
    return rows


def vm_view(compute: ComputeTarget) -> VmView:
    status = compute.status or {}
    changed = key_changed(compute)
    to_confirm = status.get("presented_host_key_fingerprint", "") if changed else \
        (status.get("host_key_fingerprint", "") if awaiting_confirmation(compute) else "")
    probed = compute.provisioning_state == ProvisioningState.SUCCEEDED or "cpus" in status
    return VmView(
        compute=compute, target=ssh_target(compute), note=state_note(compute), to_confirm=to_confirm,
        pinned=status.get("host_key_fingerprint", "") if changed else "",
        probes=probe_rows(status, compute.checked_at) if probed else [], gpus=status.get("gpus") or [],
        jobs=job_rows(compute), probed=probed,
    )


def vm_context(compute: ComputeTarget) -> dict:
    return {"vm": vm_view(compute), "poll_seconds": POLL_SECONDS, "keygen": KEYGEN}


def ssh_compute(workspace, name: str) -> ComputeTarget:
    """An SSH host of the workspace, or 404: other types have no host key and no probes."""
    try:
        compute = selectors.compute_get(workspace=workspace, name=name)
    except ComputeTarget.DoesNotExist:
        raise Http404 from None
    if compute.type not in SSH_TYPES:
        raise Http404
    return compute


@login_required
def panel(request, ws, name):
    """The host's card alone: the page polls it while the attach runs, so the key and the probes appear by themselves."""
    context = workspace_page(request, ws)
    compute = ssh_compute(context["workspace"], name)
    context.update(compute=compute, oob=True, **vm_context(compute))  # oob: the header's state badge moves too
    return render(request, "frontend/compute/_vm_panel.html", context)


@login_required
@require_POST
def confirm_host_key(request, ws, name):
    """Confirm the fingerprint shown: Dockyard pins that key and carries on attaching."""
    context = workspace_page(request, ws)
    require(request.user, context["workspace"], "manage")
    compute = ssh_compute(context["workspace"], name)
    fingerprint = request.POST.get("fingerprint", "").strip()
    try:
        services.compute_confirm_host_key(user=request.user, compute=compute, fingerprint=fingerprint)
    except USER_ERRORS as exc:
        messages.error(request, error_rows(exc)[0]["message"])
    else:
        messages.success(request, f"Host key {fingerprint} confirmed: Dockyard now logs in to {compute.name} and probes it.")
    return redirect("frontend:compute-detail", ws=ws, name=name)
