"""The snapshots jobs still name, for artifact collection (registered with assets.references in JobsConfig.ready)."""
from assets.references import named_uploads

from .models import Job


def code_snapshots():
    """spec.code: `azureml://uploads/<sha256>`."""
    return named_uploads(Job.objects.filter(spec__code__startswith="azureml://uploads/")
                         .values_list("workspace_id", "spec__code").iterator())


def input_snapshots():
    """resolved_inputs.<name>.snapshot: a sha256."""
    for workspace_id, inputs in Job.objects.exclude(resolved_inputs={}).values_list("workspace_id", "resolved_inputs").iterator():
        for resolved in (inputs or {}).values():
            if isinstance(resolved, dict) and isinstance(resolved.get("snapshot"), str):
                yield workspace_id, resolved["snapshot"]


def output_snapshots():
    """outputs_snapshot (a foreign key, PROTECT)."""
    return Job.objects.exclude(outputs_snapshot=None).values_list("workspace_id", "outputs_snapshot__sha256").iterator()


PROVIDERS = (  # one line a reference
    code_snapshots,
    input_snapshots,
    output_snapshots,
)
