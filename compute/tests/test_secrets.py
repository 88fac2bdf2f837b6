"""Secrets (kubeconfig, SSH key, password, tokens, keys) are write-only: never in a response, a log line or plain in the database."""
import json
import logging
import uuid

import pytest
from cryptography.fernet import Fernet, InvalidToken
from django.apps import apps
from django.db import connection, models

from compute.hostkeys import fingerprint
from compute.models import ComputeTarget
from compute.tests.factories import PRIVATE_KEY, body, create_compute, kubeconfig
from tests.support import assert_error
from workspaces.models import AuditEvent

URL = "/api/v1/workspaces/team-a/computes/"
WAITING_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDmMHpRKkXoHIqRQ2e6G+tnDBUiEyTQj5aaRfDWbS5Xf"  # a host key to confirm


def marker(label: str) -> str:
    return f"SECRET-{label}-{uuid.uuid4().hex}"


def private_key(secret: str) -> str:
    return PRIVATE_KEY.replace("b3BlbnNzaC1rZXktdjEAAAAA", secret)


# (compute name, type, secret field, the secret's value made from a marker)
SECRETS = [
    ("k8s", "kubernetes", "kubeconfig", lambda secret: kubeconfig(token=secret)),
    ("vm-key", "virtualmachine", "ssh_private_key", private_key),
    ("vm-password", "virtualmachine", "admin_password", lambda secret: secret),
    ("dbx", "databricks", "access_token", lambda secret: secret),
    ("batch", "batch", "account_key", lambda secret: secret),
]


def create_body(name: str, compute_type: str, field: str, value: str) -> dict:
    others = {"admin_password": None, "ssh_private_key": None} if compute_type == "virtualmachine" else {}
    return body(compute_type, **{**others, "name": name, field: value})


class Everything(logging.Handler):
    """Keeps every record, with its arguments and extras, formatted as text."""

    def __init__(self):
        super().__init__(level=logging.DEBUG)
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))

    def emit(self, record):
        self.lines.append(f"{self.format(record)} {record.__dict__!r}")


@pytest.fixture
def all_logs():
    """Every logger at DEBUG, SQL with parameters included; yields the captured lines."""
    handler = Everything()
    loggers = [logging.getLogger()] + [
        logger for logger in logging.root.manager.loggerDict.values() if isinstance(logger, logging.Logger)
    ]
    levels = {logger: logger.level for logger in loggers}
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
        if logger is logging.getLogger() or not logger.propagate:
            logger.addHandler(handler)
    debug_cursor, connection.force_debug_cursor = connection.force_debug_cursor, True
    yield handler.lines
    connection.force_debug_cursor = debug_cursor
    for logger, level in levels.items():
        logger.setLevel(level)
        logger.removeHandler(handler)


def database_text() -> str:
    """Every text and JSON column of every table, read with raw SQL."""
    chunks = []
    with connection.cursor() as cursor:
        for model in apps.get_models():
            columns = [
                field.column for field in model._meta.concrete_fields
                if isinstance(field, models.CharField | models.TextField | models.JSONField)
            ]
            if not columns:
                continue
            quote = connection.ops.quote_name
            cursor.execute(f"SELECT {', '.join(quote(column) for column in columns)} FROM {quote(model._meta.db_table)}")
            for row in cursor.fetchall():
                chunks.extend(value if isinstance(value, str) else json.dumps(value) for value in row if value is not None)
    return "\n".join(chunks)


def test_secrets_never_leave_in_responses_logs_or_plain_in_the_database(owner_api, workspace, all_logs, capfd):
    markers = []
    responses = []

    def keep(response, status):
        assert response.status_code == status, response.content
        responses.append(response.serialize().decode())  # status line, headers and body
        return response

    for name, compute_type, field, make in SECRETS:
        secret = marker(field)
        markers.append(secret)
        keep(owner_api.post(URL, create_body(name, compute_type, field, make(secret)), format="json"), 201)
        keep(owner_api.get(URL + f"{name}/"), 200)
        keep(owner_api.patch(URL + f"{name}/", {"description": "keeps its secret"}, format="json"), 200)
        rotated = marker(field)
        markers.append(rotated)
        keep(owner_api.patch(URL + f"{name}/", {field: make(rotated)}, format="json"), 200)
    for name in ("vm-key", "vm-password"):  # the host key confirmation answers with the VM too
        vm = ComputeTarget.objects.get(name=name)
        vm.properties = {**vm.properties, "host_key": WAITING_KEY, "host_key_confirmed": False}
        vm.save(update_fields=["properties"])
        keep(owner_api.post(URL + f"{name}/confirm-host-key/", {"fingerprint": fingerprint(WAITING_KEY)}, format="json"), 202)
    keep(owner_api.get(URL), 200)
    keep(owner_api.get("/api/v1/workspaces/team-a/events/"), 200)

    # refused requests carrying secrets
    carried = {label: marker(label) for label in ("password", "key", "not-a-key", "kubeconfig", "yaml-kubeconfig", "context", "token", "account-key", "taken", "patch", "yaml")}
    markers.extend(carried.values())
    refused = [
        body("virtualmachine", name="vm-bad", address="169.254.169.254", admin_password=carried["password"]),
        body("virtualmachine", name="vm-bad", ssh_port=0, admin_password=None, ssh_private_key=private_key(carried["key"])),
        body("virtualmachine", name="vm-bad", admin_password=None, ssh_private_key=carried["not-a-key"]),
        body("kubernetes", name="k8s-bad", kubeconfig=kubeconfig(server="https://169.254.169.254", token=carried["kubeconfig"])),
        body("kubernetes", name="k8s-bad", kubeconfig="clusters: [" + carried["yaml-kubeconfig"]),
        body("kubernetes", name="k8s-bad", kubeconfig=kubeconfig(token=carried["context"]), context="nope"),
        body("databricks", name="dbx-bad", workspace_url="not a url", access_token=carried["token"]),
        body("batch", name="batch-bad", account_name="BAD", account_key=carried["account-key"]),
    ]
    for data in refused:
        keep(owner_api.post(URL, data, format="json"), 400)
    keep(owner_api.post(URL, body("batch", name="k8s", account_key=carried["taken"]), format="json"), 409)
    keep(owner_api.patch(URL + "vm-key/", {"ssh_private_key": private_key(carried["patch"]), "ssh_port": 0}, format="json"), 400)
    yaml_body = f"name: y\ntype: databricks\naccess_token: {carried['yaml']}\nworkspace_url: ["
    keep(owner_api.post(URL, yaml_body, content_type="application/yaml"), 400)

    out, err = capfd.readouterr()
    logs = "\n".join(all_logs)
    stored = database_text()
    assert "INSERT INTO" in logs and "keeps its secret" in stored  # the nets catch what they should
    for secret in markers:
        assert not [text for text in responses if secret in text], secret
        assert secret not in logs
        assert secret not in out + err
        assert secret not in stored
    assert len(set(markers)) == 2 * len(SECRETS) + len(carried)


@pytest.mark.parametrize("name, compute_type, field, make", [row for row in SECRETS if row[2] != "ssh_settings"])
def test_patch_without_the_secret_keeps_it(owner_api, workspace, name, compute_type, field, make):
    secret = make(marker(field))
    created = owner_api.post(URL, create_body(name, compute_type, field, secret), format="json").json()
    assert created["secrets_set"] == [field]
    assert field not in created
    response = owner_api.patch(URL + f"{name}/", {"description": "changed"}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["secrets_set"] == [field]
    assert ComputeTarget.objects.get(name=name).secrets == {field: secret}


def test_amlcompute_ssh_settings_are_refused_and_their_password_is_not_repeated(owner_api, workspace):
    """A compute cluster's nodes get their users and keys from the cluster's node class: refused, nothing kept."""
    password = marker("password")
    ssh = {"admin_username": "azureuser", "admin_password": password}
    response = owner_api.post(URL, body("amlcompute", ssh_settings=ssh), format="json")
    assert "node class" in str(assert_error(response, 400, "ValidationError", "ssh_settings"))
    assert password not in response.content.decode() and not ComputeTarget.objects.filter(name="cpu-cluster").exists()


def test_both_ssh_secrets_are_listed_when_both_are_set(owner_api, workspace):
    data = body("virtualmachine", ssh_private_key=PRIVATE_KEY)
    assert owner_api.post(URL, data, format="json").json()["secrets_set"] == ["admin_password", "ssh_private_key"]


def test_audit_names_a_changed_secret_without_its_value(owner_api, workspace, owner):
    create_compute(workspace, owner, "batch", account_key="old-key")
    owner_api.patch(URL + "batch/", {"account_key": "new-key"}, format="json")
    event = AuditEvent.objects.get(action="update", target_type="compute")
    assert event.changes == {"account_key": "(secret changed)"}


# key rotation: the first key encrypts, every key decrypts


def test_key_rotation_keeps_old_secrets_readable(settings, owner_api, workspace, owner):
    old = settings.FIELD_ENCRYPTION_KEYS[0]
    compute = create_compute(workspace, owner, "databricks", access_token="from-before")
    Fernet(old.encode()).decrypt(compute.secrets_encrypted.encode())  # written with the old key

    new = Fernet.generate_key().decode()
    settings.FIELD_ENCRYPTION_KEYS = [new, old]
    compute.refresh_from_db()
    assert compute.secrets == {"access_token": "from-before"}

    # any change re-encrypts every secret with the new key
    assert owner_api.patch(URL + "dbx/", {"description": "re-saved"}, format="json").status_code == 200
    compute.refresh_from_db()
    Fernet(new.encode()).decrypt(compute.secrets_encrypted.encode())
    with pytest.raises(InvalidToken):
        Fernet(old.encode()).decrypt(compute.secrets_encrypted.encode())

    settings.FIELD_ENCRYPTION_KEYS = [new]  # the old key retired
    compute.refresh_from_db()
    assert compute.secrets == {"access_token": "from-before"}


def test_a_secret_under_an_unknown_key_is_an_error_not_garbage(settings, workspace, owner):
    compute = create_compute(workspace, owner, "databricks")
    settings.FIELD_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]
    compute.refresh_from_db()
    with pytest.raises(RuntimeError, match="cannot be decrypted"):
        _ = compute.secrets
