"""The studio's asset forms: Azure ML's asset YAML pasted (one document), an example per kind, and a version's spec
written back as the file people keep (`$schema` first, Azure ML's key order)."""
from .fields import BoundField, Field
from .yaml import pasted_document

SCHEMAS = {kind: f"https://azuremlschemas.azureedge.net/latest/{kind}.schema.json" for kind in ("environment", "model", "data")}
KEY_ORDER = ("name", "version", "description", "type", "path", "image", "conda_file", "os_type", "inference_config",
             "stage", "properties", "tags")
EXAMPLES = {
    "environment": f"""$schema: {SCHEMAS['environment']}
name: sklearn-env
version: "1"
image: python:3.11-slim
description: scikit-learn on Python 3.11
""",
    "model": f"""$schema: {SCHEMAS['model']}
name: credit-model
version: "1"
type: custom_model
path: ./model
description: pick the model's folder (or a .zip / .tar.gz) below
""",
    "data": f"""$schema: {SCHEMAS['data']}
name: titanic
version: "1"
type: uri_folder
path: ./data
description: pick the folder below, or give an https:// URL as path
""",
}
FILES_HELP = {
    "model": "The model's folder or archive: it becomes the version's path (azureml://uploads/<sha256>) whatever "
             "`path` the YAML gives.",
    "data": "A folder or archive for a uri_folder or uri_file: it becomes the version's path (azureml://uploads/<sha256>); "
            "leave it empty when `path` is an https:// URL.",
}


def pasted_asset(text: str, noun: str) -> object:
    """Pasted YAML as one asset body; refuses text that is not YAML or holds several documents."""
    return pasted_document(text, empty=f"Paste a {noun}'s YAML: at least `name`.",
                           several=f"Paste one {noun} per registration")


def files_field(noun: str, errors: list[dict]) -> BoundField | None:
    """The files picker of a model or data form, with the errors about `path` (None for environments)."""
    if noun not in FILES_HELP:
        return None
    messages = [row["message"] for row in errors if row["target"] == "path"]
    return BoundField(Field("path", "Files", "upload", help=FILES_HELP[noun]), "", messages)


def spec_document(noun: str, spec: dict) -> dict:
    """A version's spec as its YAML file: `$schema`, then Azure ML's key order, then anything else kept."""
    body = {"$schema": SCHEMAS[noun]}
    for key in (*KEY_ORDER, *spec):
        if key not in body and spec.get(key) not in (None, "", {}, []):
            body[key] = spec[key]
    return body
