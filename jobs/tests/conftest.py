"""Fixtures the jobs tests share: an attached Kubernetes compute `k8s` and a completed job `logged` with five lines."""
import pytest

from jobs.models import Job
from jobs.reconcile.status import append_lines
from jobs.tests.support import (  # noqa: F401 (k8s, tls_server: fixtures, defined there for tests outside jobs/)
    k8s,
    set_state,
    submit,
    tls_files,
    tls_server,
)


@pytest.fixture
def logged(owner_api, workspace) -> Job:
    """A completed job with five lines from two ranks."""
    submit(owner_api, name="logged")
    job = Job.objects.get(name="logged")
    append_lines(job, [("rank-0", "epoch 1"), ("rank-1", "epoch 1"), ("rank-0", "epoch 2"), ("", "saved"), ("rank-0", "done")])
    return set_state("logged", status="Completed", exit_code=0)
