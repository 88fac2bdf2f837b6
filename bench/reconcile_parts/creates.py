"""(c) POST → CR stored at RATE creates/s, through gunicorn and a Celery worker started as bin/run starts them."""
import json
import time
from collections import Counter
from contextlib import nullcontext
from pathlib import Path

import urllib3
from django.db import connection

from bench.reconcile_parts import CREATES, POSTERS, RATE, WARMUP_CREATES, WEB_WORKERS, WORKER_CONCURRENCY
from bench.reconcile_parts.cluster import new_fake, shape, stop_fake
from bench.support.open_loop import open_loop
from bench.support.processes import wait_for
from bench.support.seeding import WORKSPACE
from bench.support.services import Services
from compute.manifests import INSTANCE_TYPE_GROUP
from compute.models import ComputeTarget
from controlplane.reconciling import ProvisioningState
from tests.fake_kube import FakeKube


def stamp_instance_types(fake: FakeKube) -> dict[str, float]:
    """name → time.monotonic() when the fake stored the InstanceType (the moment it exists for any reader)."""
    stamps: dict[str, float] = {}
    write = fake.store.write

    def stamped(key, obj, event_type, old=None):
        result = write(key, obj, event_type, old)
        if key == (INSTANCE_TYPE_GROUP, "instancetypes") and event_type == "ADDED":
            stamps.setdefault(obj["metadata"]["name"], time.monotonic())
        return result

    fake.store.write = stamped
    return stamps


class Api:
    """JSON POSTs to the web server with a bearer token; thread-safe (urllib3 pool)."""

    def __init__(self, base: str, token: str):
        self.base, self.token = base, token
        self.http = urllib3.PoolManager(maxsize=POSTERS, retries=False, timeout=urllib3.Timeout(connect=5, read=30))

    def post(self, path: str, body: dict) -> tuple[int, bytes]:
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json", "Accept": "application/json"}
        response = self.http.request("POST", self.base + path, body=json.dumps(body).encode(), headers=headers)
        return response.status, response.data


def post_at_rate(api: Api, path: str, names: list[str]) -> tuple[dict, dict, float]:
    """Open loop: POST name i at start + i/RATE from a few client threads (one POST can take longer than 1/RATE).

    Returns when each POST was sent and answered (time.monotonic()) and how far sending fell behind the schedule.
    """
    def send(number: int, name: str) -> None:
        status, content = api.post(path, shape(number, name))
        assert status == 201, (name, status, content[:300])

    posted = open_loop(names, lambda: nullcontext(send), POSTERS, RATE, start_in=0.1, join_timeout=60)
    return posted["sent"], posted["answered"], posted["lag"]


def attach(api: Api, services: Services, fake: FakeKube) -> None:
    """The compute k8s-c on `fake`, created through the API and checked by the worker."""
    status, content = api.post(f"/api/v1/workspaces/{WORKSPACE}/computes/",
                               {"name": "k8s-c", "type": "kubernetes", "kubeconfig": fake.kubeconfig_yaml()})
    assert status == 201, content[:300]
    wait_for(lambda: not services.alive() or ComputeTarget.objects.filter(
        name="k8s-c", provisioning_state=ProvisioningState.SUCCEEDED).exists(), 90, "the worker to attach the cluster")
    connection.close()
    assert services.alive(), "a service exited"


def part_c(token: str, queue_name: str, log_path: Path) -> dict:
    """gunicorn and a Celery worker as bin/run starts them, this process as the cluster and as the clients."""
    fake = new_fake()
    stamps = stamp_instance_types(fake)
    services = Services(queue_name, log_path, ["--workers", str(WEB_WORKERS), "--threads", "4"], WORKER_CONCURRENCY)
    api = Api(services.base, token)
    try:
        services.wait_up()
        attach(api, services, fake)
        path = f"/api/v1/workspaces/{WORKSPACE}/computes/k8s-c/instancetypes/"
        warm = [f"warm-{number:04d}" for number in range(WARMUP_CREATES)]  # every web and worker process's first
        post_at_rate(api, path, warm)                                       # requests are slow (imports, clients)
        wait_for(lambda: all(name in stamps for name in warm), 60, "the warm-up CRs")

        names = [f"rate-{number:04d}" for number in range(CREATES)]
        posted, returned, lag = post_at_rate(api, path, names)
        wait_for(lambda: all(name in stamps for name in names) or not services.alive(), 60, "every CR")
        assert services.alive(), "a service exited"
    finally:
        services.stop()
        api.http.clear()
        stop_fake(fake)
    return summary(fake, stamps, names, posted, returned, lag)


def summary(fake: FakeKube, stamps: dict, names: list[str], posted: dict, returned: dict, lag: float) -> dict:
    """Per create: sent → its apply reached the fake → stored, and the POST's answer; the apply requests by status."""
    applies, statuses = {}, Counter()
    for record in fake.requests.find(verb="patch", resource="instancetypes"):
        statuses[record.status] += 1
        if record.status and 200 <= record.status < 300:
            applies.setdefault(record.name, record.monotonic)
    latencies = [stamps[name] - posted[name] for name in names]
    slowest = sorted(names, key=lambda name: stamps[name] - posted[name])[-3:]
    return {
        "latencies": latencies,
        "rate": (len(names) - 1) / (max(posted.values()) - min(posted.values())),
        "post": [returned[name] - posted[name] for name in names],
        "reached": [applies[name] - posted[name] for name in names],
        "served": [stamps[name] - applies[name] for name in names],
        "first": latencies[: len(names) // 4], "last": latencies[-len(names) // 4:], "lag": lag,
        "statuses": statuses,
        "slowest": [(name, stamps[name] - posted[name], returned[name] - posted[name], applies[name] - posted[name])
                    for name in slowest],
    }
