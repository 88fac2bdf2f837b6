"""assets/curated.py: Azure ML's curated environments resolve to their public images; unknown ones name close matches."""
import re

import pytest

from assets.curated import CURATED, UnknownCuratedEnvironment, curated_environment, curated_image, is_curated
from assets.specs.common import is_name
from assets.specs.references import parse_reference

SKLEARN_LATEST = "mcr.microsoft.com/azureml/curated/sklearn-1.5:latest"


@pytest.mark.parametrize("text, image", [
    ("azureml:AzureML-sklearn-1.5@latest", SKLEARN_LATEST),
    ("azureml:AzureML-sklearn-1.5", SKLEARN_LATEST),  # Azure ML expands the curated short form to the latest
    ("azureml:AzureML-sklearn-1.5:14", "mcr.microsoft.com/azureml/curated/sklearn-1.5:14"),
    ("azureml:azureml-SKLEARN-1.5@latest", SKLEARN_LATEST),
    ("azureml://registries/azureml/environments/sklearn-1.5/labels/latest", SKLEARN_LATEST),
    ("azureml://registries/azureml/environments/sklearn-1.5/versions/14", "mcr.microsoft.com/azureml/curated/sklearn-1.5:14"),
    ("azureml:AzureML-ACPT-pytorch-2.2-cuda12.1@latest", "mcr.microsoft.com/azureml/curated/acpt-pytorch-2.2-cuda12.1:latest"),
    ("azureml:AzureML-minimal-ubuntu22.04-py39-cpu-inference@latest",
     "mcr.microsoft.com/azureml/curated/minimal-ubuntu22.04-py39-cpu-inference:latest"),
    ("azureml:AzureML-tensorflow-2.16-cuda12@latest", "mcr.microsoft.com/azureml/curated/tensorflow-2.16-cuda12:latest"),
    ("azureml:AzureML-lightgbm-3.3@latest", "mcr.microsoft.com/azureml/curated/lightgbm-3.3:latest"),
    ("azureml:AzureML-sklearn-1.0-ubuntu20.04-py38-cpu@latest",
     "mcr.microsoft.com/azureml/curated/sklearn-1.0-ubuntu20.04-py38-cpu:latest"),
])
def test_curated_references_resolve_to_public_images(text, image):
    reference = parse_reference(text, "environment")
    assert is_curated(reference)
    assert curated_image(reference) == image


@pytest.mark.parametrize("text", ["azureml:my-env:1", "azureml://registries/team/environments/e/versions/1",
                                  "azureml:/subscriptions/s/resourceGroups/r/providers/Microsoft.MachineLearningServices/"
                                  "workspaces/w/environments/AzureML-x/versions/1"])
def test_workspace_and_other_registry_environments_are_not_curated(text):
    assert not is_curated(parse_reference(text, "environment"))


def test_an_unknown_curated_name_lists_close_matches():
    with pytest.raises(UnknownCuratedEnvironment) as raised:
        curated_image(parse_reference("azureml:AzureML-sklearn-1.6@latest"))
    assert "'AzureML-sklearn-1.6' is not one of Azure ML's curated environments" in str(raised.value)
    assert "AzureML-sklearn-1.5" in str(raised.value)


def test_an_unknown_name_with_nothing_close_says_how_many_are_known():
    with pytest.raises(UnknownCuratedEnvironment, match=f"knows {len(CURATED)} of them"):
        curated_image(parse_reference("azureml:AzureML-qqqqqqqqqqqq@latest"))


def test_another_registry_is_refused_by_name():
    with pytest.raises(UnknownCuratedEnvironment, match="Registry 'team' is not available here"):
        curated_environment(parse_reference("azureml://registries/team/environments/e/labels/latest"))


def test_the_table_holds_registry_names_shown_with_azure_mls_workspace_names():
    assert len(CURATED) >= 50
    for name, row in CURATED.items():
        assert name == row.name == name.lower() and is_name(name) and not name.startswith("azureml")
        assert row.purpose in ("training", "inference")
        assert row.workspace_name.lower() == "azureml-" + name
        assert re.fullmatch(r"mcr\.microsoft\.com/azureml/curated/[a-z0-9._-]+:latest", row.image())
    assert CURATED["acpt-pytorch-2.2-cuda12.1"].workspace_name == "AzureML-ACPT-pytorch-2.2-cuda12.1"
