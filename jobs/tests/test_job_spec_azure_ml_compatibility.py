"""jobs/spec.py reads Azure ML's own command-job examples unchanged, its defaults, and enum values in any letter case."""
import pytest
import yaml

from controlplane.specs import SpecErrors
from jobs.spec import parse_job, render_command
from jobs.tests.support import job, targets_of

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
