"""jobs/spec.py: Azure ML command-job YAML in, a validated spec with defaults out (or every problem by field path)."""
import pytest
import yaml

from controlplane.specs import SpecErrors
from jobs.spec import input_text, parse_job, render_command, shm_quantity

COMMAND = "python train.py"
DATA_PATH = "azureml://datastores/workspaceblobstore/paths/cifar/"


def job(**fields) -> dict:
    """A valid minimal body with fields replaced (a value of None removes the field)."""
    data = {"command": COMMAND, **fields}
    return {key: value for key, value in data.items() if value is not None}


def targets_of(body) -> list[str]:
    with pytest.raises(SpecErrors) as info:
        parse_job(body)
    assert info.value.errors and all(message for _, message in info.value.errors)
    return [target for target, _ in info.value.errors]


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


# environment


@pytest.mark.parametrize("environment", [
    {"image": "python:3.11"},
    {"image": "mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu20.04:latest", "description": "inline", "tags": {"a": "b"}},
    {"venv": "/opt/venvs/torch"},
])
def test_inline_environments(environment):
    assert parse_job(job(environment=environment))["environment"] == environment


@pytest.mark.parametrize(
    "environment, target",
    [
        ("azureml:AzureML-sklearn-1.0-ubuntu20.04-py38-cpu:1", "environment"),
        ("azureml:AzureML-acpt-pytorch-2.2-cuda12.1@latest", "environment"),
        (["python:3.11"], "environment"),
        (5, "environment"),
        ({"image": ""}, "environment.image"),
        ({"image": "   "}, "environment.image"),
        ({"image": 3}, "environment.image"),
        ({"image": ["python"]}, "environment.image"),
        ({"venv": ""}, "environment.venv"),
        ({"venv": 1}, "environment.venv"),
        ({"image": "python:3.11", "conda_file": "conda.yml"}, "environment.conda_file"),
        ({"image": "python:3.11", "inference_config": {}}, "environment.inference_config"),
        ({"name": "train-env"}, "environment.name"),  # a registered environment: not built here
        ({"image": "python:3.11", "version": "1"}, "environment.version"),
    ],
)
def test_invalid_environments(environment, target):
    assert set(targets_of(job(environment=environment))) == {target}  # (a blank image breaks two rules of one field)


# environment_variables


def test_environment_variables_values_become_text():
    variables = {"A": "1", "_B2": 2, "DEBUG": True, "RATE": 0.5, "lower_case": "ok"}
    assert parse_job(job(environment_variables=variables))["environment_variables"] == {
        "A": "1", "_B2": "2", "DEBUG": "true", "RATE": "0.5", "lower_case": "ok"}


@pytest.mark.parametrize(
    "variables, target",
    [
        ({"1A": "x"}, "environment_variables.1A"),
        ({"A-B": "x"}, "environment_variables.A-B"),
        ({"A B": "x"}, "environment_variables.A B"),
        ({"": "x"}, "environment_variables."),
        ({"A": {"x": 1}}, "environment_variables.A"),
        ({"A": ["x"]}, "environment_variables.A"),
        ({"A": None}, "environment_variables.A"),
        (["A=1"], "environment_variables"),
        ("A=1", "environment_variables"),
    ],
)
def test_invalid_environment_variables(variables, target):
    assert targets_of(job(environment_variables=variables)) == [target]


# resources


@pytest.mark.parametrize("shm_size", ["2g", "2G", "512m", "512M", "64k", "1048576", "100b", "16g"])
def test_shm_sizes(shm_size):
    assert parse_job(job(resources={"shm_size": shm_size}))["resources"]["shm_size"] == shm_size


@pytest.mark.parametrize(
    "resources, target",
    [
        ({"instance_count": 0}, "resources.instance_count"),
        ({"instance_count": -1}, "resources.instance_count"),
        ({"instance_count": True}, "resources.instance_count"),
        ({"instance_count": "2"}, "resources.instance_count"),
        ({"instance_count": 1.5}, "resources.instance_count"),
        ({"instance_count": 2.0}, "resources.instance_count"),
        ({"shm_size": "2gb"}, "resources.shm_size"),
        ({"shm_size": "2Gi"}, "resources.shm_size"),
        ({"shm_size": "0g"}, "resources.shm_size"),
        ({"shm_size": "-1g"}, "resources.shm_size"),
        ({"shm_size": "1.5g"}, "resources.shm_size"),
        ({"shm_size": "2 g"}, "resources.shm_size"),
        ({"shm_size": "2t"}, "resources.shm_size"),
        ({"shm_size": ""}, "resources.shm_size"),
        ({"shm_size": 2}, "resources.shm_size"),
        ({"instance_type": ""}, "resources.instance_type"),
        ({"instance_type": "  "}, "resources.instance_type"),
        ({"instance_type": 5}, "resources.instance_type"),
        ({"instance_type": ["small"]}, "resources.instance_type"),
        ("small", "resources"),
        ([{"instance_count": 1}], "resources"),
    ],
)
def test_invalid_resources(resources, target):
    assert targets_of(job(resources=resources)) == [target]


def test_resources_azure_ml_has_are_kept_as_given():
    resources = {"instance_type": "gpu-small", "instance_count": 2, "shm_size": "8g"}
    assert parse_job(job(resources=resources))["resources"] == resources


@pytest.mark.parametrize("field, value, reason", [
    ("docker_args", "--ipc=host", "not with docker run"),
    ("locations", ["westeurope"], "choose a compute"),
    ("properties", {"x": "y"}, "not read here"),
    ("max_instance_count", 4, "Elastic training"),
])
def test_resources_dockyard_cannot_honour_are_refused_with_the_reason(field, value, reason):
    with pytest.raises(SpecErrors) as info:
        parse_job(job(resources={"instance_count": 2, field: value}))
    assert info.value.errors == [(f"resources.{field}", info.value.errors[0][1])] and reason in info.value.errors[0][1]


# distribution


@pytest.mark.parametrize(
    "distribution, target",
    [
        ({"type": "ray", "address": "auto"}, "distribution.type"),
        ({"type": "Py_Torch"}, "distribution.type"),
        ({"type": "mpi", "process_count_per_instance": 2}, "distribution.process_count_per_instance"),  # no mpirun here
        ({"process_count_per_instance": 2}, "distribution.type"),
        ("pytorch", "distribution.type"),
        ({"type": "pytorch", "process_count_per_instance": 0}, "distribution.process_count_per_instance"),
        ({"type": "mpi", "process_count_per_instance": "2"}, "distribution.process_count_per_instance"),
        ({"type": "tensorflow", "worker_count": 0}, "distribution.worker_count"),
        ({"type": "tensorflow", "worker_count": True}, "distribution.worker_count"),
        ({"type": "tensorflow", "parameter_server_count": -1}, "distribution.parameter_server_count"),
    ],
)
def test_invalid_distributions(distribution, target):
    assert targets_of(job(distribution=distribution)) == [target]


# limits


@pytest.mark.parametrize("timeout", [1, 60, 86400 * 30])
def test_timeouts(timeout):
    assert parse_job(job(limits={"timeout": timeout}))["limits"] == {"timeout": timeout}


@pytest.mark.parametrize(
    "limits, target",
    [
        ({"timeout": 0}, "limits.timeout"),
        ({"timeout": -5}, "limits.timeout"),
        ({"timeout": True}, "limits.timeout"),
        ({"timeout": False}, "limits.timeout"),
        ({"timeout": "3600"}, "limits.timeout"),
        ({"timeout": 1.5}, "limits.timeout"),
        ({"timeout": 60, "max_retries": 2}, "limits.max_retries"),
        (3600, "limits"),
    ],
)
def test_invalid_limits(limits, target):
    assert targets_of(job(limits=limits)) == [target]


# inputs and outputs


@pytest.mark.parametrize(
    "value",
    [
        "hello world", 42, 0.01, True,
        {"type": "string", "default": "gbdt"},
        {"type": "integer", "default": 10},
        {"type": "number", "default": 0.5},
        {"type": "boolean", "default": False},
        {"type": "uri_folder", "path": DATA_PATH, "mode": "ro_mount"},
        {"type": "uri_file", "path": "https://azuremlexamples.blob.core.windows.net/datasets/iris.csv"},
        {"type": "mltable", "path": "azureml:titanic:1"},
        {"type": "mlflow_model", "path": "azureml:model:3", "mode": "download"},
        {"type": "custom_model", "path": "./model"},
    ],
)
def test_input_forms_are_kept_as_given(value):
    assert parse_job(job(inputs={"x": value}))["inputs"] == {"x": value}


@pytest.mark.parametrize(
    "inputs, target",
    [
        ({"1x": 1}, "inputs.1x"),
        ({"learning-rate": 0.1}, "inputs.learning-rate"),
        ({"x": None}, "inputs.x"),
        ({"x": [1, 2]}, "inputs.x"),
        ({"x": {"type": "uri_file"}}, "inputs.x"),
        ({"x": {"type": "uri_folder", "path": ""}}, "inputs.x"),
        ({"x": {"type": "uri_folder", "path": 5}}, "inputs.x"),
        ({"x": {"type": "integer"}}, "inputs.x"),
        ({"x": {"type": "string", "default": None}}, "inputs.x"),
        ({"x": {"type": "tensor", "path": "p"}}, "inputs.x"),
        (["x"], "inputs"),
        ("x=1", "inputs"),
    ],
)
def test_invalid_inputs(inputs, target):
    assert targets_of(job(inputs=inputs)) == [target]


@pytest.mark.parametrize("outputs", [
    {"model": {"type": "uri_folder", "mode": "rw_mount"}},
    {"model": {"type": "uri_folder", "mode": "upload"}},
    {"model": {"type": "uri_file", "mode": "mount", "description": "one file"}},
    {"model": None},  # Azure ML's `outputs: {hello_output: }`
])
def test_output_forms(outputs):
    assert parse_job(job(outputs=outputs))["outputs"] == outputs


@pytest.mark.parametrize("outputs, target", [
    ({"model": "uri_folder"}, "outputs.model"),
    ({"model": ["uri_folder"]}, "outputs.model"),
    ({"my-model": {"type": "uri_folder"}}, "outputs.my-model"),
    ({"9model": None}, "outputs.9model"),
    (["model"], "outputs"),
    ({"model": {"type": "uri_folder", "path": "azureml://datastores/workspaceblobstore/paths/out/"}}, "outputs.model.path"),
    ({"model": {"type": "mlflow_model", "name": "my-model"}}, "outputs.model.name"),
    ({"model": {"type": "uri_folder", "mode": "direct"}}, "outputs.model.mode"),
    ({"model": {"type": "tensor"}}, "outputs.model.type"),
    ({"model": {"type": "uri_folder", "colour": "red"}}, "outputs.model.colour"),
])
def test_invalid_outputs(outputs, target):
    assert targets_of(job(outputs=outputs)) == [target]


# ${{inputs.x}} and ${{outputs.y}}


@pytest.mark.parametrize(
    "command, ok",
    [
        ("python train.py --lr ${{inputs.lr}}", True),
        ("python train.py --lr ${{ inputs.lr }}", True),
        ("python train.py --out ${{outputs.model}}", True),
        ("python train.py --lr ${{inputs.lr}} --out ${{outputs.model}} --again ${{inputs.lr}}", True),
        ("echo $HOME ${HOME} {{inputs.nope}}", True),  # not references
        ("python train.py --lr ${{inputs.rate}}", False),
        ("python train.py --out ${{outputs.checkpoints}}", False),
        ("python train.py --out ${{outputs.lr}}", False),  # lr is an input
        ("python train.py --x ${{inputs.model}}", False),  # model is an output
        ("python train.py --x ${{parent.jobs.prep.outputs.data}}", False),
        ("python train.py --x ${{inputs}}", False),
        ("python train.py --x ${{inputs.}}", False),
    ],
)
def test_references_must_name_an_input_or_output(command, ok):
    body = job(command=command, inputs={"lr": 0.1}, outputs={"model": {"type": "uri_folder"}})
    if ok:
        assert parse_job(body)["command"] == command
    else:
        assert targets_of(body) == ["command"]


def test_a_reference_to_an_input_that_is_itself_invalid_is_reported_too():
    body = job(command="echo ${{inputs.x}}", inputs={"x": [1]})
    assert targets_of(body) == ["inputs.x", "command"]


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
            "limits": {"timeout": -1}, "environment": "azureml:env:1"}
    assert sorted(targets_of(body)) == sorted([
        "colour", "name", "command", "compute", "environment", "resources.instance_count", "resources.shm_size",
        "limits.timeout",
    ])


@pytest.mark.parametrize("body", [None, [], ["command"], "command: echo", 5, True])
def test_a_body_that_is_not_a_mapping(body):
    assert targets_of(body) == [""]


# render_command and its helpers


@pytest.mark.parametrize(
    "command, inputs, outputs_dir, rendered",
    [
        ("echo hi", {}, "outputs", "echo hi"),
        ("echo ${{inputs.who}}", {"who": "world"}, "outputs", "echo world"),
        ("echo ${{ inputs.who }}!", {"who": "world"}, "outputs", "echo world!"),
        ("train --lr ${{inputs.lr}} --epochs ${{inputs.epochs}}", {"lr": 0.01, "epochs": 10}, "outputs",
         "train --lr 0.01 --epochs 10"),
        ("train --fast ${{inputs.fast}}", {"fast": True}, "outputs", "train --fast true"),
        ("train --boost ${{inputs.boost}}", {"boost": {"type": "string", "default": "gbdt"}}, "outputs", "train --boost gbdt"),
        ("train --n ${{inputs.n}}", {"n": {"type": "integer", "default": 3}}, "outputs", "train --n 3"),
        ("train --data ${{inputs.data}}", {"data": {"type": "uri_folder", "path": DATA_PATH}}, "outputs",
         f"train --data {DATA_PATH}"),
        ("train --out ${{outputs.model}}", {}, "outputs", "train --out outputs/model"),
        ("train --out ${{outputs.model}}/best.pt", {}, "/var/dockyard/jobs/7/outputs", "train --out /var/dockyard/jobs/7/outputs/model/best.pt"),
        ("cp ${{inputs.a}} ${{outputs.b}} && cat ${{inputs.a}}", {"a": "in.txt"}, "o", "cp in.txt o/b && cat in.txt"),
    ],
)
def test_render_command(command, inputs, outputs_dir, rendered):
    spec = parse_job(job(command=command, inputs=inputs, outputs={"model": None, "b": None}))
    assert render_command(spec, outputs_dir) == rendered


def test_render_command_default_outputs_folder_is_relative():
    spec = parse_job(job(command="ls ${{outputs.model}}", outputs={"model": None}))
    assert render_command(spec) == "ls outputs/model"


@pytest.mark.parametrize(
    "value, text",
    [
        ("a b", "a b"), (3, "3"), (0.5, "0.5"), (True, "true"), (False, "false"),
        ({"type": "boolean", "default": True}, "true"),
        ({"value": 7}, "7"),
        ({"type": "uri_file", "path": "data.csv"}, "data.csv"),
    ],
)
def test_input_text(value, text):
    assert input_text(value) == text


@pytest.mark.parametrize(
    "shm_size, quantity",
    [("2g", "2Gi"), ("2G", "2Gi"), ("512m", "512Mi"), ("512M", "512Mi"), ("64k", "64Ki"), ("100", "100"), ("100b", "100"),
     ("16g", "16Gi")],
)
def test_shm_quantity(shm_size, quantity):
    assert shm_quantity(shm_size) == quantity


# Azure ML's own examples (azureml-examples, CLI v2) load unchanged


HELLO_WORLD = """
$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
command: echo "hello world"
environment:
  image: library/python:latest
compute: azureml:cpu-cluster
"""

HELLO_WORLD_INPUTS_OUTPUTS = """
$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
command: |
  echo ${{inputs.hello_string}}
  echo ${{inputs.hello_number}}
  echo "hello world" > ${{outputs.hello_output}}/helloworld.txt
environment:
  image: library/python:latest
inputs:
  hello_string: "hello world"
  hello_number: 42
outputs:
  hello_output:
environment_variables:
  hello_env_var: "hello world"
compute: azureml:cpu-cluster
"""

PYTORCH_DISTRIBUTED = """
$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
code: src
command: >-
  python train.py
  --epochs ${{inputs.epochs}}
  --learning-rate ${{inputs.learning_rate}}
  --data-dir ${{inputs.cifar}}
inputs:
  epochs: 1
  learning_rate: 0.2
  cifar:
     type: uri_folder
     path: azureml:cifar-10-example@latest
environment:
  image: mcr.microsoft.com/azureml/curated/acpt-pytorch-2.2-cuda12.1:latest
compute: azureml:gpu-cluster
distribution:
  type: pytorch
  process_count_per_instance: 1
resources:
  instance_count: 2
  shm_size: 16g
display_name: pytorch-cifar-distributed-example
experiment_name: pytorch-cifar-distributed-example
description: Train a basic convolutional neural network (CNN) with PyTorch on the CIFAR-10 dataset, distributed via PyTorch.
"""

LIGHTGBM_IRIS_DATA_INPUTS = """
$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
code: src
command: >-
  python main.py
  --iris-csv ${{inputs.iris_csv}}
  --learning-rate ${{inputs.learning_rate}}
  --boosting ${{inputs.boosting}}
  --model-dir ${{outputs.model}}
inputs:
  iris_csv:
    type: uri_file
    path: wasbs://datasets@azuremlexamples.blob.core.windows.net/iris.csv
    mode: download
  learning_rate: 0.9
  boosting:
    type: string
    default: gbdt
outputs:
  model:
    type: uri_folder
    mode: rw_mount
environment:
  image: mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu20.04:latest
compute: azureml:cpu-cluster
display_name: lightgbm-iris-example
experiment_name: lightgbm-iris-example
description: Train a LightGBM model on the Iris dataset.
tags:
  framework: lightgbm
  dataset: iris
limits:
  timeout: 7200
"""

TENSORFLOW_MNIST_DISTRIBUTED = """
$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
code: src
command: >-
  python train.py
  --epochs ${{inputs.epochs}}
  --model-dir outputs/keras-model
inputs:
  epochs: 1
environment:
  image: mcr.microsoft.com/azureml/curated/tensorflow-2.16-cuda12:latest
compute: azureml:gpu-cluster
resources:
  instance_count: 2
distribution:
  type: tensorflow
  worker_count: 2
display_name: tensorflow-mnist-distributed-example
experiment_name: tensorflow-mnist-distributed-example
"""

MPI_HOROVOD_ON_KUBERNETES = """
$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
code: src
command: python train.py --epochs ${{inputs.epochs}}
inputs:
  epochs: 3
environment:
  image: horovod/horovod:0.28.1
compute: azureml:k8s-compute
resources:
  instance_type: gpu-small
  instance_count: 2
distribution:
  type: mpi
  process_count_per_instance: 2
queue_settings:
  job_tier: standard
  priority: medium
identity:
  type: user_identity
"""

# `az ml job show -o yaml`: read-only fields included, submitted again.
JOB_SHOW_OUTPUT = """
$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json
command: echo "hello world"
compute: azureml:cpu-cluster
creation_context:
  created_at: '2024-05-02T09:12:44.511634+00:00'
  created_by: Jane Doe
  created_by_type: User
display_name: olive_plum_4b2rz1kq
environment:
  image: library/python:latest
experiment_name: basics
id: azureml:/subscriptions/0000/resourceGroups/rg/providers/Microsoft.MachineLearningServices/workspaces/ws/jobs/olive_plum_4b2rz1kq
inputs: {}
name: olive_plum_4b2rz1kq
outputs:
  default:
    mode: rw_mount
    path: azureml://datastores/workspaceartifactstore/ExperimentRun/dcid.olive_plum_4b2rz1kq
    type: uri_folder
parameters: {}
properties:
  _azureml.ComputeTargetType: amlctrain
  ContentSnapshotId: 00000000-0000-0000-0000-000000000000
resources:
  instance_count: 1
  shm_size: 2g
services:
  Studio:
    endpoint: https://ml.azure.com/runs/olive_plum_4b2rz1kq
    type: Studio
  Tracking:
    endpoint: azureml://westeurope.api.azureml.ms/mlflow/v1.0/subscriptions/0000
    type: Tracking
status: Completed
tags: {}
type: command
"""

LOCAL_WITH_VENV = """
command: python -c "print('${{inputs.greeting}}')"
compute: local
environment:
  venv: /opt/venvs/science
inputs:
  greeting: hi
"""

EXAMPLES = {
    "hello-world": HELLO_WORLD,
    "hello-world-inputs-outputs": HELLO_WORLD_INPUTS_OUTPUTS,
    "pytorch-distributed": PYTORCH_DISTRIBUTED,
    "lightgbm-iris-data-inputs": LIGHTGBM_IRIS_DATA_INPUTS,
    "tensorflow-distributed": TENSORFLOW_MNIST_DISTRIBUTED,
    "job-show-output": JOB_SHOW_OUTPUT,
    "local-venv": LOCAL_WITH_VENV,
}
KEPT_AS_WRITTEN = ("command", "code", "environment", "inputs", "outputs", "properties", "display_name", "description", "experiment_name", "limits")


@pytest.mark.parametrize("text", EXAMPLES.values(), ids=EXAMPLES.keys())
def test_azure_ml_examples_load_unchanged(text):
    body = yaml.safe_load(text)
    spec = parse_job(body)
    for field in KEPT_AS_WRITTEN:
        if body.get(field) and not (text is JOB_SHOW_OUTPUT and field == "outputs"):
            assert spec[field] == body[field], field
    for field, value in (body.get("resources") or {}).items():
        assert spec["resources"][field] == value, field


def test_pytorch_example_normalised():
    spec = parse_job(yaml.safe_load(PYTORCH_DISTRIBUTED))
    assert spec["compute"] == "gpu-cluster"
    assert spec["resources"] == {"instance_count": 2, "shm_size": "16g"}
    assert spec["distribution"] == {"type": "pytorch", "process_count_per_instance": 1}
    assert render_command(spec) == ("python train.py --epochs 1 --learning-rate 0.2 "
                                    "--data-dir azureml:cifar-10-example@latest")


def test_data_inputs_example_renders_its_paths():
    spec = parse_job(yaml.safe_load(LIGHTGBM_IRIS_DATA_INPUTS))
    assert spec["tags"] == {"framework": "lightgbm", "dataset": "iris"}
    assert render_command(spec, "/work/outputs") == (
        "python main.py --iris-csv wasbs://datasets@azuremlexamples.blob.core.windows.net/iris.csv "
        "--learning-rate 0.9 --boosting gbdt --model-dir /work/outputs/model")


def test_tensorflow_example_normalised():
    spec = parse_job(yaml.safe_load(TENSORFLOW_MNIST_DISTRIBUTED))
    assert spec["distribution"] == {"type": "tensorflow", "worker_count": 2, "parameter_server_count": 0}


def test_job_show_output_drops_its_read_only_fields():
    spec = parse_job(yaml.safe_load(JOB_SHOW_OUTPUT))
    assert spec["name"] == "olive_plum_4b2rz1kq" and spec["experiment_name"] == "basics"
    assert not {"status", "creation_context", "id", "parameters", "services"} & set(spec)
    # the run's artifact folder in Azure ML is the job's own outputs folder here
    assert spec["outputs"] == {"default": {"mode": "rw_mount", "type": "uri_folder"}}


def test_mpi_example_is_refused_for_what_dockyard_cannot_do():
    with pytest.raises(SpecErrors) as info:
        parse_job(yaml.safe_load(MPI_HOROVOD_ON_KUBERNETES))
    assert sorted(target for target, _ in info.value.errors) == [
        "distribution.process_count_per_instance", "identity", "queue_settings"]


def test_the_hello_world_output_with_no_fields_renders_as_a_folder():
    spec = parse_job(yaml.safe_load(HELLO_WORLD_INPUTS_OUTPUTS))
    assert spec["environment_variables"] == {"hello_env_var": "hello world"}
    assert render_command(spec, "out") == 'echo hello world\necho 42\necho "hello world" > out/hello_output/helloworld.txt\n'


# Azure ML's defaults and letter case (issue 10, items 1 and 2)


def test_an_input_given_by_path_without_type_is_a_uri_folder():
    spec = parse_job(job(command="ls ${{inputs.training_data}}", inputs={"training_data": {"path": "data", "mode": "ro_mount"}}))
    assert spec["inputs"] == {"training_data": {"type": "uri_folder", "path": "data", "mode": "ro_mount"}}
    assert render_command(spec) == "ls data"


@pytest.mark.parametrize("field, value, stored", [
    ("type", "Command", ("type", "command")),
    ("inputs", {"x": {"type": "URI_FILE", "path": "a.csv", "mode": "Download"}},
     ("inputs", {"x": {"type": "uri_file", "path": "a.csv", "mode": "download"}})),
    ("inputs", {"x": {"type": "MLTable", "path": "t", "mode": "EVAL_MOUNT"}},
     ("inputs", {"x": {"type": "mltable", "path": "t", "mode": "eval_mount"}})),
    ("inputs", {"x": {"type": "Integer", "default": 3}}, ("inputs", {"x": {"type": "integer", "default": 3}})),
    ("outputs", {"x": {"type": "Uri_Folder", "mode": "RW_MOUNT"}}, ("outputs", {"x": {"type": "uri_folder", "mode": "rw_mount"}})),
    ("distribution", {"type": "PyTorch"}, ("distribution", {"type": "pytorch", "process_count_per_instance": 1})),
    ("distribution", {"type": "MPI"}, ("distribution", {"type": "mpi", "process_count_per_instance": 1})),
    ("distribution", {"type": "TensorFlow", "worker_count": 1},
     ("distribution", {"type": "tensorflow", "worker_count": 1, "parameter_server_count": 0})),
])
def test_enum_values_are_read_in_any_case_and_stored_canonical(field, value, stored):
    key, expected = stored
    assert parse_job(job(**{field: value}))[key] == expected


@pytest.mark.parametrize("inputs, target", [
    ({"x": {"path": "data", "mode": "rw_mount"}}, "inputs.x.mode"),  # an output's mode
    ({"x": {"type": "uri_folder", "path": "data", "mode": "eval_mount"}}, "inputs.x.mode"),  # mltable only
    ({"x": {"type": "string", "default": "a", "mode": "download"}}, "inputs.x.mode"),
    ({"x": {"path": "data", "datastore": "workspaceblobstore"}}, "inputs.x.datastore"),
])
def test_input_modes_and_fields_follow_azure_mls_schema(inputs, target):
    assert targets_of(job(inputs=inputs)) == [target]


@pytest.mark.parametrize("text, expected", [
    ("Key", "key"), ("AMLToken", "aml_token"), ("aml_token", "aml_token"), ("LowPriority", "low_priority"),
    ("UriFolder", "uri_folder"), ("uri_folder", "uri_folder"), ("PyTorch", "py_torch"),
])
def test_camel_to_snake_as_azure_ml_writes_it(text, expected):
    from controlplane.specs import camel_to_snake

    assert camel_to_snake(text) == expected


def test_canonical_enum():
    from controlplane.specs import canonical_enum

    assert canonical_enum("PyTorch", {"pytorch"}) == "pytorch"
    assert canonical_enum("UriFolder", {"uri_folder"}) is None  # Azure ML lower-cases job enums: urifolder is no type
    assert canonical_enum("AMLToken", {"key", "aml_token"}, camel=True) == "aml_token"
    assert canonical_enum(5, {"5"}) is None
