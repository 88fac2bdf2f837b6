"""Azure ML's model YAML → a validated, normalised model spec (pure: no Django, no I/O).

Fields are Azure ML's (azure-ai-ml's ModelSchema): name, version, path, type, description, tags, properties, stage.
`path` is a file or folder beside the YAML (uploaded like code) or a job's output
(`azureml://jobs/<job>/outputs/<output>/paths/<path>`, what `az ml model create --path` takes). Azure ML's model
versions are positive whole numbers (unlike data and environments, whose versions are free text); `type` is read in
any case, as Azure ML's schema lower-cases it.
"""
from assets.specs.common import (
    COMMON,
    DATASTORE_REFUSED,
    common_fields,
    drop_read_only,
    finish,
    local_path,
    uploaded_path,
)
from assets.specs.references import job_output_path
from controlplane.specs import SpecErrors, canonical_enum, limit_errors, string_map, unknown_fields

TYPES = ("custom_model", "mlflow_model", "triton_model")
DEFAULT_TYPE = "custom_model"
FIELDS = COMMON | {"path", "type", "properties", "stage"}
# `az ml model show -o yaml` writes these itself: dropped so a shown model can be created again.
SHOWN_ONLY = {"job_name", "flavors", "utc_time_created"}
REFUSED = {
    "datastore": DATASTORE_REFUSED,
    "intellectual_property": "Intellectual-property protection of registry models does not apply here; leave it out.",
    "system_metadata": "system_metadata is written by Azure ML's registries; leave it out.",
}
STORED_ONLY: dict[str, str] = {
    "properties": "Descriptive key/value pairs, kept and shown with the model like tags; Dockyard reads none.",
    "stage": "A label of the model's life cycle (Development, Production, Archived...), kept and shown; archiving is "
             "its own action (model archive).",
}


def parse_model(body: object) -> dict:
    """Validate a model body; returns the normalised spec or raises SpecErrors."""
    if not isinstance(body, dict):
        raise SpecErrors([("", "The body must be a mapping of model fields (Azure ML model YAML).")])
    errors: list[tuple[str, str]] = []
    body = {key: value for key, value in drop_read_only(body).items() if key not in SHOWN_ONLY}
    unknown_fields(body, FIELDS, errors, "'{key}' is not a model field.", refused=REFUSED)
    spec = common_fields(body, errors, "model")
    spec["version"] = _whole_version(spec["version"], errors)
    spec["type"] = _type(body.get("type", DEFAULT_TYPE), errors)
    spec["path"] = _path(body.get("path"), errors)
    spec["properties"] = string_map(body.get("properties"), "properties", errors)
    spec["stage"] = _stage(body.get("stage"), errors)
    errors.extend(row for row in limit_errors(spec) if row not in errors)
    if errors:
        raise SpecErrors(errors)
    return finish(spec)


def _whole_version(version: str | None, errors: list) -> str | None:
    if version is not None and (not version.isdigit() or int(version) < 1):
        errors.append(("version", f"A model's version is a whole number from 1 (Azure ML's rule), not {version!r}; "
                                  "leave it out to take the next one."))
        return None
    return str(int(version)) if version is not None else None  # "01" and 1 are the same version


def _type(value: object, errors: list) -> str:
    kind = canonical_enum(value, TYPES)
    if kind is None:
        errors.append(("type", f"A model's type is one of {', '.join(TYPES)}."))
        return DEFAULT_TYPE
    return kind


def _path(value: object, errors: list) -> dict | None:
    """{'local': path} beside the YAML, or {'job': name, 'output': name, 'path': inside} for a job's output."""
    if value is None or value == "":
        errors.append(("path", "path is required: the model's file or folder beside the YAML, or a job output "
                               "(azureml://jobs/<job>/outputs/<output>/paths/<path>)."))
        return None
    if uploaded_path(value):
        return uploaded_path(value)
    if isinstance(value, str) and value.startswith("azureml:"):
        return job_output_path(value, errors, "A model")
    if isinstance(value, str) and (value.startswith(("runs:/", "models:/")) or "://" in value):
        errors.append(("path", "A model's path is a file or folder beside the YAML (uploaded) or a job output "
                               "(azureml://jobs/...); URLs, datastores and MLflow run URIs are not read here: download "
                               "the model first."))
        return None
    local = local_path(value, "path", errors, "path")
    return {"local": local} if local else None



def _stage(value: object, errors: list) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > 255:
        errors.append(("stage", "stage is a short text (Development, Production, ...)."))
        return ""
    return value
