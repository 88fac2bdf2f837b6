"""Instance types: records → InstanceType CRs, and the cluster resync (drift, import, garbage collection, nodes)."""
import json
import logging

from django.db import connection
from django.utils import timezone

from controlplane.kube import client as kube
from controlplane.kube.objects import LABEL_PREFIX, MANAGED_BY, MANAGER
from controlplane.kube.resources import Shape
from controlplane.reconciling import ProvisioningState, problem, set_status
from controlplane.specs import SpecErrors

from .. import shapes
from ..connections import attachment_connection
from ..manifests import INSTANCE_TYPE_API_VERSION, instance_type_manifest
from ..models import Cluster, InstanceType

logger = logging.getLogger(__name__)
DELETED = "deleted"  # what `_reconcile_one` answers instead of the changed fields when the row is to go


def desired_manifest(record: InstanceType) -> dict:
    return instance_type_manifest(record.shape(), cluster_id=record.cluster_id)


class Interrupted(kube.KubeTransient):
    """A transient cluster error stopped a batch: the records before it are written, `unfinished` (pks) are not."""

    def __init__(self, cause: kube.KubeTransient, unfinished: list[int]):
        super().__init__(str(cause), retry_after=cause.retry_after)
        self.unfinished = unfinished


def reconcile_instance_type(record: InstanceType, compute_id: int | None = None) -> None:
    """Apply (or delete) one instance type's CR with attachment `compute_id`'s credentials (or another passing one's)."""
    reconcile_instance_types(record.cluster, [record], prefer=compute_id)


def reconcile_instance_types(cluster: Cluster, records: list[InstanceType], prefer: int | None = None) -> None:
    """Apply (or delete) the CRs of many records of `cluster`; one UPDATE of the changed statuses, one DELETE (caller holds the locks).

    On a transient cluster error the work done so far is written and `Interrupted` (a KubeTransient naming the
    records not done) is raised: the caller retries those, the resync catches anything lost. The credentials are
    those of an attachment of the cluster that passes its checks (`prefer` when it does), never a failed one's.
    """
    conn = attachment_connection(cluster, prefer)
    changed: list[InstanceType] = []
    deleted: list[InstanceType] = []
    fields: set[str] = set()
    for index, record in enumerate(records):
        try:
            outcome = _reconcile_one(conn, record)
        except kube.KubeTransient as exc:
            _write(changed, fields, deleted)
            raise Interrupted(exc, [rest.pk for rest in records[index:]]) from exc
        if outcome == DELETED:
            deleted.append(record)
        elif outcome:
            changed.append(record)
            fields.update(outcome)
    _write(changed, fields, deleted)


def _reconcile_one(conn: kube.Connection | None, record: InstanceType) -> list[str] | str:
    """Make one record's CR match and set its status in memory; returns the changed status fields, or DELETED."""
    if conn is None:
        if record.provisioning_state == ProvisioningState.DELETING:
            return DELETED  # never connected, so no CR of ours exists there
        waiting = [problem("Waiting", "No attachment of this cluster passes its checks now.")]
        return set_status(record, ProvisioningState.CREATING, waiting)
    try:
        if record.provisioning_state == ProvisioningState.DELETING:
            kube.delete(conn, INSTANCE_TYPE_API_VERSION, "InstanceType", record.name)
            logger.info("Deleted InstanceType %s", record.name)
            return DELETED
        desired = desired_manifest(record)
        live = kube.apply(conn, desired)
        if live.get("spec") != desired["spec"]:  # fields someone else added (kubectl edit) survive an apply
            live = kube.replace_spec(conn, desired)
    except kube.KubeRejected as exc:
        return set_status(record, ProvisioningState.FAILED, [problem(exc.reason or "Rejected", str(exc))])
    return set_status(record, ProvisioningState.SUCCEEDED, [], observed_spec=live.get("spec"))


STATUS_FIELDS = ("provisioning_state", "provisioning_errors", "observed_generation", "observed_spec")
STATUS_ROW = "(%s::bigint, %s::text, %s::jsonb, %s::bigint, %s::jsonb)"


def _write(changed: list[InstanceType], fields: set[str], deleted: list[InstanceType]) -> None:
    """Store the batch's outcome: the changed status fields of the changed rows in one UPDATE, the deleted rows in one DELETE."""
    if changed and connection.vendor == "postgresql":
        _update_statuses(changed)
    elif changed:
        InstanceType.objects.bulk_update(changed, sorted(fields))
    if deleted:
        InstanceType.objects.filter(pk__in=[record.pk for record in deleted]).delete()
        for record in deleted:
            record.pk = None  # as Model.delete() leaves it


def _update_statuses(records: list[InstanceType]) -> None:
    """One UPDATE … FROM (VALUES …): bulk_update's CASE per row and field cost more than the applies themselves."""
    params = []
    for record in records:
        spec = None if record.observed_spec is None else json.dumps(record.observed_spec)  # None stays SQL NULL
        params += [record.pk, record.provisioning_state, json.dumps(record.provisioning_errors), record.observed_generation, spec]
    sql = (
        f"UPDATE {InstanceType._meta.db_table} AS t SET provisioning_state = v.state, provisioning_errors = v.errors, "
        "observed_generation = v.generation, observed_spec = v.spec "
        f"FROM (VALUES {', '.join([STATUS_ROW] * len(records))}) AS v(id, state, errors, generation, spec) WHERE t.id = v.id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


def _ours(cr: dict, cluster: Cluster) -> bool:
    labels = cr["metadata"].get("labels") or {}
    return labels.get(MANAGED_BY) == MANAGER and labels.get(f"{LABEL_PREFIX}cluster") == str(cluster.pk)


def sync_cluster(cluster: Cluster) -> list[int]:
    """One LIST of InstanceTypes and one of Nodes; fix what differs. Returns the records that need a reconcile."""
    conn = attachment_connection(cluster)
    if conn is None:
        return []
    live = {cr["metadata"]["name"]: cr for cr in kube.list_objects(conn, INSTANCE_TYPE_API_VERSION, "InstanceType")}
    _store_nodes(cluster, [shapes.node_summary(node) for node in kube.list_objects(conn, "v1", "Node")])
    records = {record.name: record for record in cluster.instance_types.all()}
    behind = [pk for pk in (_compare(record, live.get(name)) for name, record in records.items()) if pk]
    for name, cr in live.items():
        if name in records or cr["metadata"].get("deletionTimestamp"):  # (one being deleted is on its way out)
            continue
        if _ours(cr, cluster):
            logger.info("Garbage-collected InstanceType %s (no record)", name)
            kube.delete(conn, INSTANCE_TYPE_API_VERSION, "InstanceType", name)
        else:
            _import(cluster, cr)
    return behind


def _compare(record: InstanceType, cr: dict | None) -> int | None:
    """The record's pk if it needs a reconcile (behind, deleting or drifted); imported records follow the cluster."""
    if record.provisioning_state == ProvisioningState.DELETING or record.observed_generation < record.generation:
        return record.pk
    if record.source == InstanceType.Source.CLUSTER:
        _follow(record, cr)
        return None
    if cr is None or cr.get("spec") != desired_manifest(record)["spec"]:
        logger.info("InstanceType %s drifted on the cluster; restoring it", record.name)
        observed = cr.get("spec") if cr else None
        if record.observed_spec != observed:  # shown as drift until the reconcile restores it
            record.observed_spec = observed
            record.save(update_fields=["observed_spec"])
        return record.pk
    return None


def _spec_fields(cr: dict) -> dict:
    """Record fields from a CR written by someone else (kubectl): kept as the cluster has them."""
    spec = cr.get("spec") or {}
    errors = []
    try:
        shapes.parse_body(cr)
    except SpecErrors as exc:
        errors = [problem("InvalidInstanceType", f"{path}: {message}") for path, message in exc.errors]
    shape = Shape.from_spec(cr["metadata"]["name"], spec)
    return {**InstanceType.shape_fields(shape), "observed_spec": spec, "provisioning_errors": errors}


def _import(cluster: Cluster, cr: dict) -> None:
    logger.info("Imported InstanceType %s created on the cluster", cr["metadata"]["name"])
    InstanceType.objects.create(
        cluster=cluster, name=cr["metadata"]["name"], source=InstanceType.Source.CLUSTER,
        provisioning_state=ProvisioningState.SUCCEEDED, observed_generation=1, **_spec_fields(cr),
    )


def _follow(record: InstanceType, cr: dict | None) -> None:
    if cr is None:
        logger.info("InstanceType %s was deleted on the cluster; forgetting it", record.name)
        record.delete()
        return
    fields = _spec_fields(cr)
    changed = [key for key, value in fields.items() if getattr(record, key) != value]
    for key in changed:
        setattr(record, key, fields[key])
    if changed:
        record.save(update_fields=changed)


def _store_nodes(cluster: Cluster, nodes: list[dict]) -> None:
    """Keep the nodes and when they were read; the change time moves only when they differ (the studio shows both)."""
    nodes = sorted(nodes, key=lambda node: node["name"])
    cluster.nodes_read_at = timezone.now()
    changed = ["nodes_read_at"]
    if nodes != cluster.nodes:
        cluster.nodes, cluster.synced_at = nodes, cluster.nodes_read_at
        changed += ["nodes", "synced_at"]
    cluster.save(update_fields=changed)
