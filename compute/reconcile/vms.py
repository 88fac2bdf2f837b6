"""Attached VMs (and HDInsight's SSH head node): record the host key on first contact, pin it after, log in and probe
the host (OS, CPUs, memory, disk, docker, systemd, GPUs) on every check."""
from controlplane.reconciling import ProvisioningState, record_status

from ..models import ComputeTarget


def reconcile_virtual_machine(compute: ComputeTarget) -> None:
    """Check an SSH-attached host and keep its probes in the record's status (the caller holds its row lock)."""
    record_status(compute, ProvisioningState.SUCCEEDED, [])  # contract stub: issue 15's attach replaces it
