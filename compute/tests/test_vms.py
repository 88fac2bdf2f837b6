"""Attached VMs against a real OpenSSH server (tests/sshd.py): the host key scanned, confirmed and pinned, the host
probed, and every failure a Failed record with Dockyard's sentence (unreachable ones retried)."""
import os
import subprocess
import tempfile
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from compute import reconcile, tasks
from compute.hostkeys import fingerprint
from compute.models import ComputeTarget
from controlplane.kube.errors import KubeTransient
from controlplane.reconciling import ProvisioningState
from tests import sshd as servers
from tests.support import assert_error
from workspaces.models import AuditEvent

URL = "/api/v1/workspaces/team-a/computes/"
NVIDIA_SMI = """#!/bin/sh
# what nvidia-smi --query-gpu=index,name,memory.total,uuid,driver_version --format=csv,noheader,nounits prints
echo "0, NVIDIA A100-SXM4-80GB, 81920, GPU-00000000-1111-2222-3333-444444444444, 550.54.15"
echo "1, NVIDIA A100-SXM4-80GB, 81920, GPU-11111111-1111-2222-3333-444444444444, 550.54.15"
"""


@pytest.fixture
def fresh(sshd):
    """An sshd of this test's own (its options or host key change); `sshd` first, for its skip when there is none."""
    server = servers.start_sshd()
    yield server
    server.close()


def vm_body(server, name: str = "gpubox", **fields) -> dict:
    """A VM body for `server`, logging in with its key; a field given as None is left out."""
    body = {"name": name, "type": "virtualmachine", "address": server.address, "ssh_port": server.port,
            "admin_username": server.username, "ssh_private_key": server.private_key, **fields}
    return {key: value for key, value in body.items() if value is not None}


def attach(api, server, **fields) -> ComputeTarget:
    response = api.post(URL, vm_body(server, **fields), format="json")
    assert response.status_code == 201, response.json()
    return check(ComputeTarget.objects.get(name=response.json()["name"]))


def check(compute: ComputeTarget) -> ComputeTarget:
    """One reconcile, as the task runs it (it holds the row lock there); the record as saved."""
    reconcile.reconcile_compute(ComputeTarget.objects.get(pk=compute.pk))
    return ComputeTarget.objects.get(pk=compute.pk)


def confirm(api, compute: ComputeTarget, shown: str):
    return api.post(f"{URL}{compute.name}/confirm-host-key/", {"fingerprint": shown}, format="json")


def nproc() -> int:
    return int(subprocess.run(["nproc"], capture_output=True, text=True, check=True).stdout)


def test_first_contact_records_the_key_and_waits_then_confirmed_it_probes(owner_api, workspace, sshd):
    compute = attach(owner_api, sshd)
    shown = fingerprint(sshd.host_key)
    assert compute.provisioning_state == ProvisioningState.CREATING, compute.provisioning_errors
    assert compute.status["host_key_fingerprint"] == shown and compute.status["host_key_confirmed"] is False
    assert f"Confirm the host key {shown}" in compute.status["message"]
    assert compute.properties["host_key"] == sshd.host_key and "cpus" not in compute.status  # scanned, no login

    assert check(compute).provisioning_state == ProvisioningState.CREATING  # a resync's look changes nothing
    wrong = confirm(owner_api, compute, "SHA256:" + "A" * 43)
    assert shown in str(assert_error(wrong, 400, "HostKeyMismatch", "fingerprint"))
    response = confirm(owner_api, compute, shown)
    assert response.status_code == 202, response.json()
    assert response.json()["provisioning_state"] == "Updating"

    compute = check(compute)
    assert compute.provisioning_state == ProvisioningState.SUCCEEDED, compute.provisioning_errors
    status = compute.status
    assert (status["host_key_fingerprint"], status["host_key_confirmed"]) == (shown, True)
    assert status["cpus"] == nproc() and status["memory_mb"] > 0 and status["gpus"] == []  # no nvidia-smi here
    assert status["disk_total_mb"] >= status["disk_free_mb"] > 0 and status["arch"] and status["kernel"]
    assert compute.checked_at is not None and compute.properties["host_key_fingerprint"] == shown

    shown_by_api = owner_api.get(f"{URL}gpubox/").json()
    assert shown_by_api["status"]["cpus"] == nproc() and shown_by_api["status"]["host_key_fingerprint"] == shown
    assert {"gpus", "memory_mb"} <= set(shown_by_api["status"]) and shown_by_api["checked_at"]
    assert "host_key" not in shown_by_api and "ssh_private_key" not in shown_by_api
    assert_error(confirm(owner_api, compute, shown), 409, "Conflict")  # nothing waits any more
    event = AuditEvent.objects.get(verb="confirm-host-key")
    assert (event.target_name, event.changes) == ("gpubox", {"host_key_fingerprint": [None, shown]})


def test_the_right_fingerprint_in_the_body_attaches_at_once(owner_api, workspace, sshd):
    compute = attach(owner_api, sshd, host_key_fingerprint=fingerprint(sshd.host_key))
    assert compute.provisioning_state == ProvisioningState.SUCCEEDED, compute.provisioning_errors
    assert compute.status["host_key_confirmed"] is True and compute.status["cpus"] == nproc()


def test_a_wrong_fingerprint_in_the_body_fails_naming_both(owner_api, workspace, sshd):
    expected = "SHA256:" + "B" * 43
    compute = attach(owner_api, sshd, host_key_fingerprint=expected)
    assert compute.provisioning_state == ProvisioningState.FAILED
    error = compute.provisioning_errors[0]
    assert error["code"] == "HostKeyMismatch"
    assert fingerprint(sshd.host_key) in error["message"] and expected in error["message"]
    assert "cpus" not in compute.status
    # the admin corrects the fingerprint: the recorded key matches it, so the attach goes on
    response = owner_api.patch(f"{URL}gpubox/", {"host_key_fingerprint": fingerprint(sshd.host_key)}, format="json")
    assert response.status_code == 200, response.json()
    assert check(compute).provisioning_state == ProvisioningState.SUCCEEDED


def test_a_malformed_fingerprint_is_refused_at_the_field(owner_api, workspace, sshd):
    response = owner_api.post(URL, vm_body(sshd, host_key_fingerprint="MD5:aa:bb"), format="json")
    assert "SHA256" in str(assert_error(response, 400, "ValidationError", "host_key_fingerprint"))


def test_a_changed_host_key_fails_until_the_new_one_is_confirmed(owner_api, workspace, fresh):
    compute = attach(owner_api, fresh, host_key_fingerprint=fingerprint(fresh.host_key))
    assert compute.provisioning_state == ProvisioningState.SUCCEEDED
    old, new = fingerprint(fresh.host_key), fingerprint(fresh.new_host_key())

    compute = check(compute)
    assert compute.provisioning_state == ProvisioningState.FAILED
    error = compute.provisioning_errors[0]
    assert error["code"] == "HostKeyChanged" and new in error["message"] and old in error["message"]
    assert compute.status["presented_host_key_fingerprint"] == new and compute.status["cpus"] == nproc()  # last probes kept
    assert compute.properties["presented_host_key"] == fresh.host_key and fingerprint(compute.properties["host_key"]) == old
    assert_error(confirm(owner_api, compute, old), 400, "HostKeyMismatch", "fingerprint")

    assert confirm(owner_api, compute, new).status_code == 202
    compute = check(compute)
    assert compute.provisioning_state == ProvisioningState.SUCCEEDED, compute.provisioning_errors
    assert compute.status["host_key_fingerprint"] == new and "presented_host_key_fingerprint" not in compute.status
    assert "presented_host_key" not in compute.properties
    event = AuditEvent.objects.filter(verb="confirm-host-key").get()
    assert event.changes == {"host_key_fingerprint": [old, new]}


def test_a_password_logs_in_when_it_is_what_the_admin_gave(owner_api, workspace, sshd):
    compute = attach(owner_api, sshd, ssh_private_key=None, admin_password=sshd.password,
                     host_key_fingerprint=fingerprint(sshd.host_key))
    assert compute.provisioning_state == ProvisioningState.SUCCEEDED, compute.provisioning_errors


@pytest.mark.parametrize("credentials, how", [
    ({"ssh_private_key": None, "admin_password": "not-the-password"}, "password"),
    ({"ssh_private_key": "other"}, "key"),
])
def test_refused_credentials_fail_and_are_not_retried(owner_api, workspace, sshd, tmp_path, credentials, how):
    if credentials.get("ssh_private_key") == "other":
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "k")], check=True)
        credentials = {"ssh_private_key": (tmp_path / "k").read_text()}
    compute = attach(owner_api, sshd, host_key_fingerprint=fingerprint(sshd.host_key), **credentials)
    assert compute.provisioning_state == ProvisioningState.FAILED  # and no KubeTransient: the task does not retry
    error = compute.provisioning_errors[0]
    assert error["code"] == "AuthenticationFailed"
    assert error["message"] == (f"The host at {sshd.address}:{sshd.port} refused user '{sshd.username}' with the "
                                f"{how} given.")


def test_an_unreachable_host_fails_saying_so_is_retried_and_recovers(owner_api, workspace, fresh):
    compute = attach(owner_api, fresh, host_key_fingerprint=fingerprint(fresh.host_key))
    fresh.stop()
    with pytest.raises(KubeTransient):  # what tasks.reconcile_compute (locked_run) retries with a backoff
        check(compute)
    compute = ComputeTarget.objects.get(pk=compute.pk)
    assert compute.provisioning_state == ProvisioningState.FAILED
    error = compute.provisioning_errors[0]
    assert error["code"] == "Unreachable" and error["message"].endswith("Retrying.")
    assert f"{fresh.address}:{fresh.port}" in error["message"]
    fresh.start()
    assert check(compute).provisioning_state == ProvisioningState.SUCCEEDED


def test_the_task_asks_celery_to_retry_an_unreachable_host_and_not_a_refused_login(owner_api, workspace, fresh, monkeypatch):
    asked = []

    def retry(*args, **kwargs):
        asked.append(kwargs)
        return RuntimeError("retry asked")

    monkeypatch.setattr(tasks.reconcile_compute, "retry", retry)
    assert owner_api.post(URL, vm_body(fresh, host_key_fingerprint=fingerprint(fresh.host_key)), format="json").status_code == 201
    pk = ComputeTarget.objects.get(name="gpubox").pk
    fresh.stop()
    with pytest.raises(RuntimeError, match="retry asked"):
        tasks.reconcile_compute.run(pk)
    assert isinstance(asked[0]["exc"], KubeTransient) and asked[0]["countdown"] > 0
    fresh.start()
    ComputeTarget.objects.filter(pk=pk).update(secrets_encrypted="")  # no credentials: the login is refused
    tasks.reconcile_compute.run(pk)
    assert len(asked) == 1 and ComputeTarget.objects.get(pk=pk).provisioning_errors[0]["code"] == "AuthenticationFailed"


def test_first_contact_with_no_server_is_retried_without_recording_a_key(owner_api, workspace, fresh):
    fresh.stop()
    response = owner_api.post(URL, vm_body(fresh), format="json")
    assert response.status_code == 201
    with pytest.raises(KubeTransient):
        check(ComputeTarget.objects.get(name="gpubox"))
    compute = ComputeTarget.objects.get(name="gpubox")
    assert compute.provisioning_state == ProvisioningState.FAILED and "host_key" not in compute.properties


def test_gpus_of_a_stub_nvidia_smi_on_the_remote_path(owner_api, workspace, fresh):
    folder = Path(tempfile.mkdtemp(prefix="dy-gpu-"))
    folder.chmod(0o755)  # the test user runs it
    (folder / "nvidia-smi").write_text(NVIDIA_SMI)
    (folder / "nvidia-smi").chmod(0o755)
    fresh.start(SetEnv=f"PATH={folder}:/usr/local/bin:/usr/bin:/bin")
    compute = attach(owner_api, fresh, host_key_fingerprint=fingerprint(fresh.host_key))
    assert compute.provisioning_state == ProvisioningState.SUCCEEDED, compute.provisioning_errors
    gpus = compute.status["gpus"]
    assert [(gpu["index"], gpu["name"], gpu["memory_mb"]) for gpu in gpus] == [
        (0, "NVIDIA A100-SXM4-80GB", 81920), (1, "NVIDIA A100-SXM4-80GB", 81920)]
    assert gpus[1]["uuid"].startswith("GPU-1111") and gpus[0]["driver_version"] == "550.54.15"
    listed = owner_api.get(f"{URL}gpubox/").json()["status"]["gpus"]
    assert [gpu["index"] for gpu in listed] == [0, 1]


def test_another_address_or_port_is_another_host_whose_key_is_recorded_afresh(owner_api, workspace, sshd, fresh):
    compute = attach(owner_api, sshd, host_key_fingerprint=fingerprint(sshd.host_key))
    assert compute.provisioning_state == ProvisioningState.SUCCEEDED
    moved = {"ssh_port": fresh.port, "ssh_private_key": fresh.private_key}  # its own client key is authorised there
    response = owner_api.patch(f"{URL}gpubox/", moved, format="json")
    assert response.status_code == 200, response.json()
    compute = check(compute)
    # the fingerprint given is the old host's: the new host's key does not match it
    assert compute.provisioning_state == ProvisioningState.FAILED
    assert compute.provisioning_errors[0]["code"] == "HostKeyMismatch"
    assert compute.properties["host_key"] == fresh.host_key and compute.properties["host_key_confirmed"] is False
    assert confirm(owner_api, compute, fingerprint(fresh.host_key)).status_code == 202
    assert check(compute).provisioning_state == ProvisioningState.SUCCEEDED


def test_a_description_change_keeps_the_pinned_key(owner_api, workspace, sshd):
    compute = attach(owner_api, sshd, host_key_fingerprint=fingerprint(sshd.host_key))
    assert owner_api.patch(f"{URL}gpubox/", {"description": "the team's box"}, format="json").status_code == 200
    compute = ComputeTarget.objects.get(pk=compute.pk)
    assert compute.properties["host_key"] == sshd.host_key and compute.properties["host_key_confirmed"] is True
    assert check(compute).provisioning_state == ProvisioningState.SUCCEEDED


def test_hdinsight_head_nodes_are_attached_the_same_way(owner_api, workspace, sshd):
    compute = attach(owner_api, sshd, type="hdinsight", name="hdi", host_key_fingerprint=fingerprint(sshd.host_key))
    assert compute.provisioning_state == ProvisioningState.SUCCEEDED, compute.provisioning_errors
    assert compute.status["cpus"] == nproc()


def test_confirming_needs_an_ssh_host_and_a_key_waiting(owner_api, workspace, owner):
    from compute.tests.factories import create_compute

    create_compute(workspace, owner, "databricks", name="dbx")
    assert_error(owner_api.post(f"{URL}dbx/confirm-host-key/", {"fingerprint": "SHA256:" + "A" * 43}, format="json"),
                 409, "Conflict")
    create_compute(workspace, owner, "virtualmachine")
    assert_error(owner_api.post(f"{URL}vm/confirm-host-key/", {"fingerprint": "SHA256:" + "A" * 43}, format="json"),
                 409, "Conflict")  # nothing scanned yet
    assert_error(owner_api.post(f"{URL}vm/confirm-host-key/", {}, format="json"), 400, "BadRequest", "fingerprint")


def test_the_resync_rechecks_ssh_hosts_once_a_period(owner_api, workspace, sshd, settings, monkeypatch):
    compute = attach(owner_api, sshd, host_key_fingerprint=fingerprint(sshd.host_key))
    asked = []
    monkeypatch.setattr(tasks.reconcile_compute, "delay", lambda pk: asked.append(pk))
    monkeypatch.setattr(tasks.sync_cluster, "delay", lambda pk: None)
    tasks.resync()
    assert compute.pk not in asked  # checked a moment ago
    past = timezone.now() - timedelta(seconds=settings.DOCKYARD_CLUSTER_CHECK_SECONDS + 1)
    ComputeTarget.objects.filter(pk=compute.pk).update(checked_at=past)
    tasks.resync()
    assert asked == [compute.pk]


def test_secrets_reach_neither_the_record_nor_the_logs_nor_the_audit(owner_api, workspace, sshd, caplog):
    caplog.set_level("DEBUG")
    wrong = "SECRET-password-" + os.urandom(8).hex()
    attach(owner_api, sshd, name="bykey", host_key_fingerprint=fingerprint(sshd.host_key))
    attach(owner_api, sshd, name="bypassword", ssh_private_key=None, admin_password=sshd.password,
           host_key_fingerprint=fingerprint(sshd.host_key))
    attach(owner_api, sshd, name="refused", ssh_private_key=None, admin_password=wrong,
           host_key_fingerprint=fingerprint(sshd.host_key))
    responses = [owner_api.get(URL).content.decode(), owner_api.get("/api/v1/workspaces/team-a/events/").content.decode()]
    records = [repr((row.properties, row.status, row.provisioning_errors)) for row in ComputeTarget.objects.all()]
    audit = [repr(event.changes) for event in AuditEvent.objects.all()]
    key_body = sshd.private_key.splitlines()[1]  # a line of the key's base64
    for secret in (wrong, sshd.password, key_body):
        assert not [text for text in [*responses, *records, *audit, caplog.text] if secret in text], secret
    assert ComputeTarget.objects.get(name="refused").provisioning_errors[0]["code"] == "AuthenticationFailed"


@pytest.mark.parametrize("raw", [
    b"[]", b'"SHA256:x"', b'{"fingerprint": 5}', b'{"fingerprint": ["SHA256:x"]}', b'{"fingerprint": "SHA256:\\u0000"}',
    b'{"fingerprint": "' + b"A" * 300_000 + b'"}', b'{"fingerprint": {"a": ' * 40 + b"1" + b"}" * 40,
    b"\xff\xfe not json",
])
def test_hostile_confirm_bodies_are_4xx_in_the_error_shape_and_confirm_nothing(owner_api, workspace, sshd, raw):
    compute = attach(owner_api, sshd)
    before = dict(ComputeTarget.objects.get(pk=compute.pk).properties)
    response = owner_api.generic("POST", f"{URL}gpubox/confirm-host-key/", raw, content_type="application/json")
    assert 400 <= response.status_code < 500, response.content
    assert set(response.json()) == {"error"} and response.json()["error"]["message"]
    assert ComputeTarget.objects.get(pk=compute.pk).properties == before  # nothing confirmed, nothing written


def test_a_yaml_confirm_body_with_an_alias_is_refused(owner_api, workspace, sshd):
    compute = attach(owner_api, sshd)
    shown = compute.status["host_key_fingerprint"]
    raw = f"x: &k {shown}\nfingerprint: *k\n".encode()
    response = owner_api.generic("POST", f"{URL}gpubox/confirm-host-key/", raw, content_type="application/yaml")
    assert 400 <= response.status_code < 500 and set(response.json()) == {"error"}, response.content
    assert ComputeTarget.objects.get(pk=compute.pk).properties.get("host_key_confirmed") is False
