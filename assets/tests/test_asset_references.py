"""assets/specs/references.py: every Azure ML reference form to one Reference, and every bad one to a message."""
import pytest

from assets.specs.references import InvalidReference, Reference, is_reference, parse_reference


@pytest.mark.parametrize("text, kind, expected", [
    ("azureml:my-model:1", "model", Reference("model", "my-model", version="1")),
    ("azureml:my-env:0.0.1-preview", None, Reference(None, "my-env", version="0.0.1-preview")),
    ("azureml:diabetes-dev-folder@latest", "data", Reference("data", "diabetes-dev-folder", label="latest")),
    ("azureml:my-data:latest", "data", Reference("data", "my-data", label="latest")),
    # Azure ML expands a curated environment's short form to its latest version; only those go without a version
    ("azureml:AzureML-sklearn-1.5", "environment", Reference("environment", "AzureML-sklearn-1.5", label="latest")),
    ("azureml:AzureML-sklearn-1.5@latest", "environment", Reference("environment", "AzureML-sklearn-1.5", label="latest")),
    ("azureml://registries/azureml/environments/sklearn-1.5/versions/14", "environment",
     Reference("environment", "sklearn-1.5", version="14", registry="azureml")),
    ("azureml://registries/azureml/environments/sklearn-1.5/labels/latest", None,
     Reference("environment", "sklearn-1.5", label="latest", registry="azureml")),
    ("azureml://registries/azureml/environment/sklearn-1.5/labels/latest", None,  # the docs' singular spelling
     Reference("environment", "sklearn-1.5", label="latest", registry="azureml")),
    ("azureml://registries/my-reg/models/bert/versions/3", "model", Reference("model", "bert", version="3", registry="my-reg")),
    ("azureml://registries/my-reg/data/iris/versions/1", "data", Reference("data", "iris", version="1", registry="my-reg")),
    ("azureml://locations/westus2/workspaces/00000000-1111-2222-3333-444444444444/models/m/versions/2", "model",
     Reference("model", "m", version="2", workspace="00000000-1111-2222-3333-444444444444")),
    ("azureml:/subscriptions/s/resourceGroups/rg/providers/Microsoft.MachineLearningServices/workspaces/ws/environments/e/versions/3",
     "environment", Reference("environment", "e", version="3", workspace="ws")),
    ("/subscriptions/s/resourcegroups/rg/providers/Microsoft.MachineLearningServices/workspaces/ws/data/d/versions/1",
     None, Reference("data", "d", version="1", workspace="ws")),
    ("azureml://jobs/mighty_pear_2rx8xk5b/outputs/artifacts/paths/model/", "model",
     Reference("job_output", "mighty_pear_2rx8xk5b", output="artifacts", path="model/")),
    ("azureml://jobs/j1/outputs/model_output/paths/", None, Reference("job_output", "j1", output="model_output", path="")),
    ("azureml://jobs/j1/outputs/model_output", None, Reference("job_output", "j1", output="model_output", path="")),
])
def test_each_form_reads_to_one_reference(text, kind, expected):
    assert parse_reference(text, kind) == expected


@pytest.mark.parametrize("text, words", [
    ("azureml:my-model", "names no version"),  # Azure ML: "Version must be provided"
    ("azureml:my-model@stable", "the one label is 'latest'"),
    ("azureml:my-model:", "not a version"),
    ("azureml::1", "not an asset name"),
    ("azureml:my model:1", "not an asset name"),
    ("azureml:-model:1", "not an asset name"),
    ("azureml:m:1:2", "not a version"),
    ("azureml:m:" + "9" * 31, "not a version"),
    ("azureml:" + "a" * 256 + ":1", "not an asset name"),
    ("my-model:1", "not an asset reference"),
    ("azureml://datastores/workspaceblobstore/paths/data/", "no datastores"),
    ("azureml://subscriptions/s/resourcegroups/r/workspaces/w/datastores/d/paths/p", "no datastores"),
    ("azureml://registries/azureml/components/c/versions/1", "not an asset kind"),
    ("azureml://registries/azureml/environments/sklearn-1.5", "not a registry reference"),
    ("azureml://registries/azureml/environments/sklearn-1.5/labels/stable", "the one label"),
    ("azureml://registries/azureml/models/m/versions/1", "names a model asset where an environment"),
    ("azureml://jobs/j1/outputs/artifacts/more", "not a job output"),
    ("azureml://jobs/j1/outputs/artifacts/paths/../../etc/passwd", "leaves the output's folder"),
    ("azureml://jobs/j1/outputs/artifacts/paths//etc/passwd", "is absolute"),
    ("azureml://jobs/../outputs/a/paths/x", "not a job name"),
    ("azureml://jobs/j1/outputs/a-b/paths/x", "not an output name"),
])
def test_bad_references_say_why(text, words):
    with pytest.raises(InvalidReference, match=None) as raised:
        parse_reference(text, "environment" if "models/m/" in text else None)
    assert words in str(raised.value)


@pytest.mark.parametrize("value", [
    None, 1, ["azureml:m:1"], {"name": "m"}, "", "   ",
    "azureml:m:1\x00", "azureml:m\n:1", "azureml:m:1\r\nX-Header: y",
    "azureml:mоdel:1",  # Cyrillic о: reads as 'model'
    "azureml：model：1",  # full-width colons
    "azureml:model:１",  # full-width digit
    "azureml:m:1\u200b",  # zero-width space
    "azureml:" + "a" * 100_000,
    "azureml://jobs/j/outputs/o/paths/" + "a/" * 5000,
    "azureml://registries/" + "r/" * 10_000,
    "\ud800",
])
def test_hostile_references_are_errors_never_exceptions(value):
    with pytest.raises(InvalidReference):
        parse_reference(value)


def test_the_message_shows_a_long_value_cut_short():
    with pytest.raises(InvalidReference) as raised:
        parse_reference("azureml:" + "x" * 300 + " :1")
    assert len(str(raised.value)) < 300


def test_a_version_named_latest_is_the_label():
    """No asset here may have the version 'latest' (the parsers refuse it), so `:latest` can only mean the label."""
    assert parse_reference("azureml:m:latest").label == "latest"
    assert parse_reference("azureml:m:latest").version is None


@pytest.mark.parametrize("value, expected", [
    ("azureml:m:1", True), ("azureml://registries/a/models/m/versions/1", True), ("/subscriptions/x", True),
    ("./src", False), ("python:3.11", False), (None, False), (3, False),
])
def test_is_reference_tells_references_from_paths_and_images(value, expected):
    assert is_reference(value) is expected


def test_references_are_frozen_and_hashable():
    reference = parse_reference("azureml:m:1")
    with pytest.raises(AttributeError):
        reference.name = "other"
    assert {reference: 1}[parse_reference("azureml:m:1")] == 1
