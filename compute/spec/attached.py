"""Bodies of the attached types Dockyard keeps as records: SSH hosts and the Azure resources (pure)."""
from ..hostkeys import FINGERPRINT, FINGERPRINT_MESSAGE
from .fields import Checks, Integer, Pattern, Refused, Text, Url, rule
from .forms import Invalid, problem
from .kinds import USERNAME_MESSAGE, ComputeKind, secret
from .rules import USERNAME, resource_id_problem

SSH_SETTINGS_FIELDS = ("admin_username", "admin_password", "ssh_port", "ssh_private_key")


class SshHost(ComputeKind):
    """An SSH-reachable host: address, port, user, and a password or private key; optionally the host key's
    fingerprint, which then confirms the key on first contact (else an admin confirms what the host presented)."""

    secret_fields = ("admin_password", "ssh_private_key")
    kept_as_given = ("resource_id",)
    aliases = ("ssh_settings",)
    shown = ("status", "checked_at")

    own = {
        "address": Text(max_length=253, messages={
            "required": "Dockyard reaches the host at this address (a host name or IP); Azure ML's resource_id alone "
                        "does not locate it."}),
        "ssh_port": Integer(minimum=1, maximum=65535, required=False, default=22),
        "admin_username": Pattern(USERNAME, max_length=64, messages={"invalid": USERNAME_MESSAGE}),
        "admin_password": secret(),
        "ssh_private_key": secret(),
        # Dockyard's own field (Azure ML has none): the key this host must present, "SHA256:…" as ssh-keygen -lf says
        "host_key_fingerprint": Pattern(FINGERPRINT, required=False, allow_null=True, max_length=50, messages={"invalid": FINGERPRINT_MESSAGE}),
    }

    def normalise(self, data: dict) -> dict:
        ssh = data.pop("ssh_settings", None)
        if ssh is not None and not isinstance(ssh, dict):
            raise problem("ssh_settings", "ssh_settings must be a mapping.")
        ssh = ssh or {}
        if "ssh_private_key_file" in ssh:
            raise problem("ssh_settings.ssh_private_key_file",
                          "Send the key's contents as ssh_private_key (the CLI reads the file for you).")
        unknown = sorted(str(key) for key in ssh if key not in SSH_SETTINGS_FIELDS)
        if unknown:
            known = ", ".join(SSH_SETTINGS_FIELDS)
            raise Invalid([(f"ssh_settings.{key}", f"Unknown field here; the fields are: {known}.") for key in unknown])
        for key in SSH_SETTINGS_FIELDS:
            if key in ssh:
                data.setdefault(key, ssh[key])
        return data

    def check_address(self, value: str, checks: Checks) -> str:
        try:
            checks.ssh_host(value)  # the runner checks again before it connects
        except Refused as exc:
            raise problem("", exc.messages[0]) from None
        return value

    def check_ssh_private_key(self, value: str, checks: Checks) -> str:
        if value and "PRIVATE KEY-----" not in value:
            raise problem("", "This does not look like a private key (no '-----BEGIN ... PRIVATE KEY-----' block).")
        return value

    def validate(self, values: dict, checks: Checks) -> dict:
        if not any(values.get(key) or checks.secrets.get(key) for key in self.secret_fields):
            raise problem("admin_password", "Give admin_password or ssh_private_key.")
        return values


class VirtualMachine(SshHost):
    compute_type = "virtualmachine"


class HDInsight(SshHost):
    compute_type = "hdinsight"


def resource_id(**kwargs) -> Text:
    return Text(max_length=1024, rules=(rule(resource_id_problem),), **kwargs)


class DataLakeAnalytics(ComputeKind):
    compute_type = "datalakeanalytics"
    own = {"resource_id": resource_id()}


class SynapseSpark(ComputeKind):
    compute_type = "synapsespark"
    kept_as_given = ("identity",)
    own = {"resource_id": resource_id()}


class Databricks(ComputeKind):
    compute_type = "databricks"
    secret_fields = ("access_token",)
    own = {"resource_id": resource_id(required=False), "workspace_url": Url(max_length=1024), "access_token": secret()}

    def validate(self, values: dict, checks: Checks) -> dict:
        if not (values.get("access_token") or checks.secrets.get("access_token")):
            raise problem("access_token", "A Databricks access token is required.")
        return values


class Batch(ComputeKind):
    compute_type = "batch"
    secret_fields = ("account_key",)
    own = {
        "resource_id": resource_id(required=False),
        "account_name": Pattern(r"^[a-z0-9]{3,24}$", messages={"invalid": "3–24 lowercase letters or digits."}),
        "account_url": Url(max_length=1024, required=False),
        "account_key": secret(),
    }

    def validate(self, values: dict, checks: Checks) -> dict:
        if not (values.get("account_key") or checks.secrets.get("account_key")):
            raise problem("account_key", "The Batch account key is required.")
        return values
