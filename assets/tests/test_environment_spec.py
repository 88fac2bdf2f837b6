"""assets/specs/environment.py: Azure ML's environment YAML examples load; every problem is named by its field."""
import pytest

from assets.specs.environment import FIELDS, STORED_ONLY, parse_environment
from assets.tests.examples import example, fields_of, read_beside_examples
from controlplane.specs import SpecErrors

PYDATA = {"name": "pydata", "channels": ["conda-forge"],
          "dependencies": ["python=3.10", "numpy", "pip", {"pip": ["scikit-learn==1.5.1", "pandas"]}]}


def env(**fields) -> dict:
    return {"name": "my-env", "image": "python:3.11-slim", **fields}


def refused(body, **options) -> list[str]:
    with pytest.raises(SpecErrors) as raised:
        parse_environment(body, **options)
    return fields_of(raised)


def message(body, **options) -> str:
    with pytest.raises(SpecErrors) as raised:
        parse_environment(body, **options)
    return " ".join(text for _, text in raised.value.errors)


# Azure ML's published examples (cli/assets/environment)


def test_docker_image_example():
    assert parse_environment(example("environment-docker-image.yml")) == {
        "name": "docker-image-example", "version": None, "image": "pytorch/pytorch:latest",
        "description": "Environment created from a Docker image."}


def test_docker_image_plus_conda_example_reads_the_conda_file_beside_the_yaml():
    spec = parse_environment(example("environment-docker-image-plus-conda.yml"), read_conda_file=read_beside_examples)
    assert spec["image"] == "mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu20.04"
    assert spec["conda_file"] == PYDATA


def test_a_conda_file_path_without_a_reader_is_refused_with_what_to_do():
    assert "send the conda file inline" in message(example("environment-docker-image-plus-conda.yml"))


def test_docker_context_example_is_refused_with_the_builder_named_unless_one_is_configured():
    text = message(example("environment-docker-context.yml"))
    assert "Docker builds are not configured here" in text and "BuildKit or Kaniko" in text
    assert parse_environment(example("environment-docker-context.yml"), builder=True)["build"] == {
        "path": "docker-contexts/python-and-pip", "dockerfile_path": "Dockerfile"}


def test_inline_conda_version_number_and_os_type_in_any_case():
    spec = parse_environment(example("environment-inline-conda.yml"))
    assert spec["version"] == "2" and spec["os_type"] == "linux" and spec["tags"] == {"team": "vision"}
    assert spec["conda_file"]["dependencies"][1] == {"pip": ["mlflow"]}


def test_inference_environment_keeps_its_routes():
    spec = parse_environment(example("environment-inference.yml"))
    assert spec["inference_config"]["scoring_route"] == {"port": 8501, "path": "/v1/models/half_plus_two:predict"}


# refusals, each by field


@pytest.mark.parametrize("body, field", [
    ({"image": "python:3.11"}, "name"),
    (env(name="AzureML-mine"), "name"),
    (env(name="microsoft-env"), "name"),
    (env(name="my env"), "name"),
    (env(version="latest"), "version"),
    (env(version=True), "version"),
    (env(version=".nan"), "version"),
    (env(version=float("inf")), "version"),
    (env(version="1" * 31), "version"),
    ({"name": "e"}, "image"),
    (env(image="python 3.11"), "image"),
    (env(image=["python"]), "image"),
    (env(os_type="windows"), "os_type"),
    (env(os_type="macos"), "os_type"),
    (env(datastore="workspaceblobstore"), "datastore"),
    (env(channels=["conda-forge"]), "channels"),
    (env(dependencies=["numpy"]), "dependencies"),
    (env(imagee="x"), "imagee"),
    (env(conda_file=["numpy"]), "conda_file"),
    (env(conda_file={"dependencies": "numpy"}), "conda_file.dependencies"),
    (env(conda_file={"dependencies": [{"pip": "numpy"}]}), "conda_file.dependencies.0"),
    (env(conda_file={"dependencies": [{"pip": ["-r requirements.txt"]}]}), "conda_file.dependencies.0.pip.0"),
    (env(conda_file={"dependencies": [{"pip": ["-e ."]}]}), "conda_file.dependencies.0.pip.0"),
    (env(conda_file={"dependencies": [{"pip": ["../wheels/x.whl"]}]}), "conda_file.dependencies.0.pip.0"),
    (env(conda_file={"prefix": "/opt/conda/envs/x"}), "conda_file.prefix"),
    (env(conda_file={"channel": ["x"]}), "conda_file.channel"),
    (env(conda_file="../../etc/passwd"), "conda_file"),
    (env(conda_file="/etc/passwd"), "conda_file"),
    (env(inference_config={"scoring_route": {"port": 0, "path": "x"}}), "inference_config.scoring_route.port"),
    (env(inference_config={"scoring_route": {"port": 80, "path": "/s"}}), "inference_config.liveness_route"),
    (env(tags={"a": {"b": 1}}), "tags.a"),
    (env(properties=["x"]), "properties"),
])
def test_problems_are_named_by_field(body, field):
    assert field in refused(body)


def test_build_is_an_alternative_to_image_and_conda_file():
    assert "build" in refused(env(build={"path": "ctx"}), builder=True)


@pytest.mark.parametrize("path", ["../ctx", "/abs/ctx", "C:\\ctx", "~/ctx", "ctx\x00"])
def test_build_context_stays_beside_the_yaml(path):
    assert "build.path" in refused({"name": "e", "build": {"path": path}}, builder=True)


def test_build_dockerfile_stays_inside_the_context():
    assert "build.dockerfile_path" in refused({"name": "e", "build": {"path": "c", "dockerfile_path": "../D"}}, builder=True)


def test_all_problems_come_back_at_once():
    assert sorted(refused({"name": "AzureML-x", "version": "latest", "image": "a b", "os_type": "windows"})) == [
        "image", "name", "os_type", "version"]


def test_read_only_fields_of_a_shown_environment_are_dropped():
    shown = env(id="azureml:/subscriptions/s/.../environments/my-env/versions/1", creation_context={"created_by": "x"},
                latest_version="3")
    assert parse_environment(shown) == {"name": "my-env", "version": None, "image": "python:3.11-slim"}


def test_not_a_mapping():
    with pytest.raises(SpecErrors):
        parse_environment(["name", "image"])


# hostile bodies


def test_a_huge_description_is_refused_by_length():
    assert refused(env(description="x" * 100_000)) == ["description"]


def test_a_huge_conda_file_is_refused_by_size():
    conda = {"dependencies": [f"package{i}==1.0.{i}" for i in range(40_000)]}
    assert refused(env(conda_file=conda)) == ["conda_file"]


def test_a_conda_file_reader_that_returns_something_odd_is_an_error():
    assert "conda_file" in refused(env(conda_file="env.yml"), read_conda_file=lambda path: "not a mapping")


def test_every_stored_only_field_is_an_accepted_field():
    assert set(STORED_ONLY) <= FIELDS
