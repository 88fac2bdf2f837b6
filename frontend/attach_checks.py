"""The checks of a Kubernetes attachment as its page lists them, read from the record's state and error codes.

Reconcile runs the checks in this order and stops at the first that cannot pass (an unreachable server, or a
namespace or rights problem before the CRD); it records what failed as `provisioning_errors` rows with a code. This
module turns that back into one line per check: passed, failed (with the server's message), running or not run.
"""
from dataclasses import dataclass

from compute.models import ComputeTarget
from controlplane.reconciling import ProvisioningState

CRD_NAME = "instancetypes.amlarc.azureml.com"
RUNNING_STATES = (ProvisioningState.CREATING, ProvisioningState.UPDATING)


@dataclass(frozen=True)
class Check:
    key: str
    label: str
    status: str  # passed | failed | running | skipped
    detail: str


# (key, label, the error codes that mean this check failed)
CHECKS = (
    ("reachable", "API server reachable", ("Unreachable",)),
    ("namespace", "Namespace exists", ("NamespaceNotFound",)),
    ("access", "Permissions (SelfSubjectAccessReview)", ("Forbidden",)),
    ("crd", "InstanceType CRD installed", ("CrdMissing",)),
)
KNOWN_CODES = {code for _, _, codes in CHECKS for code in codes}


def passed_detail(key: str, compute: ComputeTarget) -> str:
    cluster = compute.cluster
    if key == "reachable":
        version = f"Kubernetes {cluster.version}" if cluster and cluster.version else "The API server answered"
        return f"{version} at {compute.properties.get('server', '')}"
    if key == "namespace":
        return f"Namespace '{compute.properties.get('namespace', 'default')}' exists."
    if key == "access":
        return "May manage InstanceTypes, Jobs and Pods."
    return f"The CRD {CRD_NAME} is installed and served."


def attachment_checks(compute: ComputeTarget) -> list[Check]:
    """One Check per step; errors with codes no step owns (a refused credential, say) count against reaching the server."""
    state = compute.provisioning_state
    if state in RUNNING_STATES:
        return [Check(key, label, "running", "Checking…") for key, label, _ in CHECKS]
    if state == ProvisioningState.DELETING:
        return [Check(key, label, "skipped", "Being deleted.") for key, label, _ in CHECKS]
    errors = [row for row in compute.provisioning_errors or [] if isinstance(row, dict)]
    if state == ProvisioningState.FAILED:
        errors = [{**row, "code": row.get("code") if row.get("code") in KNOWN_CODES else "Unreachable"} for row in errors]
    failed = {}
    for row in errors:
        failed.setdefault(row["code"], []).append(row.get("message", ""))
    checks, stop = [], False
    for key, label, codes in CHECKS:
        messages = [message for code in codes for message in failed.get(code, [])]
        if stop:
            checks.append(Check(key, label, "skipped", "Not checked: an earlier check failed."))
        elif messages:
            checks.append(Check(key, label, "failed", " ".join(messages)))
        else:
            checks.append(Check(key, label, "passed", passed_detail(key, compute)))
        # Namespace and rights are both checked once the server answers; the CRD only when both passed.
        stop = stop or (bool(messages) and key != "namespace") or (key == "access" and any(c.status == "failed" for c in checks))
    return checks
