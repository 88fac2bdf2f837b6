"""Attached VMs (and HDInsight's SSH head node): record the host key on first contact, pin it after, log in and probe
the host (OS, CPUs, memory, disk, docker, systemd, GPUs) on every check.

First contact only scans the key (no login: a password never goes to a host nobody confirmed); the record waits in
Creating until an admin confirms the fingerprint (compute_confirm_host_key), or goes on at once when the body gave
the matching `host_key_fingerprint`. The probes are one shell command, parsed by compute/vmprobe.py.
"""
import logging

from django.conf import settings
from django.utils import timezone

from controlplane.kube.errors import KubeTransient
from controlplane.reconciling import ProvisioningState, problem, record_status

from ..hostkeys import fingerprint
from ..models import ComputeTarget
from ..runners import ssh
from ..vmprobe import parse_probe, probe_script

logger = logging.getLogger(__name__)

PROBE_TIMEOUT = 60.0  # seconds the probe command may take (nvidia-smi can be slow on a busy host)
# Where `ssh-keygen -lf` finds a host's own key of each type, to compare the fingerprint with.
KEY_FILES = {"ssh-ed25519": "ssh_host_ed25519_key.pub", "ssh-rsa": "ssh_host_rsa_key.pub"}


def reconcile_virtual_machine(compute: ComputeTarget) -> None:
    """Check an SSH-attached host and keep its probes in the record's status (the caller holds its row lock)."""
    properties = dict(compute.properties)
    if not properties.get("host_key"):
        key = _scan(compute)
        if key is None:
            return None
        properties.update(host_key=key, host_key_confirmed=False)
    if not properties.get("host_key_confirmed"):
        expected, presented = properties.get("host_key_fingerprint"), fingerprint(properties["host_key"])
        if not expected:
            return _await_confirmation(compute, properties)
        if expected != presented:
            return _failed(compute, properties, problem("HostKeyMismatch", _mismatch(compute, presented, expected)))
        properties["host_key_confirmed"] = True
    _probe(compute, properties)


def _where(compute: ComputeTarget) -> str:
    return ssh.SshHost.of_record(compute.properties, {}).where


def _scan(compute: ComputeTarget) -> str | None:
    """The key the host presents now (no login); None once a refusal is recorded (unreachable: retried)."""
    host = ssh.SshHost.of_record(compute.properties, {})
    try:
        return ssh.scan_host_key(host.address, host.port)
    except ssh.SshError as exc:
        _record_error(compute, dict(compute.properties), exc)
        return None


def _await_confirmation(compute: ComputeTarget, properties: dict) -> None:
    """Creating, with the fingerprint an admin compares with the host's own before anything logs in."""
    shown = fingerprint(properties["host_key"])
    key_file = KEY_FILES.get(properties["host_key"].split()[0], "ssh_host_ecdsa_key.pub")
    message = (f"Confirm the host key {shown} to finish attaching (compare it with `ssh-keygen -lf /etc/ssh/{key_file}` "
               f"on the host; then `dockyard compute confirm-host-key {compute.name} {shown}`, or POST it to "
               "confirm-host-key). Dockyard does not log in before that.")
    status = {"host_key_fingerprint": shown, "host_key_confirmed": False, "message": message}
    record_status(compute, ProvisioningState.CREATING, [], status=status, properties=properties, checked_at=timezone.now())
    logger.info("Compute %s: host key %s recorded, waiting for confirmation", compute.pk, shown)


def _mismatch(compute: ComputeTarget, presented: str, expected: str) -> str:
    return (f"The host at {_where(compute)} presented host key {presented}, not {expected} given in "
            "host_key_fingerprint. Dockyard does not log in to it; if the host was reinstalled, confirm its new "
            "fingerprint (or correct host_key_fingerprint).")


def _probe(compute: ComputeTarget, properties: dict) -> None:
    """Log in with the pinned key, run the probe command, keep what it found; errors → Failed with the reason."""
    host = ssh.SshHost.of_record(properties, compute.secrets)
    try:
        with ssh.session(host) as remote:
            result = remote.run(probe_script(settings.DOCKYARD_SSH_JOBS_DIR), timeout=PROBE_TIMEOUT)
    except ssh.SshError as exc:
        return _record_error(compute, properties, exc)
    if not result.ok:
        return _failed(compute, properties, problem("ProbeFailed", (
            f"The probe command exited with status {result.exit_status} on the host at {host.where}; Dockyard needs a "
            f"POSIX shell (sh) for user '{host.username}' there.")))
    properties.pop("presented_host_key", None)
    status = {"host_key_fingerprint": fingerprint(properties["host_key"]), "host_key_confirmed": True,
              **parse_probe(result.text())}
    record_status(compute, ProvisioningState.SUCCEEDED, [], status=status, properties=properties, checked_at=timezone.now())


def _record_error(compute: ComputeTarget, properties: dict, exc: ssh.SshError) -> None:
    """Failed with the transport's sentence; a changed key keeps what was presented (for an admin to confirm); an
    unreachable host is retried (KubeTransient: the task machinery's "try again later")."""
    extra = {}
    if isinstance(exc, ssh.HostKeyChanged) and exc.presented:
        properties["presented_host_key"] = exc.presented
        extra["presented_host_key_fingerprint"] = fingerprint(exc.presented)
    if exc.transient:
        _failed(compute, properties, problem("Unreachable", f"{exc} Retrying."))
        raise KubeTransient(str(exc)) from None
    _failed(compute, properties, problem(exc.code, str(exc)), **extra)


def _failed(compute: ComputeTarget, properties: dict, error: dict, **extra) -> None:
    """Failed with one problem; the last probes are kept (what the host was), the key's standing is brought up to date."""
    kept = {key: value for key, value in compute.status.items()
            if key not in ("message", "presented_host_key_fingerprint")}
    key = properties.get("host_key")
    if key:
        kept.update(host_key_fingerprint=fingerprint(key), host_key_confirmed=bool(properties.get("host_key_confirmed")))
    record_status(compute, ProvisioningState.FAILED, [error], status={**kept, **extra}, properties=properties,
                  checked_at=timezone.now())
    logger.info("Compute %s failed its check: %s", compute.pk, error["code"])
