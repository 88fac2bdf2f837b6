"""Command jobs over the API: submit (JSON, YAML), where they run, list and filters, show, edit, cancel, delete, logs."""
import json
import re

import pytest
import yaml

from compute.models import ComputeTarget
from compute.services import instance_types_create
from compute.tests.factories import as_checked, create_compute
from controlplane.reconciling import ProvisioningState
from jobs.models import Job, JobEvent
from jobs.reconcile.status import append_lines
from jobs.views import encode_cursor
from tests.support import assert_error
from workspaces.models import AuditEvent, Workspace
from workspaces.services import workspace_create

pytestmark = pytest.mark.usefixtures("local_compute")  # off by default: enabled as staff would

URL = "/api/v1/workspaces/team-a/jobs/"
IMAGE = "mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu20.04:latest"
SHAPE = {"name": "gpu-small", "resources": {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "4Gi"}}}
COMMON = {
    "name", "type", "display_name", "experiment_name", "description", "tags", "command", "resources", "compute",
    "status", "status_reason", "exit_code", "placement", "start_time", "end_time", "duration", "log_lines", "deleting",
    "created_by", "created_on", "updated_on",
}
GENERATED_NAME = re.compile(r"^[a-z]+_[a-z]+_[0-9a-f]{8}$")


def counts() -> tuple[int, int, int]:
    return Job.objects.count(), JobEvent.objects.count(), AuditEvent.objects.count()


def submit(api, **fields) -> dict:
    """A local job (fields replaced; None removes one), asserted created."""
    data = {key: value for key, value in {"command": "echo hi", "compute": "local", **fields}.items() if value is not None}
    response = api.post(URL, data, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def set_state(name: str, **fields) -> Job:
    Job.objects.filter(name=name).update(**fields)
    return Job.objects.get(name=name)


@pytest.fixture
def k8s(workspace, owner) -> ComputeTarget:
    """A kubernetes compute (with its Cluster) that has one instance type besides the default."""
    compute = as_checked(create_compute(workspace, owner, "kubernetes"))
    instance_types_create(user=owner, compute=compute, body=SHAPE)
    return compute


# create


def test_create_a_local_job_in_json(owner_api, workspace, django_capture_on_commit_callbacks):
    before = counts()
    with django_capture_on_commit_callbacks() as callbacks:
        response = owner_api.post(URL, {"name": "hello", "command": "echo hello ${{inputs.who}}", "compute": "local",
                                        "inputs": {"who": "world"}}, format="json")
    assert response.status_code == 201, response.json()
    job = response.json()
    assert set(job) == COMMON | {"inputs", "manifests"}
    assert {key: job[key] for key in ("name", "type", "display_name", "experiment_name", "description", "tags", "command")} == {
        "name": "hello", "type": "command", "display_name": "hello", "experiment_name": "Default", "description": "",
        "tags": {}, "command": "echo hello ${{inputs.who}}"}
    assert job["inputs"] == {"who": "world"}
    assert job["resources"] == {"instance_count": 1, "shm_size": "2g"}
    assert (job["compute"], job["placement"]) == ("local", {"target": "local", "compute": "local", "instance_type": None})
    assert (job["status"], job["status_reason"], job["exit_code"], job["log_lines"], job["deleting"]) == ("NotStarted", "", None, 0, False)
    assert (job["start_time"], job["end_time"], job["duration"], job["manifests"]) == (None, None, None, [])
    assert job["created_by"] == "olivia" and job["created_on"] and job["updated_on"]
    assert len(callbacks) == 1  # a reconcile is enqueued once the job is committed
    assert counts() == (before[0] + 1, before[1] + 1, before[2] + 1)
    stored = Job.objects.get(workspace=workspace, name="hello")
    assert (stored.target, stored.compute, stored.compute_name, stored.generation) == ("local", None, "local", 1)
    [event] = JobEvent.objects.filter(job=stored)
    assert (event.reason, event.type, event.message) == ("NotStarted", "Normal", "Submitted, on the worker's host (local).")
    audit = AuditEvent.objects.get(action="create", target_type="job")
    assert (audit.target_name, audit.actor_name, audit.workspace, audit.changes) == ("hello", "olivia", workspace, {"compute": [None, "local"]})


def test_create_in_yaml_as_azure_ml_writes_it(owner_api, workspace):
    text = (
        "$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json\n"
        "name: yaml-job\n"
        "display_name: From YAML\n"
        "experiment_name: basics\n"
        "description: A job written as a file.\n"
        "tags:\n  team: a\n  run: 3\n"
        "command: |\n  echo ${{inputs.greeting}}\n  echo done > ${{outputs.result}}/done.txt\n"
        "compute: local\n"
        "environment_variables:\n  MODE: test\n"
        "inputs:\n  greeting: hello\n"
        "outputs:\n  result:\n"
        "limits:\n  timeout: 600\n"
    )
    response = owner_api.post(URL, text, content_type="application/yaml")
    assert response.status_code == 201, response.json()
    job = response.json()
    assert (job["name"], job["display_name"], job["experiment_name"], job["description"]) == (
        "yaml-job", "From YAML", "basics", "A job written as a file.")
    assert job["tags"] == {"team": "a", "run": "3"}
    assert job["command"] == "echo ${{inputs.greeting}}\necho done > ${{outputs.result}}/done.txt\n"
    assert (job["environment_variables"], job["inputs"], job["outputs"], job["limits"]) == (
        {"MODE": "test"}, {"greeting": "hello"}, {"result": None}, {"timeout": 600})
    assert "$schema" not in job


def test_yaml_and_json_bodies_make_the_same_job(owner_api, workspace, tmp_path):
    (tmp_path / "venv").mkdir()
    (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")  # a local job's venv is checked when posted
    data = {"command": "python -V", "compute": "local", "experiment_name": "same", "tags": {"a": "b"},
            "environment": {"venv": str(tmp_path / "venv")}, "limits": {"timeout": 60}}
    json_answer = owner_api.post(URL, {**data, "name": "from-json"}, format="json")
    yaml_answer = owner_api.post(URL, yaml.safe_dump({**data, "name": "from-yaml"}), content_type="application/yaml")
    assert (json_answer.status_code, yaml_answer.status_code) == (201, 201), (json_answer.json(), yaml_answer.json())
    from_json, from_yaml = json_answer.json(), yaml_answer.json()
    ignore = {"name", "display_name", "created_on", "updated_on"}
    assert {k: v for k, v in from_yaml.items() if k not in ignore} == {k: v for k, v in from_json.items() if k not in ignore}


def test_a_job_without_a_name_gets_a_generated_one(owner_api, workspace):
    names = {submit(owner_api)["name"] for _ in range(3)}
    assert len(names) == 3
    assert all(GENERATED_NAME.match(name) for name in names), names
    job = Job.objects.get(name=sorted(names)[0])
    assert job.display_name == job.name


def test_a_generated_name_is_never_one_already_taken(owner_api, workspace, monkeypatch):
    from types import SimpleNamespace

    import jobs.services

    taken = submit(owner_api, name="amber_otter_00000000")["name"]
    suffixes = iter(["00000000", "00000000", "0000beef"])  # two draws of the taken name, then a free one
    monkeypatch.setattr(jobs.services, "secrets", SimpleNamespace(choice=lambda words: words[0], token_hex=lambda size: next(suffixes)))
    assert submit(owner_api)["name"] == "amber_otter_0000beef" != taken


def test_a_taken_name_is_a_conflict_and_changes_nothing(owner_api, workspace):
    submit(owner_api, name="train", command="echo first")
    before = counts()
    assert_error(owner_api.post(URL, {"name": "train", "command": "echo second", "compute": "local"}, format="json"), 409, "Conflict")
    assert counts() == before
    assert Job.objects.get(name="train").spec["command"] == "echo first"


def test_the_same_name_in_another_workspace_is_fine(owner_api, workspace, owner):
    other = workspace_create(user=owner, name="team-b")
    Workspace.objects.filter(pk=other.pk).update(local_compute_enabled=True)
    submit(owner_api, name="train")
    response = owner_api.post("/api/v1/workspaces/team-b/jobs/", {"name": "train", "command": "x", "compute": "local"}, format="json")
    assert response.status_code == 201, response.json()
    assert Job.objects.filter(name="train").count() == 2


@pytest.mark.parametrize("compute", ["azureml:k8s", "k8s"])
def test_a_job_on_a_kubernetes_compute_gets_the_default_instance_type(owner_api, k8s, compute):
    job = submit(owner_api, name="train", compute=compute, environment={"image": IMAGE})
    assert job["compute"] == "azureml:k8s"
    assert job["placement"] == {"target": "kubernetes", "compute": "k8s", "instance_type": "defaultinstancetype"}
    stored = Job.objects.get(name="train")
    assert (stored.target, stored.compute, stored.compute_name, stored.instance_type) == ("kubernetes", k8s, "k8s", "defaultinstancetype")
    assert JobEvent.objects.get(job=stored).message == "Submitted, to compute 'k8s' with instance type 'defaultinstancetype'."
    assert AuditEvent.objects.get(action="create", target_type="job").changes == {"compute": [None, "k8s"]}


def test_a_job_on_a_kubernetes_compute_with_a_named_instance_type(owner_api, k8s):
    job = submit(owner_api, name="train", compute="azureml:k8s", environment={"image": IMAGE},
                 resources={"instance_type": "gpu-small", "instance_count": 2}, distribution={"type": "pytorch"})
    assert job["placement"] == {"target": "kubernetes", "compute": "k8s", "instance_type": "gpu-small"}
    assert job["resources"] == {"instance_type": "gpu-small", "instance_count": 2, "shm_size": "2g"}
    assert job["distribution"] == {"type": "pytorch", "process_count_per_instance": 1}


def test_a_job_without_compute_runs_serverless(owner_api, workspace):
    job = submit(owner_api, name="anywhere", compute=None, environment={"image": IMAGE})
    assert job["compute"] is None
    assert job["placement"] == {"target": "serverless", "compute": None, "instance_type": None}
    stored = Job.objects.get(name="anywhere")
    assert (stored.target, stored.compute, stored.compute_name) == ("serverless", None, "")
    assert JobEvent.objects.get(job=stored).message == "Submitted, serverless: Dockyard picks the compute."
    assert AuditEvent.objects.get(action="create", target_type="job").changes == {"compute": [None, "serverless"]}


def test_a_contributor_submits_and_is_the_creator(api_as, users, workspace):
    job = submit(api_as("contributor"), name="mine")
    assert job["created_by"] == "contributor-user"


# bad input: 400 naming the field, and nothing is written


@pytest.fixture
def computes(workspace, owner, k8s):
    for compute_type in ("databricks", "amlcompute", "virtualmachine", "computeinstance", "hdinsight"):
        create_compute(workspace, owner, compute_type)
    going = create_compute(workspace, owner, "amlcompute", name="going-away")
    ComputeTarget.objects.filter(pk=going.pk).update(provisioning_state=ProvisioningState.DELETING)
    bob_ws = workspace_create(user=owner, name="team-b")
    create_compute(bob_ws, owner, "kubernetes", name="theirs")


def bad(label: str, target: str, code: str = "InvalidJob", settings: dict | None = None, **fields):
    """A body: a valid local job with fields replaced (None removes one)."""
    data = {key: value for key, value in {"command": "echo hi", "compute": "local", **fields}.items() if value is not None}
    return pytest.param(data, code, target, settings or {}, id=label)


K8S = {"compute": "azureml:k8s", "environment": {"image": IMAGE}}
SERVERLESS = {"compute": None, "environment": {"image": IMAGE}}

BAD_BODIES = [
    # where it runs
    bad("unknown-compute", "compute", compute="azureml:nope"),
    bad("unknown-compute-bare-name", "compute", compute="nope"),
    bad("compute-of-another-workspace", "compute", **{**K8S, "compute": "azureml:theirs"}),
    bad("compute-being-deleted", "compute", **{**K8S, "compute": "going-away"}),
    bad("databricks-cannot-run-command-jobs", "compute", **{**K8S, "compute": "azureml:dbx"}),
    bad("hdinsight-cannot-run-command-jobs", "compute", **{**K8S, "compute": "hdi"}),
    bad("amlcompute-has-no-backend", "compute", **{**K8S, "compute": "azureml:cpu-cluster"}),
    bad("virtualmachine-has-no-backend", "compute", **{**K8S, "compute": "vm"}),
    bad("computeinstance-has-no-backend", "compute", **{**K8S, "compute": "notebook"}),
    bad("compute-not-a-reference", "compute", compute="azureml:k8s:2"),
    bad("local-turned-off", "compute", settings={"DOCKYARD_LOCAL_COMPUTE": False}),
    bad("unknown-instance-type-on-kubernetes", "resources.instance_type", **K8S, resources={"instance_type": "huge"}),
    # local
    bad("local-instance-count-above-1", "resources.instance_count", resources={"instance_count": 2}),
    bad("local-distribution", "distribution", distribution={"type": "pytorch"}),
    bad("local-image", "environment.image", environment={"image": IMAGE}),
    bad("local-instance-type", "resources.instance_type", resources={"instance_type": "gpu-small"}),
    bad("local-shm-size", "resources.shm_size", resources={"shm_size": "8g"}),
    # container jobs
    bad("kubernetes-without-image", "environment.image", compute="azureml:k8s"),
    bad("kubernetes-venv-only", "environment.image", compute="azureml:k8s", environment={"venv": "/opt/venv"}),
    bad("kubernetes-venv", "environment.venv", **{**K8S, "environment": {"image": IMAGE, "venv": "/opt/venv"}}),
    bad("serverless-without-image", "environment.image", compute=None),
    bad("kubernetes-outputs", "outputs", **K8S, outputs={"model": {"type": "uri_folder"}}),
    bad("tensorflow-parameter-servers", "distribution.parameter_server_count", **K8S, resources={"instance_count": 2},
        distribution={"type": "tensorflow", "worker_count": 2, "parameter_server_count": 1}),
    bad("tensorflow-workers-not-one-per-pod", "distribution.worker_count", **SERVERLESS, resources={"instance_count": 2},
        distribution={"type": "tensorflow", "worker_count": 4}),
    # the spec
    bad("missing-command", "command", command=None),
    bad("empty-command", "command", command="  "),
    bad("bad-name", "name", name="-nope"),
    bad("bad-shm-size", "resources.shm_size", resources={"shm_size": "2gb"}),
    bad("zero-instances", "resources.instance_count", **K8S, resources={"instance_count": 0}),
    bad("negative-timeout", "limits.timeout", limits={"timeout": -1}),
    bad("zero-timeout", "limits.timeout", limits={"timeout": 0}),
    bad("boolean-timeout", "limits.timeout", limits={"timeout": True}),
    bad("unknown-top-level-field", "colour", colour="blue"),
    bad("unknown-resources-field", "resources.gpus", resources={"gpus": 1}),
    bad("unknown-input-reference", "command", command="echo ${{inputs.missing}}", inputs={"present": 1}),
    bad("unknown-output-reference", "command", command="echo hi > ${{outputs.result}}/x"),
    bad("registered-environment", "environment", **{**K8S, "environment": "azureml:AzureML-sklearn-1.0:1"}),
    bad("ray-distribution", "distribution.type", **K8S, distribution={"type": "ray"}),
    bad("not-a-command-job", "type", type="sweep"),
    bad("bad-environment-variable-name", "environment_variables.MY-VAR", environment_variables={"MY-VAR": "1"}),
]


@pytest.mark.parametrize("data, code, target, overrides", BAD_BODIES)
def test_bad_bodies_are_refused_and_nothing_is_created(data, code, target, overrides, owner_api, computes, settings,
                                                       django_capture_on_commit_callbacks):
    for key, value in overrides.items():
        setattr(settings, key, value)
    before = counts()
    with django_capture_on_commit_callbacks() as callbacks:
        response = owner_api.post(URL, data, format="json")
    error = assert_error(response, 400, code, target)
    assert error["message"].startswith(f"{target}: ") or not target
    assert counts() == before
    assert not callbacks


@pytest.mark.parametrize("where, folder, reason", [
    ({}, "src", "absolute path"),
    ({}, "/etc", "DOCKYARD_LOCAL_PATHS"),
    ({}, "/nonexistent/src", "does not exist"),
    (K8S, "/srv/code/src", "not shipped to Kubernetes"),
    (SERVERLESS, "/srv/code/src", "not shipped to Kubernetes"),
])
def test_code_is_refused_where_it_cannot_be_honoured(where, folder, reason, owner_api, computes, settings):
    """Local jobs take a folder the server shares (copied in before the command starts); others cannot receive it yet."""
    settings.DOCKYARD_LOCAL_PATHS = ["/nonexistent"]
    before = counts()
    data = {"command": "sh run.sh", "compute": "local", **where, "code": folder}
    error = assert_error(owner_api.post(URL, {key: value for key, value in data.items() if value is not None}, format="json"),
                         400, "InvalidJob", "code")
    assert reason in error["message"] and counts() == before


@pytest.mark.parametrize(
    "text, content_type",
    [
        ('["command", "echo hi"]', "application/json"),
        ('"echo hi"', "application/json"),
        ("42", "application/json"),
        ("null", "application/json"),
    ],
)
def test_a_json_body_that_is_not_a_mapping(text, content_type, owner_api, workspace):
    before = counts()
    assert_error(owner_api.post(URL, text, content_type=content_type), 400, "InvalidJob", "")
    assert counts() == before


@pytest.mark.parametrize(
    "text",
    [
        "command: echo hi\ncompute: [local\n",  # does not parse
        "command: 'unterminated\n",
        "\tcommand: echo\n",
        "- command: echo hi\n",  # parses, but a list
        "just a sentence\n",
    ],
)
def test_yaml_that_is_not_a_job_mapping(text, owner_api, workspace):
    before = counts()
    assert_error(owner_api.post(URL, text, content_type="application/yaml"), 400, "ValidationError", "")
    assert counts() == before


def test_every_problem_is_reported_at_once(owner_api, workspace):
    response = owner_api.post(URL, {"name": "-x", "compute": "local", "limits": {"timeout": 0}, "colour": 1}, format="json")
    error = assert_error(response, 400, "InvalidJob")
    assert sorted(detail["target"] for detail in error["details"]) == ["colour", "command", "limits.timeout", "name"]


def test_yaml_dates_in_fields_kept_as_given_are_stored_as_their_text(owner_api, workspace):
    # YAML reads an unquoted 2024-05-01 as a date; the stored spec is JSON.
    text = "command: echo hi\ncompute: local\nproperties:\n  since: 2024-05-01\n  at: 2024-05-01T10:30:00Z\n"
    response = owner_api.post(URL, text, content_type="application/yaml")
    assert response.status_code == 201, response.content
    assert response.json()["properties"] == {"since": "2024-05-01", "at": "2024-05-01T10:30:00+00:00"}


@pytest.mark.parametrize("text, target", [
    ("command: echo ${{inputs.lr}}\ncompute: local\ninputs:\n  lr: .nan\n", "inputs.lr"),
    ("command: echo hi\ncompute: local\nproperties:\n  weight: -.inf\n", "properties.weight"),
    ("command: echo hi\ncompute: local\nproperties:\n  blob: !!binary aGVsbG8=\n", "properties.blob"),
    ("command: echo hi\ncompute: local\nqueue_settings: !!set {spot: null}\n", "queue_settings"),
])
def test_yaml_values_json_cannot_store_are_refused(text, target, owner_api, workspace):
    before = counts()
    assert_error(owner_api.post(URL, text, content_type="application/yaml"), 400, "InvalidJob", target)
    assert counts() == before


# list


def test_list_is_newest_first_in_a_cursor_envelope(owner_api, workspace):
    names = [submit(owner_api, name=f"job-{index}")["name"] for index in range(5)]
    response = owner_api.get(URL, {"page_size": 2})
    assert response.status_code == 200
    first = response.json()
    assert set(first) == {"count", "next", "previous", "results"}
    assert (first["count"], first["previous"]) == (5, None)
    assert [row["name"] for row in first["results"]] == ["job-4", "job-3"]
    assert "cursor=" in first["next"]
    second = owner_api.get(first["next"]).json()
    assert [row["name"] for row in second["results"]] == ["job-2", "job-1"]
    assert second["previous"] and second["count"] == 5
    third = owner_api.get(second["next"]).json()
    assert [row["name"] for row in third["results"]] == ["job-0"] and third["next"] is None
    assert sorted(names) == sorted(row["name"] for page in (first, second, third) for row in page["results"])


def test_a_new_job_does_not_shift_the_pages_already_handed_out(owner_api, workspace):
    for index in range(4):
        submit(owner_api, name=f"job-{index}")
    first = owner_api.get(URL, {"page_size": 2}).json()
    submit(owner_api, name="job-new")
    second = owner_api.get(first["next"]).json()
    assert [row["name"] for row in second["results"]] == ["job-1", "job-0"]


def test_list_rows_are_the_single_job_without_its_manifests(owner_api, workspace, k8s):
    submit(owner_api, name="local-one")
    submit(owner_api, name="k8s-one", compute="azureml:k8s", environment={"image": IMAGE})
    rows = {row["name"]: row for row in owner_api.get(URL).json()["results"]}
    for name in ("local-one", "k8s-one"):
        single = owner_api.get(f"{URL}{name}/").json()
        assert "manifests" in single and "manifests" not in rows[name]
        assert rows[name] == {key: value for key, value in single.items() if key != "manifests"}


def test_list_shows_only_this_workspaces_jobs(owner_api, workspace, owner):
    workspace_create(user=owner, name="team-b")
    owner_api.post("/api/v1/workspaces/team-b/jobs/", {"name": "elsewhere", "command": "x", "compute": "local"}, format="json")
    submit(owner_api, name="here")
    assert [row["name"] for row in owner_api.get(URL).json()["results"]] == ["here"]


@pytest.fixture
def fleet(owner_api, k8s):
    """Jobs on every kind of target in several states and experiments."""
    submit(owner_api, name="local-done", experiment_name="cifar")
    submit(owner_api, name="local-failed")
    submit(owner_api, name="k8s-running", compute="azureml:k8s", environment={"image": IMAGE}, experiment_name="cifar")
    submit(owner_api, name="k8s-queued", compute="k8s", environment={"image": IMAGE})
    submit(owner_api, name="serverless-new", compute=None, environment={"image": IMAGE}, experiment_name="mnist")
    set_state("local-done", status="Completed")
    set_state("local-failed", status="Failed")
    set_state("k8s-running", status="Running")
    set_state("k8s-queued", status="Queued")


@pytest.mark.parametrize(
    "query, names",
    [
        ({}, ["serverless-new", "k8s-queued", "k8s-running", "local-failed", "local-done"]),
        ({"status": "Running"}, ["k8s-running"]),
        ({"status": "Completed,Failed"}, ["local-failed", "local-done"]),
        ({"status": " Queued , Running "}, ["k8s-queued", "k8s-running"]),
        ({"status": "NotStarted"}, ["serverless-new"]),
        ({"status": "Canceled"}, []),
        ({"compute": "k8s"}, ["k8s-queued", "k8s-running"]),
        ({"compute": "azureml:k8s"}, ["k8s-queued", "k8s-running"]),
        ({"compute": "local"}, ["local-failed", "local-done"]),
        ({"compute": "serverless"}, ["serverless-new"]),
        ({"compute": "nope"}, []),
        ({"experiment_name": "cifar"}, ["k8s-running", "local-done"]),
        ({"experiment_name": "Default"}, ["k8s-queued", "local-failed"]),
        ({"experiment_name": "cifar", "compute": "local"}, ["local-done"]),
        ({"status": "Running,Completed", "experiment_name": "cifar", "compute": "k8s"}, ["k8s-running"]),
    ],
)
def test_filters(owner_api, fleet, query, names):
    response = owner_api.get(URL, query)
    assert response.status_code == 200
    assert [row["name"] for row in response.json()["results"]] == names
    assert response.json()["count"] == len(names)


# show


def test_show_has_an_etag_and_the_manifests(owner_api, workspace):
    submit(owner_api, name="shown")
    manifests = [{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "shown-x"}}]
    set_state("shown", manifests=manifests)
    first, again = owner_api.get(f"{URL}shown/"), owner_api.get(f"{URL}shown")
    assert first.status_code == again.status_code == 200
    assert first["ETag"] and first["ETag"] == again["ETag"]
    assert first.json()["manifests"] == manifests
    set_state("shown", status="Running")
    assert owner_api.get(f"{URL}shown/")["ETag"] != first["ETag"]


def test_show_reports_times_and_duration(owner_api, workspace):
    from datetime import UTC, datetime

    submit(owner_api, name="timed")
    set_state("timed", status="Completed", exit_code=0, start_time=datetime(2026, 1, 1, 12, 0, tzinfo=UTC),
              end_time=datetime(2026, 1, 1, 12, 1, 30, tzinfo=UTC))
    job = owner_api.get(f"{URL}timed/").json()
    assert (job["status"], job["exit_code"], job["duration"]) == ("Completed", 0, 90.0)
    assert job["start_time"].startswith("2026-01-01T12:00:00") and job["end_time"].startswith("2026-01-01T12:01:30")


@pytest.mark.parametrize("method, suffix", [
    ("get", ""), ("patch", ""), ("delete", ""), ("post", "cancel/"), ("get", "logs/"), ("get", "events/"),
])
def test_an_unknown_job_is_404(method, suffix, owner_api, workspace):
    assert_error(getattr(owner_api, method)(f"{URL}nope/{suffix}", {}, format="json"), 404, "NotFound")


# edit: display fields only


def test_patch_changes_display_fields_and_records_them(owner_api, workspace):
    submit(owner_api, name="edit-me", tags={"a": "1"})
    response = owner_api.patch(f"{URL}edit-me/", {"display_name": "Nicer", "description": "why", "tags": {"b": 2}}, format="json")
    assert response.status_code == 200, response.json()
    job = response.json()
    assert (job["display_name"], job["description"], job["tags"]) == ("Nicer", "why", {"b": "2"})
    assert response["ETag"] == owner_api.get(f"{URL}edit-me/")["ETag"]
    stored = Job.objects.get(name="edit-me")
    assert (stored.display_name, stored.description, stored.tags) == ("Nicer", "why", {"b": "2"})
    assert (stored.spec["display_name"], stored.spec["tags"]) == ("Nicer", {"b": "2"})
    assert stored.generation == 1  # nothing for reconcile to do
    event = AuditEvent.objects.get(action="update", target_type="job")
    assert event.changes == {"display_name": ["edit-me", "Nicer"], "description": ["", "why"], "tags": [{"a": "1"}, {"b": "2"}]}


def test_patch_tags_follow_the_submit_rules(owner_api, workspace):
    submit(owner_api, name="edit-me")
    response = owner_api.patch(f"{URL}edit-me/", {"tags": {"n": 1, "ok": True, "lr": 0.5}}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["tags"] == {"n": "1", "ok": "true", "lr": "0.5"}
    assert owner_api.patch(f"{URL}edit-me/", {"tags": {}}, format="json").json()["tags"] == {}


def test_patch_in_yaml(owner_api, workspace):
    submit(owner_api, name="edit-me")
    response = owner_api.patch(f"{URL}edit-me/", "display_name: From YAML\ntags:\n  cost: low\n", content_type="application/yaml")
    assert response.status_code == 200, response.json()
    assert (response.json()["display_name"], response.json()["tags"]) == ("From YAML", {"cost": "low"})


def test_patch_that_changes_nothing_records_nothing(owner_api, workspace):
    submit(owner_api, name="same", display_name="Same")
    before = counts()
    response = owner_api.patch(f"{URL}same/", {"display_name": "Same", "name": "same", "command": "echo hi"}, format="json")
    assert response.status_code == 200, response.json()
    assert counts() == before


@pytest.mark.parametrize(
    "patch, target",
    [
        ({"command": "rm -rf /"}, "command"),
        ({"name": "renamed"}, "name"),
        ({"compute": "azureml:k8s"}, "compute"),
        ({"environment": {"image": IMAGE}}, "environment"),
        ({"resources": {"instance_count": 2}}, "resources"),
        ({"limits": {"timeout": 5}}, "limits"),
        ({"experiment_name": "moved"}, "experiment_name"),
        ({"status": "Completed"}, "status"),
        ({"exit_code": 0}, "exit_code"),
        ({"display_name": "fine", "command": "sneaky"}, "command"),
        ({"tags": ["a"]}, "tags"),
        ({"tags": "a=b"}, "tags"),
        ({"display_name": 5}, "display_name"),
        ({"display_name": None}, "display_name"),
        ({"description": ["x"]}, "description"),
        ({"display_name": "x" * 256}, "display_name"),
        ({"tags": {"a": {"nested": 1}}}, "tags.a"),
    ],
)
def test_patch_refuses_everything_but_display_fields(patch, target, owner_api, workspace):
    submit(owner_api, name="fixed", display_name="Fixed", command="echo hi")
    before, stored = counts(), Job.objects.get(name="fixed")
    assert_error(owner_api.patch(f"{URL}fixed/", patch, format="json"), 400, "InvalidJob", target)
    assert counts() == before
    after = Job.objects.get(name="fixed")
    assert (after.display_name, after.tags, after.spec, after.status) == (stored.display_name, stored.tags, stored.spec, stored.status)


def test_patch_with_a_stale_if_match_is_refused(owner_api, workspace):
    submit(owner_api, name="raced")
    stale = owner_api.get(f"{URL}raced/")["ETag"]
    owner_api.patch(f"{URL}raced/", {"description": "someone else"}, format="json")
    before = counts()
    response = owner_api.patch(f"{URL}raced/", {"display_name": "mine"}, format="json", HTTP_IF_MATCH=stale)
    assert_error(response, 412, "PreconditionFailed")
    assert counts() == before and Job.objects.get(name="raced").display_name == "raced"
    current = owner_api.get(f"{URL}raced/")["ETag"]
    assert owner_api.patch(f"{URL}raced/", {"display_name": "mine"}, format="json", HTTP_IF_MATCH=current).status_code == 200


# cancel


@pytest.mark.parametrize("status", ["NotStarted", "Queued", "Starting", "Running"])
def test_cancel_asks_reconcile_to_stop_the_job(status, owner_api, workspace, django_capture_on_commit_callbacks):
    submit(owner_api, name="stop-me")
    set_state("stop-me", status=status)
    with django_capture_on_commit_callbacks() as callbacks:
        response = owner_api.post(f"{URL}stop-me/cancel/")
    assert response.status_code == 202, response.json()
    assert (response.json()["status"], response.json()["status_reason"]) == ("CancelRequested", "Cancel requested by olivia.")
    job = Job.objects.get(name="stop-me")
    assert (job.status, job.generation) == ("CancelRequested", 2)
    assert len(callbacks) == 1
    assert list(JobEvent.objects.filter(job=job).values_list("reason", flat=True)) == ["NotStarted", "CancelRequested"]
    event = AuditEvent.objects.get(action="action", target_type="job")
    assert (event.verb, event.target_name, event.actor_name) == ("cancel", "stop-me", "olivia")


def test_cancel_without_the_trailing_slash(owner_api, workspace):
    submit(owner_api, name="stop-me")
    assert owner_api.post(f"{URL}stop-me/cancel").status_code == 202


def test_cancel_twice_is_idempotent(owner_api, workspace):
    submit(owner_api, name="stop-me")
    assert owner_api.post(f"{URL}stop-me/cancel/").status_code == 202
    before = counts()
    again = owner_api.post(f"{URL}stop-me/cancel/")
    assert again.status_code == 202 and again.json()["status"] == "CancelRequested"
    assert counts() == before
    assert Job.objects.get(name="stop-me").generation == 2


@pytest.mark.parametrize("status", ["Completed", "Failed", "Canceled"])
def test_cancel_of_an_ended_job_is_refused(status, owner_api, workspace):
    submit(owner_api, name="over")
    set_state("over", status=status)
    before = counts()
    error = assert_error(owner_api.post(f"{URL}over/cancel/"), 400, "JobNotCancelable", "status")
    assert status in error["message"]
    assert counts() == before and Job.objects.get(name="over").status == status


# delete


def test_delete_marks_the_job_and_hides_it_from_the_list(owner_api, workspace, django_capture_on_commit_callbacks):
    submit(owner_api, name="bye")
    submit(owner_api, name="stays")
    with django_capture_on_commit_callbacks() as callbacks:
        response = owner_api.delete(f"{URL}bye/")
    assert response.status_code == 202
    assert (response.json()["name"], response.json()["deleting"]) == ("bye", True)
    assert len(callbacks) == 1
    job = Job.objects.get(name="bye")
    assert (job.deleting, job.generation) == (True, 2)
    listed = owner_api.get(URL).json()
    assert [row["name"] for row in listed["results"]] == ["stays"] and listed["count"] == 1
    event = AuditEvent.objects.get(action="delete", target_type="job")
    assert (event.target_name, event.actor_name) == ("bye", "olivia")


def test_delete_twice_records_one_delete(owner_api, workspace):
    submit(owner_api, name="bye")
    assert owner_api.delete(f"{URL}bye/").status_code == 202
    assert owner_api.delete(f"{URL}bye/").status_code == 202
    assert AuditEvent.objects.filter(action="delete", target_type="job").count() == 1
    assert Job.objects.get(name="bye").generation == 2


def test_delete_with_a_stale_if_match_is_refused(owner_api, workspace):
    submit(owner_api, name="raced")
    stale = owner_api.get(f"{URL}raced/")["ETag"]
    set_state("raced", status="Running")
    assert_error(owner_api.delete(f"{URL}raced/", HTTP_IF_MATCH=stale), 412, "PreconditionFailed")
    assert Job.objects.get(name="raced").deleting is False


# logs


@pytest.fixture
def logged(owner_api, workspace) -> Job:
    """A completed job with five lines from two ranks."""
    submit(owner_api, name="logged")
    job = Job.objects.get(name="logged")
    append_lines(job, [("rank-0", "epoch 1"), ("rank-1", "epoch 1"), ("rank-0", "epoch 2"), ("", "saved"), ("rank-0", "done")])
    return set_state("logged", status="Completed", exit_code=0)


def lines_of(page: dict) -> list[tuple[int, str, str]]:
    return [(line["seq"], line["source"], line["text"]) for line in page["results"]]


def test_logs_first_page(owner_api, logged):
    response = owner_api.get(f"{URL}logged/logs/")
    assert response.status_code == 200
    page = response.json()
    assert set(page) == {"count", "next", "previous", "status", "complete", "results"}
    assert lines_of(page) == [(0, "rank-0", "epoch 1"), (1, "rank-1", "epoch 1"), (2, "rank-0", "epoch 2"), (3, "", "saved"),
                              (4, "rank-0", "done")]
    assert (page["count"], page["status"], page["complete"], page["next"], page["previous"]) == (5, "Completed", True, None, None)
    assert all(line["time"] for line in page["results"])


def test_logs_pages_follow_the_cursor(owner_api, logged):
    first = owner_api.get(f"{URL}logged/logs/", {"limit": 2}).json()
    assert [seq for seq, _, _ in lines_of(first)] == [0, 1] and first["complete"] is False and first["previous"] is None
    second = owner_api.get(first["next"]).json()
    assert [seq for seq, _, _ in lines_of(second)] == [2, 3] and second["previous"]
    third = owner_api.get(second["next"]).json()
    assert [seq for seq, _, _ in lines_of(third)] == [4]
    assert (third["next"], third["complete"]) == (None, True)
    back = owner_api.get(third["previous"]).json()
    assert [seq for seq, _, _ in lines_of(back)] == [2, 3]


def test_logs_of_a_running_job_always_point_past_the_last_line(owner_api, logged):
    set_state("logged", status="Running")
    page = owner_api.get(f"{URL}logged/logs/").json()
    assert (page["complete"], page["status"]) == (False, "Running")
    assert f"cursor={encode_cursor(5)}" in page["next"]
    assert owner_api.get(page["next"]).json()["results"] == []
    job = Job.objects.get(name="logged")
    append_lines(job, [("rank-0", "epoch 3")])
    assert lines_of(owner_api.get(page["next"]).json()) == [(5, "rank-0", "epoch 3")]


def test_logs_of_a_job_without_output(owner_api, workspace):
    submit(owner_api, name="quiet")
    set_state("quiet", status="Completed")
    page = owner_api.get(f"{URL}quiet/logs").json()
    assert (page["results"], page["count"], page["complete"], page["next"]) == ([], 0, True, None)


@pytest.mark.parametrize("cursor", ["garbage", "!!!", encode_cursor(3).upper(), "cGFnZTox", "bGluZTotMQ", "bGluZTo"])
def test_logs_bad_cursor(cursor, owner_api, logged):
    assert_error(owner_api.get(f"{URL}logged/logs/", {"cursor": cursor}), 400, "InvalidCursor", "cursor")


@pytest.mark.parametrize("limit", ["0", "-1", "abc", "1.5", "5001", "99999999999999999999"])
def test_logs_bad_limit(limit, owner_api, logged):
    assert_error(owner_api.get(f"{URL}logged/logs/", {"limit": limit}), 400, "InvalidLimit", "limit")


def test_logs_download_is_the_whole_text(owner_api, logged):
    response = owner_api.get(f"{URL}logged/logs/", {"download": "true"})
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="logged.log"'
    assert response.content.decode() == "[rank-0] epoch 1\n[rank-1] epoch 1\n[rank-0] epoch 2\nsaved\n[rank-0] done\n"


def sse(response) -> list[dict]:
    """The events of a text/event-stream response: [{event, data (parsed), id?}]."""
    assert response.status_code == 200
    assert response["Content-Type"] == "text/event-stream"
    text = b"".join(response.streaming_content).decode()
    events = []
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if line and not line.startswith(":"))
        if fields:
            events.append({**fields, "data": json.loads(fields["data"])})
    assert text.endswith("\n\n")
    return events


def test_follow_an_ended_job_streams_its_lines_then_ends(owner_api, logged):
    status, *events = sse(owner_api.get(f"{URL}logged/logs/", {"follow": "true"}))
    assert (status["event"], status["data"]) == ("status", {"status": "Completed", "status_reason": ""})
    assert "id" not in status  # only lines carry ids: a reconnect resumes after the last line
    assert [event["event"] for event in events] == ["line"] * 5 + ["end"]
    assert [event["id"] for event in events[:5]] == ["0", "1", "2", "3", "4"]
    assert [(e["data"]["seq"], e["data"]["source"], e["data"]["text"]) for e in events[:5]] == [
        (0, "rank-0", "epoch 1"), (1, "rank-1", "epoch 1"), (2, "rank-0", "epoch 2"), (3, "", "saved"), (4, "rank-0", "done")]
    assert events[-1]["data"] == {"status": "Completed", "status_reason": "", "exit_code": 0}
    assert "id" not in events[-1]


def test_follow_resumes_after_the_last_event_id(owner_api, logged):
    events = sse(owner_api.get(f"{URL}logged/logs/", {"follow": "true"}, HTTP_LAST_EVENT_ID="2"))
    assert [event.get("id") for event in events] == [None, "3", "4", None]
    assert events[-1]["event"] == "end"


def test_follow_starts_at_the_cursor(owner_api, logged):
    events = sse(owner_api.get(f"{URL}logged/logs/", {"follow": "true", "cursor": encode_cursor(4)}))
    assert [(event["event"], event.get("id")) for event in events] == [("status", None), ("line", "4"), ("end", None)]


def test_follow_with_an_event_stream_accept_header(owner_api, logged):
    # what a browser's EventSource sends
    events = sse(owner_api.get(f"{URL}logged/logs/", {"follow": "true"}, HTTP_ACCEPT="text/event-stream"))
    assert events[-1]["event"] == "end"


def test_follow_a_running_job_ends_with_a_timeout_to_reconnect(owner_api, logged, settings):
    settings.DOCKYARD_LOG_FOLLOW_SECONDS = 1
    set_state("logged", status="Running")
    events = sse(owner_api.get(f"{URL}logged/logs/", {"follow": "true"}, HTTP_LAST_EVENT_ID="3"))
    assert [(event["event"], event.get("id")) for event in events] == [("status", None), ("line", "4"), ("timeout", None)]
    assert events[-1]["data"] == {"status": "Running", "next_id": 5}


def next_event(chunks) -> tuple[str, dict]:
    """The next event of a stream being read (keepalives skipped): (event, data)."""
    while (chunk := next(chunks)).startswith(":"):
        pass
    fields = dict(line.split(": ", 1) for line in chunk.splitlines() if line)
    return fields["event"], json.loads(fields["data"])


def test_follow_says_the_status_and_its_reason_at_once_and_again_at_each_change(owner_api, workspace):
    submit(owner_api, name="waiting")
    set_state("waiting", status="Queued", status_reason="Waiting for a node: insufficient cpu")
    chunks = (chunk.decode() for chunk in owner_api.get(f"{URL}waiting/logs/", {"follow": "true"}).streaming_content)

    assert next_event(chunks) == ("status", {"status": "Queued", "status_reason": "Waiting for a node: insufficient cpu"})
    set_state("waiting", status_reason="Waiting for a node: insufficient nvidia.com/gpu")
    assert next_event(chunks) == ("status", {"status": "Queued",
                                             "status_reason": "Waiting for a node: insufficient nvidia.com/gpu"})
    set_state("waiting", status="Running", status_reason="")
    assert next_event(chunks) == ("status", {"status": "Running", "status_reason": ""})
    append_lines(Job.objects.get(name="waiting"), [("", "hello")])
    assert next_event(chunks)[0] == "line"
    set_state("waiting", status="Failed", status_reason="The command exited with code 3.", exit_code=3)
    assert next_event(chunks) == ("end", {"status": "Failed", "status_reason": "The command exited with code 3.", "exit_code": 3})


def test_follow_refuses_a_bad_cursor_before_streaming(owner_api, logged):
    assert_error(owner_api.get(f"{URL}logged/logs/", {"follow": "true", "cursor": "garbage"}), 400, "InvalidCursor", "cursor")


def test_unicode_digits_are_not_a_limit_or_an_event_id(owner_api, logged):
    assert_error(owner_api.get(f"{URL}logged/logs/", {"limit": "²"}), 400, "InvalidLimit", "limit")
    events = sse(owner_api.get(f"{URL}logged/logs/", {"follow": "true"}, HTTP_LAST_EVENT_ID="²"))
    assert [event.get("id") for event in events] == [None, "0", "1", "2", "3", "4", None]  # ignored: from the start


# events


def test_events_tell_the_jobs_story(owner_api, workspace):
    submit(owner_api, name="story")
    owner_api.post(f"{URL}story/cancel/")
    response = owner_api.get(f"{URL}story/events/")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"count", "next", "previous", "results"}
    assert body["count"] == 2 and body["next"] is None
    assert [set(event) for event in body["results"]] == [{"time", "type", "reason", "message"}] * 2
    assert [(event["type"], event["reason"], event["message"]) for event in body["results"]] == [
        ("Normal", "NotStarted", "Submitted, on the worker's host (local)."),
        ("Normal", "CancelRequested", "Cancel requested by olivia."),
    ]


def test_events_are_oldest_first_across_pages(owner_api, workspace):
    from datetime import timedelta

    submit(owner_api, name="busy")
    job = Job.objects.get(name="busy")
    start = JobEvent.objects.get(job=job).time
    JobEvent.objects.bulk_create([JobEvent(job=job, time=start + timedelta(seconds=index), reason=f"Step{index}") for index in range(1, 5)])
    first = owner_api.get(f"{URL}busy/events/", {"page_size": 3}).json()
    second = owner_api.get(first["next"]).json()
    assert [event["reason"] for event in first["results"] + second["results"]] == ["NotStarted", "Step1", "Step2", "Step3", "Step4"]
    assert first["count"] == second["count"] == 5

