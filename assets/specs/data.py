"""Azure ML's data YAML → a validated, normalised data-asset spec (pure: no Django, no I/O).

Fields are Azure ML's (azure-ai-ml's DataSchema): name, version, type, path, description, tags. `type` is uri_file or
uri_folder (the default), spelled exactly: Azure ML's data schema checks it as written (OneOf), unlike the job
schemas that lower-case. `path` is a file or folder beside the YAML (uploaded), an https:// URL (fetched when a job
reads it), or a job's output (azureml://jobs/<job>/outputs/<output>/paths/<path>).
"""
from urllib.parse import urlsplit

from assets.specs.common import (
    COMMON,
    DATASTORE_REFUSED,
    MAX_PATH,
    URL_SCHEME,
    common_fields,
    drop_read_only,
    finish,
    local_path,
    uploaded_path,
)
from assets.specs.references import job_output_path
from controlplane.specs import SpecErrors, limit_errors, unknown_fields

TYPES = ("uri_file", "uri_folder")
DEFAULT_TYPE = "uri_folder"
FIELDS = COMMON | {"type", "path"}
SHOWN_ONLY = {"properties"}  # dump-only in Azure ML's data schema: `az ml data show` writes it, create ignores it
MLTABLE_REFUSED = ("mltable data assets are not supported here: their MLTable file is read by Azure ML's mltable "
                   "library at run time; use uri_folder (or uri_file) and read the files in the job.")
STORED_ONLY: dict[str, str] = {}


def parse_data(body: object) -> dict:
    """Validate a data-asset body; returns the normalised spec or raises SpecErrors."""
    if not isinstance(body, dict):
        raise SpecErrors([("", "The body must be a mapping of data fields (Azure ML data YAML).")])
    errors: list[tuple[str, str]] = []
    body = {key: value for key, value in drop_read_only(body).items() if key not in SHOWN_ONLY}
    unknown_fields(body, FIELDS, errors, "'{key}' is not a data field.", refused={"datastore": DATASTORE_REFUSED})
    spec = common_fields(body, errors, "data asset")
    spec["type"] = _type(body.get("type", DEFAULT_TYPE), errors)
    spec["path"] = _path(body.get("path"), spec["type"], errors)
    errors.extend(row for row in limit_errors(spec) if row not in errors)
    if errors:
        raise SpecErrors(errors)
    return finish(spec)


def _type(value: object, errors: list) -> str | None:
    if value in TYPES:
        return value
    if value == "mltable":
        errors.append(("type", MLTABLE_REFUSED))
    elif isinstance(value, str) and value.lower() in TYPES:
        errors.append(("type", f"type is spelled in lower case, as Azure ML reads it: {value.lower()}."))
    else:
        errors.append(("type", "A data asset's type is uri_file or uri_folder."))
    return None


def _path(value: object, kind: str | None, errors: list) -> dict | None:
    """{'local': path}, {'url': https URL} or {'job': name, 'output': name, 'path': inside}."""
    if value is None or value == "":
        errors.append(("path", "path is required: a file or folder beside the YAML, an https:// URL, or a job output."))
        return None
    if uploaded_path(value):
        return uploaded_path(value)
    if isinstance(value, str) and value.startswith("azureml:"):
        return job_output_path(value, errors, "A data asset")
    if isinstance(value, str) and URL_SCHEME.match(value):
        return _url(value, kind, errors)
    local = local_path(value, "path", errors, "path")
    if local and kind == "uri_file" and local.endswith("/"):
        errors.append(("path", "A uri_file's path names a file, not a folder (no trailing '/')."))
        return None
    return {"local": local} if local else None


def _url(value: str, kind: str | None, errors: list) -> dict | None:
    parts = urlsplit(value) if len(value) <= MAX_PATH and value.isascii() else None
    if parts is None or parts.scheme != "https" or not parts.hostname or parts.username or parts.password:
        errors.append(("path", "URLs are https:// addresses without credentials (wasbs://, abfss://, s3:// and "
                               "datastores are not read here)."))
        return None
    if any(ord(char) < 33 for char in value):
        errors.append(("path", "A URL has no spaces or control characters."))
        return None
    if kind == "uri_file" and parts.path.endswith("/"):
        errors.append(("path", "A uri_file's URL names a file, not a folder (no trailing '/')."))
        return None
    return {"url": value}

