"""The outputs a Kubernetes job's pods send back (`POST /api/v1/artifacts/outputs/<token>/<rank>/`): the service.

The signed token (assets.delivery, its own salt) is the only authorisation: it names one job of one workspace and
when it stops working. Each rank's upload is read as hostile (assets.archives, under the snapshot limits: nothing is
stored unless every member passes) and stored as a snapshot of the workspace; the job's outputs are then the ranks'
snapshots merged, the lowest rank winning a path two ranks wrote (a single-node job's outputs are its one upload).
The same rank sending again replaces its part (a retried upload of the same files changes nothing). A pod's upload
always comes before Dockyard sees its job end (the pod ends only once its sidecar has uploaded), so an upload arriving
LATE_UPLOAD_SECONDS after the job's recorded end is refused: a token left in the cluster cannot rewrite old outputs.
"""
import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import BinaryIO

from django.db import transaction
from django.utils import timezone

from assets import delivery
from assets import services as assets
from assets.models import Snapshot
from controlplane.api import BadRequest

from .models import Job, JobEvent
from .outputs import record_outputs

logger = logging.getLogger("dockyard.artifacts")
PARTS = "outputs"  # runner: {rank: sha256 of the snapshot that rank sent}
LATE_UPLOAD_SECONDS = 300


class UploadRefused(BadRequest):
    """A 403: the upload token is forged, expired, or names a job that is gone."""

    status_code = 403


@dataclass(frozen=True)
class Received:
    """What one upload did: the rank's snapshot, the job's merged outputs, whether anything changed."""

    part: Snapshot
    outputs: Snapshot
    changed: bool


def outputs_receive(*, token: str, rank: int, body: BinaryIO, content_type: str, client: str) -> Received:
    """Store one rank's packed ./outputs and record the job's outputs (jobs.outputs.record_outputs)."""
    try:
        claim = delivery.upload_claim(token, client)
    except delivery.DeliveryRefused as exc:
        raise UploadRefused(str(exc), code="UploadRefused") from None
    job = Job.objects.select_related("workspace").filter(pk=claim.job_id, workspace_id=claim.workspace_id).first()
    if job is None or job.deleting:
        logger.warning("Refused an outputs upload for job %s: it is gone (from %s).", claim.job_id, client or "?")
        raise UploadRefused("The job this link names no longer exists.", code="UploadRefused")
    if job.end_time and job.end_time < timezone.now() - timedelta(seconds=LATE_UPLOAD_SECONDS):
        logger.warning("Refused an outputs upload for job %s: it ended at %s (from %s).", job.pk, job.end_time,
                       client or "?")
        raise UploadRefused("The job this link names has ended; its outputs were collected then.", code="UploadRefused")
    nodes = job.spec.get("resources", {}).get("instance_count", 1)
    if not 0 <= rank < nodes:
        raise BadRequest(f"rank is 0 to {nodes - 1} for this job.", code="InvalidRank", target="rank")
    part, _ = assets.upload_create(user=None, workspace=job.workspace, body=body, content_type=content_type)
    with transaction.atomic():
        job = Job.objects.select_for_update(of=("self",)).select_related("workspace").get(pk=job.pk)
        received = _merge(job, rank, part, nodes)
    logger.info("Outputs upload for job %s rank %d of workspace %s: snapshot %s (%d files), outputs %s (from %s).",
                job.pk, rank, job.workspace_id, part.sha256, part.file_count, received.outputs.sha256, client or "?")
    return received


def _merge(job: Job, rank: int, part: Snapshot, nodes: int) -> Received:
    parts = {**(job.runner.get(PARTS) or {})}
    changed = parts.get(str(rank)) != part.sha256
    parts[str(rank)] = part.sha256
    if nodes == 1:
        outputs, dropped = part, []
    else:
        by_sha = {snapshot.sha256: snapshot for snapshot in
                  Snapshot.objects.filter(workspace=job.workspace, sha256__in=set(parts.values()))}
        ranks = sorted(parts, key=int)
        outputs, dropped = assets.snapshot_merge(workspace=job.workspace, snapshots=[by_sha[parts[r]] for r in ranks])
        dropped = [(int(ranks[which]), path) for which, path in dropped]
    if changed or job.outputs_snapshot_id != outputs.pk:
        job.runner = {**job.runner, PARTS: parts}
        job.save(update_fields=["runner", "updated_at"])
        record_outputs(job, outputs)
        JobEvent.objects.create(job=job, time=timezone.now(), type="Normal", reason="OutputsCollected",
                                message=_said(rank, part, nodes, dropped))
    return Received(part, outputs, changed)


def _said(rank: int, part: Snapshot, nodes: int, dropped: list[tuple[int, str]]) -> str:
    who = f"Rank {rank}" if nodes > 1 else "The pod"
    words = f"{who} sent {part.file_count} files ({part.size} bytes) from ./outputs."
    if dropped:
        first_rank, first_path = dropped[0]
        words += (f" {len(dropped)} files of higher ranks were left out: a lower rank holds the same path (or the "
                  f"outputs' limits were reached), e.g. rank {first_rank}'s {first_path}.")
    return words
