"""Submitting a command job in JSON or YAML: what is stored and shown, its name, and where it runs (local, Kubernetes, serverless)."""
import re

import pytest
import yaml

from jobs.models import Job, JobEvent
from jobs.tests.support import IMAGE, URL, counts, submit
from tests.support import assert_error
from workspaces.models import AuditEvent, Workspace
from workspaces.services import workspace_create

pytestmark = pytest.mark.usefixtures("local_compute")  # off by default: enabled as staff would

COMMON = {
    "name", "type", "display_name", "experiment_name", "description", "tags", "command", "resources", "compute",
    "status", "status_reason", "exit_code", "placement", "start_time", "end_time", "duration", "log_lines", "deleting",
    "created_by", "created_on", "updated_on",
}
GENERATED_NAME = re.compile(r"^[a-z]+_[a-z]+_[0-9a-f]{8}$")


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


@pytest.mark.parametrize("fields, instance_type, said", [
    ({}, "", "Submitted to vm 'vm', with all its GPUs, over SSH."),
    ({"resources": {"instance_type": "standard_nc6s_v3"}}, "Standard_NC6s_v3",
     "Submitted to vm 'vm' as a Standard_NC6s_v3, over SSH."),
    ({"environment": {"image": IMAGE}, "resources": {"shm_size": "8g", "instance_type": "Standard_DS3_v2"}},
     "Standard_DS3_v2", "Submitted to vm 'vm' as a Standard_DS3_v2, over SSH."),
])
def test_a_job_on_an_attached_vm_runs_over_ssh_even_before_the_vm_is_ready(owner_api, workspace, owner, fields,
                                                                           instance_type, said):
    from compute.tests.factories import create_compute

    vm = create_compute(workspace, owner, "virtualmachine")  # still being attached: the job waits, it is not refused
    job = submit(owner_api, name="on-vm", compute="azureml:vm", **fields)
    assert job["placement"]["target"] == "ssh"
    stored = Job.objects.get(name="on-vm")
    assert (stored.target, stored.compute, stored.instance_type) == ("ssh", vm, instance_type)
    assert JobEvent.objects.get(job=stored).message == said


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
