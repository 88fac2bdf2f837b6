"""assets/specs/model.py and data.py: Azure ML's model and data YAML examples load; bad paths and types are named."""
import pytest
import yaml

from assets.specs import data, model
from assets.specs.data import parse_data
from assets.specs.model import parse_model
from assets.tests.examples import example, fields_of
from controlplane.parsers import YAMLRefused, load_yaml
from controlplane.specs import SpecErrors


def refused(parse, body) -> list[str]:
    with pytest.raises(SpecErrors) as raised:
        parse(body)
    return fields_of(raised)


# models (cli/assets/model)


def test_local_file_model_example():
    assert parse_model(example("model-local-file.yml")) == {
        "name": "local-file-example", "version": None, "description": "Model created from local file.",
        "type": "custom_model", "path": {"local": "mlflow-model/model.pkl"}}


def test_local_mlflow_model_example():
    assert parse_model(example("model-local-mlflow.yml"))["type"] == "mlflow_model"


def test_model_from_a_job_output():
    spec = parse_model(example("model-from-job.yml"))
    assert spec["version"] == "1"
    assert spec["path"] == {"job": "mighty_pear_2rx8xk5b", "output": "artifacts", "path": "model/"}


@pytest.mark.parametrize("written, stored", [("MLFLOW_MODEL", "mlflow_model"), ("Triton_Model", "triton_model")])
def test_model_type_in_any_case(written, stored):
    assert parse_model({"name": "m", "path": "m", "type": written})["type"] == stored


def test_model_stage_and_properties_are_kept():
    spec = parse_model({"name": "m", "path": "m", "stage": "Production", "properties": {"auc": 0.91}})
    assert spec["stage"] == "Production" and spec["properties"] == {"auc": "0.91"}


def test_shown_model_fields_are_dropped():
    shown = {"name": "m", "path": "m", "id": "x", "job_name": "j", "flavors": {"python_function": {}},
             "creation_context": {}, "latest_version": "2"}
    assert set(parse_model(shown)) == {"name", "version", "type", "path"}


@pytest.mark.parametrize("body, field", [
    ({"path": "m"}, "name"),
    ({"name": "m"}, "path"),
    ({"name": "m", "path": "m", "version": "1.0"}, "version"),  # Azure ML: model versions are whole numbers
    ({"name": "m", "path": "m", "version": 0}, "version"),
    ({"name": "m", "path": "m", "type": "onnx_model"}, "type"),
    ({"name": "m", "path": "m", "datastore": "workspaceblobstore"}, "datastore"),
    ({"name": "m", "path": "m", "flavours": {}}, "flavours"),
    ({"name": "m", "path": "../outside"}, "path"),
    ({"name": "m", "path": "/etc"}, "path"),
    ({"name": "m", "path": "https://example.org/model.pkl"}, "path"),
    ({"name": "m", "path": "runs:/abc/model"}, "path"),
    ({"name": "m", "path": "azureml:other-model:1"}, "path"),
    ({"name": "m", "path": "azureml://datastores/ds/paths/m"}, "path"),
    ({"name": "m", "path": "azureml://jobs/j/outputs/o/paths/../../x"}, "path"),
    ({"name": "m", "path": "m", "stage": ["x"]}, "stage"),
])
def test_model_problems_are_named_by_field(body, field):
    assert field in refused(parse_model, body)


def test_model_versions_are_read_as_numbers():
    assert parse_model({"name": "m", "path": "m", "version": "007"})["version"] == "7"


# data (cli/assets/data)


@pytest.mark.parametrize("name, kind, path", [
    ("data-local-file.yml", "uri_file", {"local": "sample-data/titanic.csv"}),
    ("data-local-folder.yml", "uri_folder", {"local": "sample-data/"}),
    ("data-cloud-file-https.yml", "uri_file", {"url": "https://azuremlexamples.blob.core.windows.net/datasets/iris.csv"}),
])
def test_data_examples(name, kind, path):
    spec = parse_data(example(name))
    assert (spec["type"], spec["path"]) == (kind, path)


def test_data_type_defaults_to_uri_folder_and_version_is_text():
    assert parse_data({"name": "d", "path": "./d", "version": 1.5}) == {
        "name": "d", "version": "1.5", "type": "uri_folder", "path": {"local": "d"}}


def test_data_from_a_job_output():
    assert parse_data({"name": "d", "path": "azureml://jobs/j1/outputs/scores/paths/scores.csv", "type": "uri_file"})[
        "path"] == {"job": "j1", "output": "scores", "path": "scores.csv"}


def test_mltable_is_refused_with_the_reason():
    with pytest.raises(SpecErrors) as raised:
        parse_data(example("data-mltable.yml"))
    assert "mltable data assets are not supported here" in raised.value.errors[0][1]


def test_wasbs_is_refused():
    assert refused(parse_data, example("data-cloud-folder-wasbs.yml")) == ["path"]


@pytest.mark.parametrize("body, field", [
    ({"name": "d", "path": "d", "type": "URI_FILE"}, "type"),  # Azure ML's data schema checks the spelling as written
    ({"name": "d", "path": "d", "type": "uri_table"}, "type"),
    ({"name": "d", "path": "dir/", "type": "uri_file"}, "path"),
    ({"name": "d", "path": "https://example.org/dir/", "type": "uri_file"}, "path"),
    ({"name": "d", "path": "http://example.org/a.csv"}, "path"),
    ({"name": "d", "path": "https://user:secret@example.org/a.csv"}, "path"),
    ({"name": "d", "path": "https:///a.csv"}, "path"),
    ({"name": "d", "path": "https://example.org/a b.csv"}, "path"),
    ({"name": "d", "path": "s3://bucket/key"}, "path"),
    ({"name": "d", "path": "azureml:other:1"}, "path"),
    ({"name": "d", "path": "azureml://datastores/ds/paths/x"}, "path"),
    ({"name": "d", "path": "a/../../b"}, "path"),
    ({"name": "d", "path": "a\\..\\..\\b"}, "path"),
    ({"name": "d", "path": "d", "datastore": "x"}, "datastore"),
    ({"name": "d", "path": "d", "version": "latest"}, "version"),
    ({"name": "d"}, "path"),
    ({"path": "d"}, "name"),
])
def test_data_problems_are_named_by_field(body, field):
    assert field in refused(parse_data, body)


def test_data_properties_are_written_by_azure_ml_and_dropped():
    assert "properties" not in parse_data({"name": "d", "path": "d", "properties": {"x": "y"}})


def test_stored_only_fields_are_accepted_fields():
    assert set(model.STORED_ONLY) <= model.FIELDS and set(data.STORED_ONLY) <= data.FIELDS


# hostile YAML, through the loader every body goes through


def test_yaml_aliases_are_refused_before_the_parsers_see_them():
    with pytest.raises(YAMLRefused):
        load_yaml("name: &n d\npath: *n\n")


def test_deep_nesting_is_refused_by_the_loader():
    with pytest.raises(yaml.YAMLError):
        load_yaml("name: d\ntags: " + "[" * 100 + "]" * 100)


@pytest.mark.parametrize("body", [
    {"name": "d\x00", "path": "d"}, {"name": "d", "path": "d\x00"}, {"name": "d", "path": "x" * 5000},
    {"name": ["d"], "path": {"a": "b"}, "type": None, "version": {}}, {"name": "d", "path": "d", 3: "x"},
])
def test_hostile_bodies_are_spec_errors_never_exceptions(body):
    with pytest.raises(SpecErrors):
        parse_data(body)
    with pytest.raises(SpecErrors):
        parse_model(body)
