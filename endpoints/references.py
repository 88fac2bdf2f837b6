"""The snapshots deployments still name, for artifact collection (registered with assets.references in ready())."""
from assets.references import named_uploads

from .models import OnlineDeployment


def code_snapshots():
    """spec.code_configuration.code: `azureml://uploads/<sha256>`."""
    return named_uploads(OnlineDeployment.objects
                         .filter(spec__code_configuration__code__startswith="azureml://uploads/")
                         .values_list("endpoint__workspace_id", "spec__code_configuration__code").iterator())


def model_snapshots():
    """spec.model.path: `azureml://uploads/<sha256>`, a registered model's or an inline upload's."""
    return named_uploads(OnlineDeployment.objects
                         .filter(spec__model__path__startswith="azureml://uploads/")
                         .values_list("endpoint__workspace_id", "spec__model__path").iterator())


PROVIDERS = (  # one line a reference
    code_snapshots,
    model_snapshots,
)
