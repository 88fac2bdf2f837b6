"""A deployment's `model` and `model_mount_path` → validated specs, and where the model is shown to the server (pure).

`model` is one of:
- a registered model, `azureml:<name>:<version>` or `azureml:<name>@latest` (any form assets.specs.references reads),
  which the service resolves to `{reference, name, version, type, path}` before this parser sees it (endpoints/
  resolve.py: a shown model sent back keeps its version, a reference written as text is resolved again);
- an inline model whose `path` is an upload of the workspace (`azureml://uploads/<sha256>`, what the CLI sends for a
  local path beside the YAML file), with `type` and optionally `name` and `version` (its folder under the models root);
- a path: a folder on the Dockyard host (local deployments) or inside the image (Kubernetes), as before.

Azure ML's layout is kept: AZUREML_MODEL_DIR is /var/azureml-app/azureml-models/<name>/<version>, and the snapshot is
written out as it was uploaded, so a folder model keeps its folder's name inside it (the CLI packs a model folder
under its own name, as Azure ML uploads it).
"""
from pathlib import PurePosixPath

from assets.specs.common import is_name
from assets.specs.references import InvalidReference, is_reference, parse_reference
from assets.specs.snapshots import upload_sha256
from controlplane.specs import unknown_fields

MODEL_TYPES = ("custom_model", "mlflow_model")
MODELS_ROOT = "/var/azureml-app/azureml-models"
DEFAULT_NAME, DEFAULT_VERSION = "model", "1"  # an inline model without a name, as Azure ML shows an anonymous one
CODE_DIR = "/var/azureml-app/code"  # where uploaded code is shown: a model mounted over or in it would hide it
INLINE_FIELDS = {"path", "type", "name", "version"}
SHOWN_FIELDS = {"reference", "name", "version", "type", "path"}
TRITON = ("Triton models need NVIDIA Triton Inference Server, which Dockyard does not run: deploy the model as "
          "custom_model with a scoring script (or an image serving it).")
# A model mounted over any of these would hide what the server needs to start (or the kernel's own files).
SYSTEM = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/proc", "/run", "/sbin",
          "/sys", "/usr", CODE_DIR)
NOT_OVER = ("/tmp", "/var/azureml-app")  # may hold a model below them, never be replaced by one
MAX_MOUNT_PATH = 1024


def parse_model(value: object, errors: list) -> dict | None:
    """The `model` field as kept before resolution (see the module's docstring); errors at `model…`."""
    if value is None:
        return None
    if isinstance(value, str):
        if not value.strip():
            errors.append(("model", "model cannot be empty: give azureml:<name>:<version>, a path, or leave model out."))
            return None
        if is_reference(value) and not upload_sha256(value):
            return _reference(value, errors)
        return {"path": value, "type": "custom_model"}
    if not isinstance(value, dict):
        errors.append(("model", "model is azureml:<name>:<version>, or a mapping with `path` (and `type`)."))
        return None
    if "reference" in value:
        return _registered(value, errors)
    return _inline(value, errors)


def _reference(text: object, errors: list) -> dict | None:
    try:
        reference = parse_reference(text, "model")
    except InvalidReference as exc:
        errors.append(("model", str(exc)))
        return None
    if reference.kind not in (None, "model"):
        errors.append(("model", f"This reference names a {reference.kind}, not a model."))
        return None
    return {"reference": text}


def _registered(value: dict, errors: list) -> dict | None:
    """A registered model as the service resolved it (or as shown): the reference and what it resolved to."""
    unknown_fields(value, SHOWN_FIELDS, errors, "'{key}' is not a field of a registered model here.", "model.")
    model = _reference(value["reference"], errors)
    if model is None:
        return None
    for key in sorted(SHOWN_FIELDS - {"reference"}):
        if key in value and not isinstance(value[key], str):
            errors.append((f"model.{key}", f"model.{key} is text."))
        elif key in value:
            model[key] = value[key]
    if model.get("type") == "triton_model":
        errors.append(("model", TRITON))
    elif model.get("type", "custom_model") not in MODEL_TYPES:
        errors.append(("model.type", f"model.type must be {' or '.join(MODEL_TYPES)}."))
    return model


def _inline(value: dict, errors: list) -> dict | None:
    unknown_fields(value, INLINE_FIELDS, errors, "'{key}' is not a field of an inline model here (path, type, name, "
                                                 "version): register the model to describe it.", "model.")
    path = value.get("path")
    if not isinstance(path, str) or not path:
        errors.append(("model", "model.path is required: a folder or file beside the YAML (the CLI uploads it), "
                                "or azureml://uploads/<sha256>."))
        return None
    if (path.startswith("azureml:") or "://" in path) and not upload_sha256(path):
        errors.append(("model.path", "model.path is an upload (azureml://uploads/<sha256>), a folder on the Dockyard "
                                     "host or in the image; name a registered model as model: azureml:<name>:<version>."))
        return None
    written = value.get("type", "custom_model")
    kind = written.lower() if isinstance(written, str) else None  # Azure ML lower-cases it (MLFLOW_MODEL)
    if kind == "triton_model":
        errors.append(("model.type", TRITON))
    elif kind not in MODEL_TYPES:
        errors.append(("model.type", f"model.type must be {' or '.join(MODEL_TYPES)}, not {written!r}."))
    model = {"path": path, "type": kind if kind in MODEL_TYPES else "custom_model"}
    for key, valid in (("name", is_name), ("version", _is_whole)):
        if key in value:
            text = str(value[key]) if isinstance(value[key], (str, int)) and not isinstance(value[key], bool) else None
            if text is None or not valid(text):
                errors.append((f"model.{key}", f"model.{key} names the model's folder under {MODELS_ROOT}: "
                                               + ("an asset name" if key == "name" else "a whole number from 1") + "."))
            else:
                model[key] = text
    return model


def _is_whole(text: str) -> bool:
    return text.isdigit() and int(text) >= 1 and len(text) <= 30


def is_stored(model: dict | None) -> bool:
    """The model is a snapshot of the workspace (registered or uploaded inline), not a path on the host or in an image."""
    return bool(model) and upload_sha256(model.get("path") or "") is not None


def model_dir(model: dict, mount_path: str | None = None) -> str:
    """AZUREML_MODEL_DIR for a stored model: `model_mount_path` when given, else Azure ML's <root>/<name>/<version>."""
    if mount_path:
        return mount_path
    return f"{MODELS_ROOT}/{model.get('name') or DEFAULT_NAME}/{model.get('version') or DEFAULT_VERSION}"


def parse_mount_path(value: object, model: dict | None, errors: list, code_folder: object = None) -> str | None:
    """`model_mount_path`: an absolute, plain path that hides none of the server's own folders (nor the scoring code
    inside the image, `code_folder`); needs a stored model."""
    if value is None:
        return None
    problem = mount_path_problem(value)
    if not problem and isinstance(code_folder, str) and code_folder.startswith("/") and not upload_sha256(code_folder):
        path, code = PurePosixPath(value), PurePosixPath(code_folder)
        if path == code or code in path.parents or path in code.parents:
            problem = f"model_mount_path {value} would hide or sit inside the code folder {code_folder}."
    if problem:
        errors.append(("model_mount_path", problem))
        return None
    if not model or not ("reference" in model or upload_sha256(model.get("path") or "")):
        errors.append(("model_mount_path", "model_mount_path says where a registered or uploaded model is mounted: "
                                           "give model (azureml:<name>:<version>, or a path the CLI uploads)."))
        return None
    return value.rstrip("/") if value != "/" else value


def mount_path_problem(value: object) -> str | None:
    """Why `value` cannot be where a model is mounted in the server's container, or None."""
    if not isinstance(value, str) or not value.startswith("/"):
        return "model_mount_path is an absolute path in the container, e.g. /var/models."
    if len(value) > MAX_MOUNT_PATH or not value.isascii() or any(ord(c) < 32 or ord(c) == 127 for c in value):
        return f"model_mount_path is a plain path of at most {MAX_MOUNT_PATH} ASCII characters, no control characters."
    parts = value.rstrip("/").split("/")[1:]
    if any(part in ("", ".", "..") for part in parts) or ":" in value or "\\" in value:
        return "model_mount_path is written plainly: no '.', '..', '//', ':' or '\\'."
    path = PurePosixPath(value)
    for folder in map(PurePosixPath, SYSTEM):
        if path == folder or folder in path.parents or path in folder.parents:
            return f"model_mount_path {value} would hide or sit inside {folder}, which the server needs: choose a " \
                   f"folder of its own, e.g. /var/models."
    for folder in map(PurePosixPath, NOT_OVER):
        if path == folder or path in folder.parents:
            return f"model_mount_path {value} would hide {folder}: choose a folder below it or elsewhere."
    return None


def bounds_problems(files: int, size: int, max_files: int, max_bytes: int, target: str = "model") -> list[tuple[str, str]]:
    """Whether a model of `files` files and `size` bytes may be written out for a deployment (the settings' bounds)."""
    if files > max_files:
        return [(target, f"The model has {files} files, more than a deployment takes ({max_files}, "
                         "DOCKYARD_DEPLOYMENT_MODEL_MAX_FILES): pack it into fewer files.")]
    if size > max_bytes:
        return [(target, f"The model holds {size} bytes, more than a deployment takes ({max_bytes}, "
                         "DOCKYARD_DEPLOYMENT_MODEL_MAX_BYTES).")]
    return []
