"""Accepted means acted on: the compute fields kept without acting on them, each with the reason (pure).

tests/test_field_audit.py walks these against the parsers' accepted fields and the README's table.
"""

_INSTANCE_POD = ("describes an Azure VM's {what}; a compute instance is a pod on its attached cluster, whose {what} the "
                 "cluster decides. It is kept so Azure ML files load unchanged")
_PIPELINES = "is stored as a reference for pipeline steps, which Dockyard does not run; nothing uses it"
_AZURE_ONLY = "describes an Azure resource Dockyard has no counterpart for; it is kept so Azure ML files load unchanged"

# Accepted fields that are stored but do nothing today, with the reason (COMMON.md's rule; the README lists them).
# Kubernetes computes have none: every field they take is acted on. Compute clusters only their Azure region.
STORED_ONLY: dict[str, str] = {
    "amlcompute.location": "location is an Azure region; a compute cluster's nodes are where its attached cluster runs. "
                           "It is kept and shown so Azure ML files that name a region load unchanged.",
    # A compute instance acts on its shape, user, idle shutdown and schedules; only Azure's network and identity stay.
    **{f"computeinstance.{key}": f"{key} {_INSTANCE_POD.format(what=what)}." for key, what in (
        ("network_settings", "network and subnet"), ("enable_node_public_ip", "public address"),
        ("identity", "managed identity (the pod runs with the namespace's service account)"))},
    "computeinstance.location": f"location {_AZURE_ONLY}.",
    **{f"{kind}.resource_id": f"resource_id {_AZURE_ONLY}." for kind in ("virtualmachine", "hdinsight")},
    **{f"{kind}.{key}": f"{key} {_PIPELINES}." for kind, keys in (
        ("databricks", ("resource_id", "workspace_url", "access_token")),
        ("batch", ("resource_id", "account_name", "account_url", "account_key")),
        ("synapsespark", ("resource_id", "identity")), ("datalakeanalytics", ("resource_id",))) for key in keys},
}
