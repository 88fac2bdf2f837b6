"""The cluster side of a measurement: a fake per measurement, a compute attached to it, a watch on its Jobs."""
import json
import threading
import time
from contextlib import contextmanager

import urllib3

from bench.jobs_parts import NAMESPACE, RAISED_OFF, SHIPPED, WORK
from bench.support.fake_process import Fake
from bench.support.processes import wait_for
from bench.support.seeding import patched, set_kube_limit
from compute import reconcile as compute_reconcile
from compute import services as compute_services
from compute.models import ComputeTarget
from controlplane.celery import app
from controlplane.reconciling import ProvisioningState
from jobs.models import Job
from tests.fake_kube.server import ADMIN_TOKEN


def new_fake(args) -> Fake:
    """A fresh fake for one measurement, its controllers as --pods, --job-seconds and --fake-tick ask."""
    return Fake(WORK, args.pods, args.job_seconds, args.fake_tick)


class Watch(threading.Thread):
    """A watch on the namespace's batch/v1 Jobs: name → time.monotonic() when the ADDED event arrived here."""

    def __init__(self, fake: Fake):
        super().__init__(name="job-watch", daemon=True)
        self.fake, self.added, self.ready, self.done, self.error = fake, {}, threading.Event(), False, None
        self.http = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(connect=5, read=None))
        self.response = None
        self.start()
        assert self.ready.wait(10), f"the watch did not start: {self.error}"

    def run(self) -> None:
        version = ""
        try:
            while not self.done:
                query = "watch=true&allowWatchBookmarks=true&timeoutSeconds=900" + (f"&resourceVersion={version}" if version else "")
                self.response = self.http.request(
                    "GET", f"{self.fake.url}/apis/batch/v1/namespaces/{NAMESPACE}/jobs?{query}",
                    headers={"Authorization": f"Bearer {ADMIN_TOKEN}", "Accept": "application/json"}, preload_content=False)
                assert self.response.status == 200, self.response.status
                self.ready.set()
                pending = b""
                for chunk in self.response.stream(1 << 16):
                    now = time.monotonic()
                    pending += chunk
                    *lines, pending = pending.split(b"\n")
                    for line in lines:
                        if not line.strip():
                            continue
                        event = json.loads(line)
                        metadata = event["object"].get("metadata", {})
                        version = metadata.get("resourceVersion", version)
                        if event["type"] == "ADDED":  # (BOOKMARKs every second keep the stream going)
                            self.added.setdefault(metadata["name"], now)
        except Exception as exc:  # noqa: BLE001 - reported by whoever waits on it
            if not self.done:
                self.error = exc
                self.ready.set()

    def wait_all(self, names, timeout: float) -> float:
        names = list(names)
        wait_for(lambda: self.error or all(name in self.added for name in names), timeout,
                 f"{len(names)} Jobs (have {sum(name in self.added for name in names)})", 0.005)
        assert self.error is None, self.error
        return max(self.added[name] for name in names)

    def close(self) -> None:
        """Stop listening (the fake's stop then ends the stream; the thread is a daemon either way)."""
        self.done = True
        try:
            self.response.shutdown()
        except (AttributeError, RuntimeError, OSError):
            pass


def attach(user, workspace, fake: Fake, name: str) -> ComputeTarget:
    """A Kubernetes compute on `fake`, checked and synced in this process (as the worker would, once)."""
    with patched(compute_services, "_enqueue", lambda compute: None):
        compute = compute_services.compute_create(
            user=user, workspace=workspace, data={"name": name, "type": "kubernetes", "kubeconfig": fake.kubeconfig_yaml})
    compute_reconcile.reconcile_compute(compute)
    compute = ComputeTarget.objects.select_related("cluster").get(pk=compute.pk)
    assert compute.provisioning_state == ProvisioningState.SUCCEEDED, compute.provisioning_errors
    compute_reconcile.sync_cluster(compute.cluster)
    fake.attached()
    return compute


def retire(compute: ComputeTarget) -> None:
    """Remove a measurement's jobs from the database (its fake is going away): the compute's observation loop then
    stops, and the resync the worker runs when it starts finds nothing behind to re-enqueue."""
    Job.objects.filter(compute=compute).delete()


@contextmanager
def queued_jobs(ctx, compute_name: str, names: list[str]):
    """Jobs submitted through the API to a compute on a fresh fake, their reconciles purged (run by the caller, in
    this process, with the limit lifted): yields the compute and the jobs' ids; retired and the fake stopped after."""
    fake = new_fake(ctx.args)
    compute = attach(ctx.user, ctx.workspace, fake, compute_name)
    ctx.submitter.run(names, compute.name)
    app.control.purge()  # no worker runs: the reconciles are run by the caller, directly
    ids = list(Job.objects.filter(compute=compute).order_by("pk").values_list("pk", flat=True))
    set_kube_limit(*RAISED_OFF)
    try:
        yield compute, ids
    finally:
        set_kube_limit(*SHIPPED)
        retire(compute)
        fake.stop()
