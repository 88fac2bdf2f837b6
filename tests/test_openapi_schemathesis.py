"""Property-based tests over the served OpenAPI schema: no 5xx, and every response is what the schema says."""
import io
import itertools
import zlib
from pathlib import Path

import hypothesis
import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, transaction
from rest_framework.throttling import SimpleRateThrottle
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from compute.services import compute_create
from controlplane.wsgi import application
from workspaces.services import token_create

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
# Small and fixed, so a run is bounded (30–60 s on two busy cores) and reproducible.
CONFIG = {
    "seed": 20260601,
    "generation": {"max-examples": 25, "deterministic": True, "database": "none", "with-security-parameters": False},
    "phases": {"stateful": {"enabled": False}},
    # The coverage phase's boundary cases for nine compute types' bodies are ~1500 requests: fuzzing is enough there.
    "operations": [
        {
            "include-path": "/api/v1/workspaces/{workspace_name}/computes/",
            "include-method": "POST",
            "phases": {"coverage": {"enabled": False}},
        }
    ],
}
KUBECONFIG = """
apiVersion: v1
kind: Config
current-context: dev
clusters: [{name: dev, cluster: {server: "https://10.0.0.1:6443"}}]
users: [{name: dev, user: {token: t0ken}}]
contexts: [{name: dev, context: {cluster: dev, user: dev, namespace: ml}}]
"""
COMPUTES = [
    {"name": "k8s", "type": "kubernetes", "kubeconfig": KUBECONFIG, "namespace": "ml"},
    {"name": "cpu-cluster", "type": "amlcompute", "max_instances": 4},
    {"name": "notebook", "type": "computeinstance", "idle_time_before_shutdown_minutes": 30},
    {"name": "vm", "type": "virtualmachine", "address": "10.0.0.5", "admin_username": "azureuser", "admin_password": "pw"},
    {"name": "dbx", "type": "databricks", "workspace_url": "https://adb-1.azuredatabricks.net", "access_token": "dapi1"},
]
# Path parameters aimed at records that exist, so most cases get past the 404 and reach the real work.
EXISTING = {
    "workspace_name": ["team-a"],
    "name": ["k8s", "cpu-cluster", "notebook", "vm", "dbx", "local"],
    "compute_name": ["k8s", "k8s", "cpu-cluster"],  # instance types and nodes live on Kubernetes computes
    "username": ["olivia", "reader-user", "contributor-user"],
    "endpoint_name": ["adder"],  # online deployments live on endpoint adder
    "sha256": [],  # the artifacts' hashes, filled in below
    "version": ["1", "latest"],  # of the assets below
}
JOBS = "/api/v1/workspaces/{workspace_name}/jobs/{name}/"
ENDPOINT = "/api/v1/workspaces/{workspace_name}/online-endpoints/{name}/"
DEPLOYMENT = "/api/v1/workspaces/{workspace_name}/online-endpoints/{endpoint_name}/deployments/{name}/"
# Where `{name}` is not a compute's.
NAMES_BY_PATH = {
    "/api/v1/workspaces/{name}/": ["team-a"],
    "/api/v1/workspaces/{workspace_name}/computes/{compute_name}/instancetypes/{name}/": ["defaultinstancetype"],
    **{JOBS + action: ["done", "running"] for action in ("", "cancel/", "logs/", "events/", "outputs/")},
    **{ENDPOINT + action: ["adder"] for action in ("", "keys/", "keys/regenerate/", "score")},
    **{DEPLOYMENT + action: ["blue"] for action in ("", "logs/")},
    **{f"/api/v1/workspaces/{{workspace_name}}/{kind}/{{name}}/versions/{{version}}/": [name]
       for kind, name in (("environments", "env"), ("models", "model"), ("data", "iris"))},
}
ADDER = Path(__file__).resolve().parent.parent / "endpoints" / "tests" / "data" / "adder"
CASE_NUMBERS = itertools.count()


@pytest.fixture
def fast_passwords(settings):
    """Five users per operation with the real hasher would take most of the test's time."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def add_jobs(owner, workspace) -> None:
    """A job that has ended with a few log lines, and one still running (for cancel, and logs that follow it)."""
    from django.utils import timezone

    from jobs.models import Job
    from jobs.reconcile.status import append_lines
    from jobs.services import job_create

    done = job_create(user=owner, workspace=workspace, data={"name": "done", "command": "echo hi", "compute": "local"})
    append_lines(done, [("", "hi"), ("", "bye")])
    Job.objects.filter(pk=done.pk).update(status="Completed", exit_code=0, start_time=timezone.now(), end_time=timezone.now())
    running = job_create(user=owner, workspace=workspace, data={"name": "running", "command": "sleep 60", "compute": "local"})
    Job.objects.filter(pk=running.pk).update(status="Running", start_time=timezone.now())


def add_online_endpoint(owner, workspace) -> None:
    """A local endpoint `adder` with deployment `blue` (the endpoints tests' adder script), taking no traffic."""
    from endpoints.services import deployment_create, endpoint_create

    endpoint, _ = endpoint_create(user=owner, workspace=workspace, data={"name": "adder", "compute": "local"})
    deployment_create(user=owner, endpoint=endpoint, data={
        "name": "blue", "code_configuration": {"code": str(ADDER), "scoring_script": "score.py"}})


def add_artifacts(owner, workspace) -> None:
    """A blob and a snapshot (one .tar.gz upload), and a blob upload half done, for the sha256 paths to find."""
    from assets import services
    from assets.tests.support import sha, targz

    snapshot, _ = services.upload_create(user=owner, workspace=workspace, body=io.BytesIO(targz({"a.txt": b"hello"})),
                                         content_type="application/gzip")
    services.blob_upload_start(user=owner, workspace=workspace, sha256=sha(b"pending"), size=100)
    EXISTING["sha256"] = [sha(b"hello"), snapshot.sha256, sha(b"pending")]
    add_assets(owner, workspace, snapshot.path)


def add_assets(owner, workspace, path: str) -> None:
    """Version 1 of environment `env`, model `model` (the upload above) and data `iris` (an https URL)."""
    from assets import registry

    registry.environment_create(user=owner, workspace=workspace, data={"name": "env", "version": "1", "image": "python:3.11"})
    registry.model_create(user=owner, workspace=workspace, data={"name": "model", "version": "1", "path": path})
    registry.data_create(user=owner, workspace=workspace, data={"name": "iris", "version": "1",
                                                                "path": "https://example.org/iris.csv"})


@pytest.fixture(autouse=True)
def records(fast_passwords, db, monkeypatch, settings, users, workspace, local_compute):
    """A workspace full of computes, jobs and an online endpoint behind the API, which answers as often as it is asked."""
    for body in COMPUTES:
        compute_create(user=users["owner"], workspace=workspace, data=body)
    add_jobs(users["owner"], workspace)
    add_online_endpoint(users["owner"], workspace)
    add_artifacts(users["owner"], workspace)
    # `logs?follow=true` streams until the job ends: a running job's stream must end soon for the run to.
    settings.DOCKYARD_LOG_FOLLOW_SECONDS = 1
    # Thousands of requests from one user would otherwise meet the real rate limit.
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"anon": "100000/min", "user": "100000/min"})
    # Django's test client does this too: closing "old" connections would end the test's transaction.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def token(users):
    """The owner's token: its id is a real `{id}`, its value the bearer."""
    return token_create(user=users["owner"], name="schemathesis")


# uploads/ takes a .tar.gz or a .zip: generated bytes are sent as they are, like application/octet-stream's.
schemathesis.serializer.alias("application/gzip", "application/octet-stream")
schemathesis.serializer.alias("application/zip", "application/octet-stream")
# Loaded at collection from the served endpoint (no database needed to describe the API).
schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", application, config=schemathesis.Config.from_dict(CONFIG))


def aim_at_existing(case, existing: dict) -> None:
    """Point three in four path values at existing records; a stable hash keeps the choice reproducible."""
    for name, value in case.path_parameters.items():
        choices = NAMES_BY_PATH.get(case.path) if name == "name" and case.path in NAMES_BY_PATH else existing.get(name)
        digest = zlib.crc32(repr(value).encode())
        if choices and digest % 4:
            case.path_parameters[name] = choices[digest // 4 % len(choices)]


@schema.parametrize()
# The records fixture is per operation on purpose; each case rolls its own changes back instead.
@hypothesis.settings(suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])
def test_api_conforms_to_its_schema(case, token):
    record, raw = token
    aim_at_existing(case, {**EXISTING, "id": [record.pk]})
    # One case in ten goes without credentials, so the 401s are checked against the schema too.
    headers = {} if next(CASE_NUMBERS) % 10 == 0 else {"Authorization": f"Bearer {raw}"}
    # Each case starts from the same records: a DELETE must not hide the workspace from the cases after it.
    with transaction.atomic():
        response = case.call(headers=headers)
        transaction.set_rollback(True)
    case.validate_response(response, checks=CHECKS, headers=headers)
