"""The number of SQL queries of a list is small and does not grow with the page size."""
import io

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from compute.choices import ComputeType
from compute.tests.factories import ComputeTargetFactory, as_checked, body
from workspaces.tests.factories import (
    ApiTokenFactory,
    AuditEventFactory,
    MembershipFactory,
    UserFactory,
    WorkspaceFactory,
)

WS = "/api/v1/workspaces/team-a"
TYPES = [ComputeType.AMLCOMPUTE, ComputeType.KUBERNETES, ComputeType.VIRTUALMACHINE, ComputeType.COMPUTEINSTANCE]


def add_workspaces(n, workspace, owner):
    for _ in range(n):
        MembershipFactory(workspace=WorkspaceFactory(created_by=owner), user=owner, role="owner")


def add_members(n, workspace, owner):
    MembershipFactory.create_batch(n, workspace=workspace, role="reader")


def add_events(n, workspace, owner):
    AuditEventFactory.create_batch(n, workspace=workspace, actor=owner)


def add_computes(n, workspace, owner):
    for index in range(n):
        ComputeTargetFactory(workspace=workspace, created_by=owner if index % 2 else UserFactory(), type=TYPES[index % len(TYPES)])


def add_instance_types(n, workspace, owner):
    from compute.models import ComputeTarget, InstanceType
    from compute.services import compute_create

    compute = ComputeTarget.objects.filter(name="k8s").first() or as_checked(compute_create(user=owner, workspace=workspace, data=body("kubernetes", name="k8s")))
    start = InstanceType.objects.filter(cluster=compute.cluster).count()
    for index in range(start, start + n):
        InstanceType.objects.create(cluster=compute.cluster, name=f"it-{index}", requests={"cpu": "1", "memory": "1Gi"},
                                    limits={"cpu": "2", "memory": "2Gi"})
    return compute


def add_nodes(n, workspace, owner):
    cluster = add_instance_types(3, workspace, owner).cluster
    start = len(cluster.nodes)
    cluster.nodes += [{"name": f"node-{i}", "labels": {}, "taints": [], "ready": True,
                       "allocatable": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": 0},
                       "capacity_units": {"millicores": 8000, "memory_bytes": 32 * 2**30}} for i in range(start, start + n)]
    cluster.save()


def add_jobs(n, workspace, owner):
    """Jobs on each kind of target (a compute, local, serverless) by different users."""
    from compute.models import ComputeTarget
    from compute.services import compute_create
    from jobs.models import Job

    compute = ComputeTarget.objects.filter(name="k8s").first() or as_checked(compute_create(user=owner, workspace=workspace, data=body("kubernetes", name="k8s")))
    start = Job.objects.count()
    for index in range(start, start + n):
        target = ("kubernetes", "local", "serverless")[index % 3]
        Job.objects.create(
            workspace=workspace, name=f"job-{index}", target=target, compute=compute if target == "kubernetes" else None,
            compute_name={"kubernetes": "k8s", "local": "local", "serverless": ""}[target],
            spec={"name": f"job-{index}", "command": "echo", "resources": {"instance_count": 1, "shm_size": "2g"}},
            created_by=owner if index % 2 else UserFactory(),
        )


def add_log_lines(n, workspace, owner):
    from jobs.models import Job
    from jobs.reconcile.status import append_lines

    job = Job.objects.filter(name="logged").first() or Job.objects.create(
        workspace=workspace, name="logged", target="local", compute_name="local", spec={"name": "logged", "command": "echo"})
    append_lines(job, [(f"rank-{index % 2}", f"line {index}") for index in range(n)])


def add_job_events(n, workspace, owner):
    from django.utils import timezone

    from jobs.models import Job, JobEvent

    job = Job.objects.filter(name="eventful").first() or Job.objects.create(
        workspace=workspace, name="eventful", target="local", compute_name="local", spec={"name": "eventful", "command": "echo"})
    JobEvent.objects.bulk_create([JobEvent(job=job, time=timezone.now(), reason="Pulled", message="image") for _ in range(n)])


def add_tokens(n, workspace, owner):
    ApiTokenFactory.create_batch(n, user=owner)


def add_online_endpoints(n, workspace, owner):
    """Endpoints (creators alternating) with two deployments each, so the list's deployment names are loaded too."""
    from endpoints.models import OnlineDeployment, OnlineEndpoint

    start = OnlineEndpoint.objects.count()
    for index in range(start, start + n):
        endpoint = OnlineEndpoint.objects.create(workspace=workspace, name=f"ep-{index}", compute_name="local",
                                                 created_by=owner if index % 2 else UserFactory())
        for name in ("blue", "green"):
            OnlineDeployment.objects.create(endpoint=endpoint, name=name, instance_type="defaultinstancetype", created_by=owner)


def add_online_deployments(n, workspace, owner):
    from endpoints.models import OnlineDeployment, OnlineEndpoint

    endpoint = OnlineEndpoint.objects.get_or_create(workspace=workspace, name="scorer", defaults={"compute_name": "local"})[0]
    start = endpoint.deployments.count()
    for index in range(start, start + n):
        OnlineDeployment.objects.create(endpoint=endpoint, name=f"d-{index}", instance_type="defaultinstancetype",
                                        spec={"endpoint_name": "scorer"}, created_by=owner if index % 2 else UserFactory())


def add_snapshots(n, workspace, owner):
    """Snapshots by alternating creators (the list shows who made each, not the files)."""
    from assets.models import Snapshot

    start = Snapshot.objects.count()
    Snapshot.objects.bulk_create([
        Snapshot(workspace=workspace, sha256=f"{index:064x}", files=[["a.py", "0" * 64, 0o644]], size=1, file_count=1,
                 created_by=owner if index % 2 else UserFactory()) for index in range(start, start + n)])


def add_assets(n, workspace, owner):
    """Environments, models and data by alternating creators, each a new name (the list shows the latest of each)."""
    from assets.models import Data, Environment, Model, Snapshot
    from assets.specs.versions import sort_key

    snapshot, _ = Snapshot.objects.get_or_create(workspace=workspace, sha256="f" * 64,
                                                 defaults={"files": [], "size": 0, "file_count": 0})
    for record_type, extra in ((Environment, {"image": "python:3.11"}), (Data, {"path": "https://example.org/d"}),
                               (Model, {"path": snapshot.path, "snapshot": snapshot})):
        start = record_type.objects.count()
        record_type.objects.bulk_create([
            record_type(workspace=workspace, name=f"asset-{index}", version="1", sort_key=sort_key("1"),
                        spec={"name": f"asset-{index}", "version": "1"}, created_by=owner if index % 2 else UserFactory(),
                        **extra) for index in range(start, start + n)])


# (its URL, how to add rows, the most queries it may take: token, [workspace, role,] count, page)
LISTS = [
    pytest.param("/api/v1/workspaces/", add_workspaces, 3, id="workspaces"),
    pytest.param(f"{WS}/members/", add_members, 5, id="members"),
    pytest.param(f"{WS}/events/", add_events, 5, id="events"),
    pytest.param(f"{WS}/computes/", add_computes, 5, id="computes"),
    pytest.param("/api/v1/tokens/", add_tokens, 3, id="tokens"),
    pytest.param(f"{WS}/computes/k8s/instancetypes/", add_instance_types, 5, id="instancetypes"),
    pytest.param(f"{WS}/computes/k8s/nodes/", add_nodes, 5, id="nodes"),
    pytest.param(f"{WS}/jobs/", add_jobs, 4, id="jobs"),
    pytest.param(f"{WS}/jobs/logged/logs/", add_log_lines, 4, id="job-logs"),
    pytest.param(f"{WS}/jobs/eventful/events/", add_job_events, 5, id="job-events"),
    pytest.param(f"{WS}/online-endpoints/", add_online_endpoints, 5, id="online-endpoints"),
    pytest.param(f"{WS}/online-endpoints/scorer/deployments/", add_online_deployments, 5, id="online-deployments"),
    pytest.param(f"{WS}/snapshots/", add_snapshots, 5, id="snapshots"),
    pytest.param(f"{WS}/environments/", add_assets, 5, id="environments"),
    pytest.param(f"{WS}/models/", add_assets, 5, id="models"),
    pytest.param(f"{WS}/data/", add_assets, 5, id="data"),
]


@pytest.mark.parametrize("url, add_rows, most", LISTS)
def test_list_takes_few_queries(url, add_rows, most, owner_api, owner, workspace, django_assert_max_num_queries):
    add_rows(20, workspace, owner)
    owner_api.get(url)  # the first use of a token records it; that write is not the list's
    with django_assert_max_num_queries(most):
        response = owner_api.get(url)
    assert response.status_code == 200
    assert response.json()["count"] >= 20


@pytest.mark.parametrize("url, add_rows, most", LISTS)
def test_queries_do_not_grow_with_the_page(url, add_rows, most, owner_api, owner, workspace):
    def queries_for_a_page() -> int:
        with CaptureQueriesContext(connection) as captured:
            response = owner_api.get(url, {"page_size": 100})
        assert response.status_code == 200
        return len(captured), len(response.json()["results"])

    add_rows(5, workspace, owner)
    owner_api.get(url)
    few, shown_few = queries_for_a_page()
    add_rows(55, workspace, owner)
    many, shown_many = queries_for_a_page()
    assert shown_many - shown_few == 55
    assert many == few, (few, many)


def test_a_pods_code_fetch_takes_one_query_however_many_files(client, owner, workspace, django_assert_num_queries):
    """The signed token is checked without the database; the snapshot's manifest is one row (its files are storage's)."""
    from assets import delivery, services
    from assets.tests.support import targz

    files = {f"pkg/module_{index}.py": f"VALUE = {index}\n".encode() for index in range(200)}
    snapshot, _ = services.upload_create(user=owner, workspace=workspace, body=io.BytesIO(targz(files)),
                                         content_type="application/gzip")
    path = "/api/v1/artifacts/fetch/" + delivery.fetch_token(snapshot) + "/"
    with django_assert_num_queries(1):
        response = client.get(path)
        body = b"".join(response.streaming_content)
    assert response.status_code == 200 and len(body) > 0


def test_a_pods_outputs_upload_takes_the_same_queries_however_many_files_or_ranks(client, owner, workspace):
    """The token is checked without the database; files are stored in bulk; a rank's merge reads its peers in one go."""
    from assets import delivery
    from assets.tests.support import targz
    from jobs.models import Job

    add_jobs(1, workspace, owner)
    job = Job.objects.get(name="job-0")
    Job.objects.filter(pk=job.pk).update(spec={**job.spec, "resources": {"instance_count": 8, "shm_size": "2g"}})
    path = "/api/v1/artifacts/outputs/" + delivery.upload_token(workspace.pk, job.pk) + "/{rank}/"

    def queries_for(rank: int, files: int) -> int:
        body = targz({f"r{rank}/f{index}.txt": f"{rank}-{index}".encode() for index in range(files)})
        with CaptureQueriesContext(connection) as captured:
            response = client.generic("POST", path.format(rank=rank), body, content_type="application/gzip")
        assert response.status_code == 201, response.content
        return len(captured)

    first, few, many, more_ranks = queries_for(0, 5), queries_for(1, 5), queries_for(2, 200), queries_for(7, 5)
    # (a merge reads the ranks' snapshots and their blob sizes in two queries, and saves the merged snapshot; storing
    # a rank's blobs takes the artifact store's shared lock, one query: assets/locks.py)
    assert few == many == more_ranks <= 22 and first <= 19, (first, few, many, more_ranks)
