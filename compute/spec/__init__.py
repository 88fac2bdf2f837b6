"""A compute body per type → its common fields, properties and secrets, validated (pure: no Django, no network).

The one validation path for the API, the studio and the CLI. What needs the world (the cluster server's address,
the clock, cron and time-zone grammars, the URL grammar) comes in as `Checks`, which compute/validators.py builds.
"""
from dataclasses import replace

from controlplane.specs import SpecErrors, enum_choice

from .attached import Batch, Databricks, DataLakeAnalytics, HDInsight, SynapseSpark, VirtualMachine
from .audit import STORED_ONLY
from .fields import Checks, Invalid, Refused
from .instances import ComputeInstance
from .kinds import COMMON_FIELDS, IGNORED, AmlCompute, ComputeKind, Kubernetes

KINDS: dict[str, ComputeKind] = {
    kind.compute_type: kind
    for kind in (Kubernetes(), AmlCompute(), ComputeInstance(), VirtualMachine(), HDInsight(), DataLakeAnalytics(),
                 SynapseSpark(), Databricks(), Batch())
}
# Every field each type's parser takes (dotted paths; `kept_as_given` included), as a constant the audit test walks.
ACCEPTED_FIELDS: dict[str, frozenset[str]] = {compute_type: kind.accepted_fields() for compute_type, kind in KINDS.items()}

__all__ = ["ACCEPTED_FIELDS", "COMMON_FIELDS", "IGNORED", "KINDS", "STORED_ONLY", "Checks", "ComputeKind", "Refused",
           "kind_for", "parse_compute"]


def kind_for(compute_type: object) -> ComputeKind:
    """The type a body names, in any case (`type: AmlCompute` is amlcompute, as Azure ML reads it)."""
    canonical = enum_choice(compute_type, KINDS)
    if canonical is None:
        raise SpecErrors([("type", f"Unknown compute type '{compute_type}'; one of: {', '.join(KINDS)}.")])
    return KINDS[canonical]


def parse_compute(kind: ComputeKind, body: object, checks: Checks, stored_secrets: dict | None = None) -> tuple[dict, dict, dict]:
    """Validate a body of `kind`; (common fields, properties, secrets), or SpecErrors naming each field's problem.

    `stored_secrets` are the record's when a change is checked: a secret left out is kept, so it still counts.
    """
    try:
        values = kind.run(body, replace(checks, secrets=stored_secrets or {}))
    except Invalid as exc:
        raise SpecErrors(exc.rows) from None
    secrets = {key: values.pop(key) for key in kind.secret_fields if key in values}
    common = {key: values.pop(key) for key in list(values) if key in COMMON_FIELDS}
    return common, values, secrets
