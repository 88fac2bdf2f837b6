"""The benchmarks' starting state, and monkeypatches they apply for a measurement only."""
from contextlib import contextmanager

from django.contrib.auth import get_user_model

from controlplane.kube import client as kube
from workspaces.services import token_create, workspace_create

WORKSPACE = "bench"


def seed_workspace(local_compute: bool = False) -> tuple:
    """The bench user, its workspace `bench` (local compute on if asked, as staff would enable it) and an API token."""
    user = get_user_model().objects.create_user("bench", password="not-used-for-anything")
    workspace = workspace_create(user=user, name=WORKSPACE)
    if local_compute:
        workspace.local_compute_enabled = True
        workspace.save()
    return user, workspace, token_create(user=user, name="bench")[1]


@contextmanager
def patched(obj, name: str, value):
    original = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, original)


def set_kube_limit(qps: float, burst: int) -> None:
    """This process's client-side limit (fresh buckets: each measurement starts with a full burst, as a new cluster does)."""
    for pinned in kube._clients.values():  # each holds its ApiClient (bound to the checked address)
        pinned.api.close()
    kube._clients.clear()
    kube._buckets.clear()
    kube.QPS, kube.BURST = qps, burst


class Task:
    """What locked_run (and the batch runners) need of a bound Celery task; a transient cluster error ends the
    benchmark loudly instead of being retried."""

    class request:
        retries = 0

    @staticmethod
    def retry(countdown=None, exc=None, **kwargs):
        return RuntimeError(f"transient cluster error during the benchmark: {exc}")
