"""Accepted means acted on: the compute fields kept without acting on them, each with the reason (pure).

tests/test_field_audit.py walks these against the parsers' accepted fields and the README's table.
"""

_CLUSTER_LATER = "is stored for the compute-cluster backend a later release builds on Karpenter; today it places nothing"
_INSTANCE_LATER = "is stored for the compute-instance backend a later release builds; today nothing starts or stops"
_SSH_LATER = "is stored (secrets encrypted) for the SSH runner a later release adds; today no job runs over SSH"
_PIPELINES = "is stored as a reference for pipeline steps, which Dockyard does not run; nothing uses it"
_AZURE_ONLY = "describes an Azure resource Dockyard has no counterpart for; it is kept so Azure ML files load unchanged"

# Accepted fields that are stored but do nothing today, with the reason (COMMON.md's rule; the README lists them).
# Kubernetes computes have none: every field they take is acted on.
STORED_ONLY: dict[str, str] = {
    **{f"amlcompute.{key}": f"{key} {_CLUSTER_LATER}." for key in (
        "size", "tier", "min_instances", "max_instances", "idle_time_before_scale_down", "ssh_settings",
        "ssh_settings.admin_username", "ssh_settings.admin_password", "ssh_settings.ssh_key_value",
        "ssh_public_access_enabled", "network_settings", "enable_node_public_ip", "identity")},
    "amlcompute.location": f"location {_AZURE_ONLY}.",
    **{f"computeinstance.{key}": f"{key} {_INSTANCE_LATER}." for key in (
        "size", "idle_time_before_shutdown", "idle_time_before_shutdown_minutes", "schedules",
        *(f"schedules.compute_start_stop{rest}" for rest in (
            "", ".action", ".state", ".trigger", ".trigger.type", ".trigger.expression", ".trigger.frequency",
            ".trigger.interval", ".trigger.schedule", ".trigger.start_time", ".trigger.time_zone")),
        "ssh_public_access_enabled", "network_settings", "enable_node_public_ip", "identity")},
    "computeinstance.location": f"location {_AZURE_ONLY}.",
    **{f"{kind}.{key}": f"{key} {_SSH_LATER}." for kind in ("virtualmachine", "hdinsight") for key in (
        "address", "ssh_port", "admin_username", "admin_password", "ssh_private_key", "ssh_settings")},
    **{f"{kind}.resource_id": f"resource_id {_AZURE_ONLY}." for kind in ("virtualmachine", "hdinsight")},
    **{f"{kind}.{key}": f"{key} {_PIPELINES}." for kind, keys in (
        ("databricks", ("resource_id", "workspace_url", "access_token")),
        ("batch", ("resource_id", "account_name", "account_url", "account_key")),
        ("synapsespark", ("resource_id", "identity")), ("datalakeanalytics", ("resource_id",))) for key in keys},
}
