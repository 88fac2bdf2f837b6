"""Azure ML's curated environments → their public images: a shipped table of facts, and resolution of the references
that name them (pure: no Django, no network).

Sources (public, read when this table was written):
- Azure/azureml-assets, the repository Azure ML publishes its curated environments from: each environment's
  `asset.yaml` gives the registry name (`name: sklearn-1.5`) and its `environment.yaml` the image
  (`image.name: azureml/curated/sklearn-1.5`, `publish.location: mcr`, `visibility: public`), so the image is
  `mcr.microsoft.com/azureml/curated/<registry name>:<version>`, and `latest` names the newest.
- Azure ML's docs "Manage environments" / "curated environments": curated environments live in the registry
  `azureml` (`azureml://registries/azureml/environments/<name>/versions/<version>` or `/labels/latest`), and a
  workspace shows each one as `AzureML-<name>` (`azureml:AzureML-sklearn-1.5@latest`); azure-ai-ml passes names
  starting `AzureML-` through as curated (CURATED_ENV_PREFIX).
- Older names still written in Azure/azureml-examples job files (e.g. `AzureML-sklearn-1.0-ubuntu20.04-py38-cpu`,
  `AzureML-pytorch-1.10-ubuntu18.04-py38-cuda11-gpu`), whose images are published under the same rule.
A workspace name is `AzureML-` + the registry name in any case (`AzureML-ACPT-pytorch-2.2-cuda12.1` is
`acpt-pytorch-2.2-cuda12.1`): names are compared case-insensitively here, as only the case differs.
"""
import difflib
from dataclasses import dataclass

from assets.specs.references import CURATED_PREFIX, LATEST, Reference

REGISTRY = "azureml"
IMAGE_REPOSITORY = "mcr.microsoft.com/azureml/curated"

TRAINING = (
    "sklearn-1.0", "sklearn-1.1", "sklearn-1.5",
    "lightgbm-3.3",
    "tensorflow-2.11-cuda11", "tensorflow-2.12-cuda11", "tensorflow-2.16-cuda11", "tensorflow-2.16-cuda12",
    "acpt-pytorch-1.11-cuda11.3", "acpt-pytorch-1.12-cuda11.6", "acpt-pytorch-1.12-py39-cuda11.6",
    "acpt-pytorch-1.13-cuda11.7", "acpt-pytorch-2.0-cuda11.7", "acpt-pytorch-2.1-cuda12.1",
    "acpt-pytorch-2.2-cuda12.1", "acpt-pytorch-2.2-cuda12.1-profiler", "acpt-pytorch-2.3-cuda12.1",
    "acpt-pytorch-2.4-cuda12.1", "acpt-pytorch-2.4-cuda12.4", "acpt-pytorch-2.5-cuda12.4",
    "acpt-pytorch-2.7-cuda12.6", "acpt-pytorch-2.8-cuda12.6",
    "acft-hf-nlp-gpu",
    "ai-ml-automl", "ai-ml-automl-gpu", "ai-ml-automl-dnn", "ai-ml-automl-dnn-gpu", "ai-ml-automl-dnn-text-gpu",
    "ai-ml-automl-dnn-vision-gpu", "ai-ml-automl-dnn-forecasting-gpu",
    "responsibleai-ubuntu20.04-py38-cpu", "responsibleai-tabular", "responsibleai-text", "responsibleai-vision",
)
INFERENCE = (
    "minimal-ubuntu20.04-py38-cpu-inference", "minimal-ubuntu20.04-py39-cpu-inference",
    "minimal-ubuntu20.04-py311-cpu-inference", "minimal-ubuntu22.04-py39-cpu-inference",
    "minimal-ubuntu22.04-py311-cpu-inference", "minimal-ubuntu20.04-py38-cuda11.6.2-gpu-inference",
    "minimal-ubuntu22.04-py39-cuda11.8-gpu-inference", "minimal-py311-inference", "minimal-py312-cuda11.8-inference",
    "minimal-py312-cuda12.4-inference", "mlflow-ubuntu20.04-py39-cpu-inference", "mlflow-ubuntu22.04-py312-cpu-inference",
    "mlflow-py312-inference", "foundation-model-inference",
)
# Names of earlier releases that Azure ML's example job files still use.
EARLIER = (
    "sklearn-0.24-ubuntu18.04-py37-cpu", "sklearn-1.0-ubuntu20.04-py38-cpu", "pytorch-1.10-ubuntu18.04-py38-cuda11-gpu",
    "tensorflow-2.4-ubuntu18.04-py37-cuda11-gpu", "acpt-pytorch-1.11-py38-cuda11.5-gpu", "pytorch-1.13-cuda11.7",
)


class UnknownCuratedEnvironment(ValueError):
    """A reference to a curated environment that is not in the table; the message names close matches."""


@dataclass(frozen=True)
class CuratedEnvironment:
    """One curated environment: its name in registry `azureml` and what it is for."""

    name: str  # registry name, lower case: sklearn-1.5
    purpose: str  # training or inference

    @property
    def workspace_name(self) -> str:
        """How a workspace lists it: AzureML-sklearn-1.5 (ACPT upper-cased, as Azure ML shows it)."""
        return "AzureML-" + (self.name.replace("acpt-", "ACPT-", 1) if self.name.startswith("acpt-") else self.name)

    def image(self, version: str | None = None) -> str:
        """The public image of a version (or the newest, `latest`)."""
        return f"{IMAGE_REPOSITORY}/{self.name}:{version or LATEST}"


CURATED: dict[str, CuratedEnvironment] = {
    name: CuratedEnvironment(name, purpose)
    for names, purpose in ((TRAINING, "training"), (INFERENCE, "inference"), (EARLIER, "training"))
    for name in names
}


def is_curated(reference: Reference) -> bool:
    """True when `reference` means one of Azure ML's curated environments (known or not): `AzureML-…` or registry azureml."""
    return reference.kind in (None, "environment") and (
        reference.registry == REGISTRY or (reference.registry is None and reference.workspace is None
                                           and reference.name.lower().startswith(CURATED_PREFIX)))


def curated_environment(reference: Reference) -> CuratedEnvironment:
    """The table's row for a curated reference; raises UnknownCuratedEnvironment naming close matches."""
    if reference.registry not in (None, REGISTRY):
        raise UnknownCuratedEnvironment(f"Registry '{reference.registry}' is not available here: only Azure ML's "
                                        f"curated environments (registry {REGISTRY}) are.")
    key = reference.name.lower()
    if reference.registry is None:
        key = key.removeprefix(CURATED_PREFIX)
    row = CURATED.get(key)
    if row is None:
        raise UnknownCuratedEnvironment(_unknown_message(reference.name, key))
    return row


def curated_image(reference: Reference) -> str:
    """The image a curated environment reference runs: `mcr.microsoft.com/azureml/curated/<name>:<version|latest>`."""
    return curated_environment(reference).image(reference.version)


def _unknown_message(written: str, key: str) -> str:
    close = difflib.get_close_matches(key, list(CURATED), n=3, cutoff=0.6)
    shown = ", ".join(CURATED[name].workspace_name for name in close)
    hint = f" Did you mean {shown}?" if close else f" Dockyard knows {len(CURATED)} of them (see assets/curated.py)."
    return f"'{written}' is not one of Azure ML's curated environments known here.{hint}"
