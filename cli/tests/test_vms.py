"""`compute attach -f vm.yml` and `compute confirm-host-key`: the CLI against the live server and a real sshd.

`worker` (cli/tests/test_kubernetes.py) stands in for Celery and runs the reconciles the API enqueues.
"""
import json
import subprocess

import pytest

from cli.tests.support import write_yaml
from cli.tests.test_kubernetes import Worker
from compute import reconcile, tasks
from compute.hostkeys import fingerprint
from compute.models import ComputeTarget

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def worker(dockyard, monkeypatch):
    """Stands in for Celery; set up after the database, stopped before it is flushed."""
    worker = Worker()
    monkeypatch.setattr(tasks.reconcile_compute, "delay", worker.delay_for(ComputeTarget, reconcile.reconcile_compute))
    yield worker
    worker.drain()
    worker.stop()
    assert not worker.errors, worker.errors


@pytest.fixture
def vm_file(sshd, tmp_path):
    """vm.yml as Azure ML users write it, the private key in a file beside it."""
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "id_ed25519").write_text(sshd.private_key)
    return write_yaml(tmp_path / "vm.yml", {
        "$schema": "https://azuremlschemas.azureedge.net/latest/vmCompute.schema.json",
        "name": "gpubox", "type": "virtualmachine", "address": sshd.address,
        "ssh_settings": {"admin_username": sshd.username, "ssh_port": sshd.port,
                         "ssh_private_key_file": "keys/id_ed25519"},
    })


def nproc() -> int:
    return int(subprocess.run(["nproc"], capture_output=True, text=True, check=True).stdout)


def test_attach_shows_the_fingerprint_asks_and_once_confirmed_shows_the_probes(dockyard, worker, sshd, vm_file):
    shown = fingerprint(sshd.host_key)
    result = dockyard("compute", "attach", "-f", str(vm_file), input="y\n")

    assert result.exit_code == 0, result.stderr
    assert f"compute/gpubox presents host key {shown}" in result.stdout
    assert "Confirm? [y/N]" in result.stderr  # the question goes to standard error, the answer came from standard input
    lines = result.stdout.splitlines()
    assert lines[:3] == ["compute/gpubox created", "compute/gpubox Creating", f"compute/gpubox presents host key {shown}"]
    assert "compute/gpubox Succeeded" in lines and f"  cpus: {nproc()}" in lines
    assert "  gpus: 0 (no nvidia-smi, or it lists none)" in lines and any(line.startswith("  memory: ") for line in lines)
    compute = ComputeTarget.objects.get(name="gpubox")
    assert compute.provisioning_state == "Succeeded" and compute.properties["host_key_confirmed"] is True
    assert sshd.private_key.splitlines()[1] not in result.stdout + result.stderr

    show = dict(line.split(None, 1) for line in dockyard("compute", "show", "gpubox").stdout.splitlines())
    assert (show["host_key"], show["cpus"], show["gpus"]) == (f"{shown} (confirmed)", str(nproc()),
                                                              "0 (no nvidia-smi, or it lists none)")


def test_answering_no_leaves_it_waiting_and_says_how_to_confirm_later(dockyard, worker, sshd, vm_file):
    shown = fingerprint(sshd.host_key)
    result = dockyard("compute", "attach", "-f", str(vm_file), input="n\n")

    assert result.exit_code == 1
    assert f"`dockyard compute confirm-host-key gpubox {shown}`" in result.stderr
    assert ComputeTarget.objects.get(name="gpubox").provisioning_state == "Creating"

    assert "waiting for confirmation" in dockyard("compute", "show", "gpubox").stdout
    wrong = dockyard("compute", "confirm-host-key", "gpubox", "SHA256:" + "A" * 43)
    assert wrong.exit_code == 1 and "HostKeyMismatch" in wrong.stderr and shown in wrong.stderr
    confirmed = dockyard("compute", "confirm-host-key", "gpubox", shown)
    assert confirmed.exit_code == 0, confirmed.stderr
    assert confirmed.stdout == f"compute/gpubox host key {shown} confirmed (now Updating)\n"
    worker.drain()
    assert ComputeTarget.objects.get(name="gpubox").provisioning_state == "Succeeded"


def test_yes_confirms_without_asking_and_json_is_the_record(dockyard, worker, sshd, vm_file):
    result = dockyard("compute", "attach", "-f", str(vm_file), "--yes", "-o", "json")

    assert result.exit_code == 0, result.stderr
    assert "Confirm?" not in result.stderr
    shown = json.loads(result.stdout)
    assert shown["provisioning_state"] == "Succeeded" and shown["status"]["cpus"] == nproc()
    assert shown["status"]["host_key_fingerprint"] == fingerprint(sshd.host_key) and shown["status"]["gpus"] == []


def test_a_fingerprint_given_beforehand_attaches_without_a_question_or_fails_naming_both(dockyard, worker, sshd, vm_file):
    right = dockyard("compute", "attach", "-f", str(vm_file), "--host-key-fingerprint", fingerprint(sshd.host_key))
    assert right.exit_code == 0, right.stderr
    assert "Confirm?" not in right.stderr and "compute/gpubox Succeeded" in right.stdout

    wrong_print = "SHA256:" + "C" * 43
    wrong = dockyard("compute", "attach", "-f", str(vm_file), "--name", "other", "--host-key-fingerprint", wrong_print)
    assert wrong.exit_code == 1
    assert "HostKeyMismatch" in wrong.stderr and wrong_print in wrong.stderr and fingerprint(sshd.host_key) in wrong.stderr


def test_ssh_options_are_for_ssh_hosts(dockyard, tmp_path):
    managed = write_yaml(tmp_path / "dbx.yml", {"name": "dbx", "type": "databricks"})
    result = dockyard("compute", "attach", "-f", str(managed), "--yes")
    assert result.exit_code == 2 and "are for virtualmachine and hdinsight computes" in result.stderr
