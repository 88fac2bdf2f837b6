"""jobs/spec.py: defaults, names and text fields, unknown and read-only fields, command and compute; every problem by path."""
import pytest
import yaml

from controlplane.specs import SpecErrors
from jobs.spec import parse_job
from jobs.tests.support import COMMAND, job, targets_of

# defaults


def test_a_minimal_job_gets_azure_mls_defaults():
    assert parse_job({"command": "echo hi"}) == {
        "type": "command",
        "name": None,  # the service generates one
        "experiment_name": "Default",
        "command": "echo hi",
        "compute": "",  # serverless
        "resources": {"instance_count": 1, "shm_size": "2g"},
    }


@pytest.mark.parametrize(
    "body, field, expected",
    [
        (job(), "experiment_name", "Default"),
        (job(experiment_name=""), "experiment_name", "Default"),
        (job(experiment_name="cifar"), "experiment_name", "cifar"),
        (job(name=""), "name", None),
        (job(resources={}), "resources", {"instance_count": 1, "shm_size": "2g"}),
        (job(resources={"instance_count": 3}), "resources", {"instance_count": 3, "shm_size": "2g"}),
        (job(resources={"shm_size": "512m"}), "resources", {"instance_count": 1, "shm_size": "512m"}),
        (job(distribution={"type": "pytorch"}), "distribution", {"type": "pytorch", "process_count_per_instance": 1}),
        (job(distribution={"type": "mpi"}), "distribution", {"type": "mpi", "process_count_per_instance": 1}),
        (job(distribution={"type": "pytorch", "process_count_per_instance": 4}), "distribution",
         {"type": "pytorch", "process_count_per_instance": 4}),
        (job(distribution={"type": "tensorflow"}, resources={"instance_count": 3}), "distribution",
         {"type": "tensorflow", "worker_count": 3, "parameter_server_count": 0}),
        (job(distribution={"type": "tensorflow", "worker_count": 2, "parameter_server_count": 1}), "distribution",
         {"type": "tensorflow", "worker_count": 2, "parameter_server_count": 1}),
        (job(limits={"timeout": 3600}), "limits", {"timeout": 3600}),
        (job(type="command"), "type", "command"),
    ],
)
def test_defaults_and_normalised_values(body, field, expected):
    assert parse_job(body)[field] == expected


@pytest.mark.parametrize("field, empty", [
    ("display_name", None), ("description", None), ("tags", {}), ("environment", None),
    ("environment_variables", {}), ("distribution", None), ("limits", {}), ("inputs", {}), ("outputs", {}),
])
def test_empty_optional_fields_are_left_out(field, empty):
    assert field not in parse_job(job(**{field: empty}))


# names and text fields


@pytest.mark.parametrize("name", ["a", "7", "train", "Train-2", "olive_plum_x1k2", "x" * 255, "1-a_b"])
def test_valid_names(name):
    assert parse_job(job(name=name))["name"] == name


@pytest.mark.parametrize("name", ["-train", "_train", "my.job", "my job", "job/1", "x" * 256, "café", 123, ["a"], {"a": 1}])
def test_invalid_names(name):
    assert targets_of(job(name=name)) == ["name"]


@pytest.mark.parametrize(
    "field, value, ok",
    [
        ("display_name", "x" * 255, True),
        ("display_name", "x" * 256, False),
        ("display_name", 5, False),
        ("experiment_name", "x" * 255, True),
        ("experiment_name", "x" * 256, False),
        ("experiment_name", ["a"], False),
        ("description", "x" * 5000, True),  # only the description may be long
        ("description", {"a": 1}, False),
    ],
)
def test_text_fields(field, value, ok):
    if ok:
        assert parse_job(job(**{field: value}))[field] == value
    else:
        assert targets_of(job(**{field: value})) == [field]


@pytest.mark.parametrize("kind", ["sweep", "pipeline", "spark", None, 1])
def test_only_command_jobs(kind):
    assert targets_of({"command": COMMAND, "type": kind}) == ["type"]


def test_tags_values_become_text():
    assert parse_job(job(tags={"team": "a", "run": 3, "rc": True, "lr": 0.5}))["tags"] == {
        "team": "a", "run": "3", "rc": "true", "lr": "0.5"}


@pytest.mark.parametrize("tags, target", [
    (["a", "b"], "tags"), ("team=a", "tags"), ({"team": {"a": 1}}, "tags.team"), ({"team": ["a"]}, "tags.team"),
    ({"team": None}, "tags.team"), ({1: "a"}, "tags.1"),
])
def test_invalid_tags(tags, target):
    assert targets_of(job(tags=tags)) == [target]


# unknown and read-only fields


@pytest.mark.parametrize(
    "body, target",
    [
        (job(colour="blue"), "colour"),
        (job(instance_count=2), "instance_count"),  # belongs under resources
        (job(environment={"image": "python:3.11", "docker": {"image": "x"}}), "environment.docker"),
        (job(environment={"image": "python:3.11", "build": {"path": "."}}), "environment.build"),
        (job(resources={"gpus": 1}), "resources.gpus"),
        (job(resources={"instance_count": 1, "instancetype": "small"}), "resources.instancetype"),
        (job(limits={"max_seconds": 10}), "limits.max_seconds"),
        (job(distribution={"type": "pytorch", "worker_count": 2}), "distribution.worker_count"),
        (job(distribution={"type": "mpi", "parameter_server_count": 1}), "distribution.parameter_server_count"),
        (job(distribution={"type": "tensorflow", "process_count_per_instance": 2}), "distribution.process_count_per_instance"),
    ],
)
def test_unknown_fields_are_refused_by_their_path(body, target):
    assert targets_of(body) == [target]


def test_read_only_fields_of_job_show_output_are_accepted_and_dropped():
    read_only = {"status": "Completed", "status_reason": "", "creation_context": {"created_by": "Jane"}, "log_files": None,
                 "parameters": {}, "id": "azureml:/subscriptions/0/jobs/x", "start_time": "2024-01-01T00:00:00Z",
                 "end_time": "2024-01-01T00:01:00Z", "duration": 60, "exit_code": 0, "created_on": "2024-01-01",
                 "updated_on": "2024-01-01", "created_by": "Jane", "placement": {"target": "local"}, "instance_type": "x"}
    spec = parse_job(job(**read_only))
    assert not set(read_only) & set(spec)


@pytest.mark.parametrize("field, value", [
    ("code", "./src"),  # checked and copied for local jobs, refused elsewhere (jobs/services.py)
    ("properties", {"azureml.runsource": "cli"}),  # STORED_ONLY: shown like tags
])
def test_fields_kept_as_given(field, value):
    assert parse_job(job(**{field: value}))[field] == value


@pytest.mark.parametrize("field, value, reason", [
    ("queue_settings", {"job_tier": "spot", "priority": "high"}, "not honoured"),
    ("identity", {"type": "user_identity"}, "without an Azure identity"),
    ("services", {"my_ssh": {"type": "ssh", "ssh_public_keys": "ssh-rsa AAAA", "nodes": "all"}}, "not started"),
])
def test_azure_ml_fields_without_a_backend_here_are_refused_with_the_reason(field, value, reason):
    with pytest.raises(SpecErrors) as info:
        parse_job(job(**{field: value}))
    assert [target for target, _ in info.value.errors] == [field] and reason in info.value.errors[0][1]


def test_job_show_services_are_dropped_not_refused():
    services = {"Studio": {"type": "Studio", "endpoint": "https://ml.azure.com/runs/x"},
                "Tracking": {"type": "Tracking", "endpoint": "azureml://westeurope.api.azureml.ms/mlflow"}}
    assert "services" not in parse_job(job(services=services))


@pytest.mark.parametrize("code, reason", [
    ("azureml:my-code:1", "Registered code assets"),
    ("https://github.com/Azure/azureml-examples", "not a URL"),
    ("git+https://github.com/Azure/azureml-examples", "not a URL"),
    (["src"], "path of a folder"),
    ("src\0x", "path of a folder"),
])
def test_code_that_is_not_a_folder_path_is_refused(code, reason):
    with pytest.raises(SpecErrors) as info:
        parse_job(job(code=code))
    assert info.value.errors[0][0] == "code" and reason in info.value.errors[0][1]


def test_schema_and_type_are_not_stored_as_given():
    spec = parse_job(job(**{"$schema": "https://azuremlschemas.azureedge.net/latest/commandJob.schema.json", "type": "command"}))
    assert "$schema" not in spec and spec["type"] == "command"


# command


@pytest.mark.parametrize("command", [None, "", "   ", 5, ["python", "train.py"], {"run": "x"}])
def test_command_is_required_text(command):
    assert targets_of({"command": command} if command is not None else {"compute": "local"}) == ["command"]


def test_a_multi_line_command_is_kept():
    command = "echo one\necho two\n"
    assert parse_job(job(command=command))["command"] == command


# compute


@pytest.mark.parametrize(
    "compute, stored",
    [
        ("azureml:k8s", "k8s"),
        ("k8s", "k8s"),
        ("azureml:gpu-cluster", "gpu-cluster"),
        ("local", "local"),
        (None, ""),
        ("", ""),
    ],
)
def test_compute_forms(compute, stored):
    body = job(compute=compute) if compute is not None else {"command": COMMAND, "compute": None}
    assert parse_job(body)["compute"] == stored


@pytest.mark.parametrize("compute", ["azureml:", "azureml:   ", "azureml:k8s:1", "a/b",
                                     "/subscriptions/0/resourceGroups/rg/providers/x/computes/k8s", 5, ["k8s"], {"name": "k8s"}, True])
def test_invalid_compute_references(compute):
    assert targets_of(job(compute=compute)) == ["compute"]


# values JSON cannot store (YAML has dates, .nan, !!binary, !!set)


def test_yaml_dates_kept_as_given_become_their_iso_text():
    body = yaml.safe_load("command: echo\nproperties:\n  since: 2024-05-01\n  at: 2024-05-01T10:30:00Z\n"
                          "tags:\n  released: 2024-01-02\n")
    spec = parse_job(body)
    assert spec["properties"] == {"since": "2024-05-01", "at": "2024-05-01T10:30:00+00:00"}
    assert spec["tags"] == {"released": "2024-01-02"}


@pytest.mark.parametrize(
    "text, target",
    [
        ("command: echo ${{inputs.lr}}\ninputs:\n  lr: .nan\n", "inputs.lr"),
        ("command: echo\nproperties:\n  weight: .inf\n", "properties.weight"),
        ("command: echo\nproperties:\n  ports: [22, -.inf]\n", "properties.ports.1"),
        ("command: echo\nproperties:\n  blob: !!binary aGVsbG8=\n", "properties.blob"),
        ("command: echo\nidentity: !!set {a: null}\n", "identity"),
    ],
)
def test_values_json_cannot_store_are_refused(text, target):
    assert targets_of(yaml.safe_load(text)) == [target]


def test_keys_json_cannot_store_are_refused_and_date_keys_become_text():
    assert targets_of(job(properties={("a", "b"): "x"})) == ["properties.('a', 'b')"]
    spec = parse_job(yaml.safe_load("command: echo\nproperties:\n  2024-05-01: release\n"))
    assert spec["properties"] == {"2024-05-01": "release"}


# every problem at once


def test_every_problem_is_reported_with_its_path():
    body = {"name": "-bad", "colour": "blue", "compute": "a/b", "resources": {"instance_count": 0, "shm_size": "lots"},
            "limits": {"timeout": -1}, "environment": "azureml:env"}
    assert sorted(targets_of(body)) == sorted([
        "colour", "name", "command", "compute", "environment", "resources.instance_count", "resources.shm_size",
        "limits.timeout",
    ])


@pytest.mark.parametrize("body", [None, [], ["command"], "command: echo", 5, True])
def test_a_body_that_is_not_a_mapping(body):
    assert targets_of(body) == [""]
