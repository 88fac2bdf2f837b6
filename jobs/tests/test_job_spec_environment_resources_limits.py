"""jobs/spec.py: environment, environment_variables, resources, distribution and limits, valid and refused by path."""
import pytest

from controlplane.specs import SpecErrors
from jobs.spec import parse_job
from jobs.tests.support import job, targets_of

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
        ("azureml:my-env", "environment"),
        ("azureml:my-env@stable", "environment"),
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
