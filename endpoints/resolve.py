"""What a deployment's `model:` names in its workspace: a registered model's snapshot or an uploaded one, within the
bounds a deployment's model may have.

Called by endpoints.services only; every problem is a SpecErrors at the field, raised before anything is written.
"""
from django.conf import settings

from assets import services as assets
from assets.models import Snapshot
from assets.specs.references import InvalidReference, is_reference, parse_reference
from assets.specs.snapshots import upload_sha256
from controlplane.api import BadRequest
from controlplane.specs import SpecErrors, unknown_fields
from workspaces.models import Workspace

from .model_spec import SHOWN_FIELDS, bounds_problems, is_stored


def resolved_model_body(workspace: Workspace, body: object) -> object:
    """The body with a registered `model` replaced by what it resolves to: {reference, name, version, type, path}.

    A model written as a reference is resolved now (`@latest`: the latest version today); one sent back as shown
    ({reference, version, …}) keeps the version it was resolved to, so a PATCH of another field moves nothing.
    """
    model = body.get("model") if isinstance(body, dict) else None
    if is_reference(model) and not upload_sha256(model):
        reference, named = model, model
    elif isinstance(model, dict) and "reference" in model:
        errors: list = []
        unknown_fields(model, SHOWN_FIELDS, errors, "'{key}' is not a field of a registered model here.", "model.")
        if errors:
            raise SpecErrors(errors)
        reference = model["reference"]
        named = _pinned(reference, model.get("version"))
    else:
        return body
    try:
        record = assets.resolve_model(workspace, named, target="model")
    except BadRequest as exc:
        raise SpecErrors([("model", str(exc.detail))]) from None
    resolved = {"reference": reference, "name": record.name, "version": record.version, "type": record.type,
                "path": record.path}
    return {**body, "model": resolved}


def _pinned(reference: object, version: object) -> object:
    """`azureml:<name>:<version>` for a shown `@latest` model that says its version; the reference itself otherwise."""
    try:
        parsed = parse_reference(reference, "model")
    except InvalidReference:
        return reference  # resolve_model says what is wrong with it
    if parsed.label and isinstance(version, str) and version and parsed.registry is None:
        return f"azureml:{parsed.name}:{version}"
    return reference


def model_problems(workspace: Workspace, spec: dict) -> list[tuple[str, str]]:
    """A stored model must be a snapshot of this workspace, within DOCKYARD_DEPLOYMENT_MODEL_MAX_FILES / _BYTES."""
    model = spec.get("model")
    if not is_stored(model):
        return []
    target = "model" if "reference" in model else "model.path"
    row = (Snapshot.objects.filter(workspace=workspace, sha256=upload_sha256(model["path"]))
           .values("size", "file_count").first())
    if row is None:
        return [(target, f"{model['path']} is not an upload of workspace '{workspace.name}': upload the model first "
                         "(POST uploads/; the CLI does it for a local path).")]
    return bounds_problems(row["file_count"], row["size"], settings.DOCKYARD_DEPLOYMENT_MODEL_MAX_FILES,
                           settings.DOCKYARD_DEPLOYMENT_MODEL_MAX_BYTES, target)
