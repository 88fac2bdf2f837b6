"""A command job's `inputs` and `outputs` (Azure ML's fields) → normalised specs, and where each data input's files
come from (pure: no Django, no network; jobs/spec.py calls it, jobs/services.py resolves what it finds).

Modes, as Dockyard runs them: `ro_mount` and `download` both fetch the input before the command starts (a copy shown
read-only; there is no FUSE mount here), `direct` gives the path to the command as written.
"""
import re
from posixpath import basename
from urllib.parse import unquote, urlsplit

from assets.specs.common import is_name, is_version
from assets.specs.references import is_reference
from assets.specs.snapshots import Limits, path_problem, upload_sha256
from controlplane.specs import canonical_enum, scalar_text, unknown_fields

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DATA_INPUT_TYPES = {"uri_file", "uri_folder", "mlflow_model", "custom_model", "mltable"}
MODEL_TYPES = {"mlflow_model", "custom_model"}
LITERAL_INPUT_TYPES = {"string", "integer", "number", "boolean"}
INPUT_FIELDS = {"type", "path", "mode", "default", "value", "description"}
# Azure ML's input modes per type (azure-ai-ml's input schemas).
INPUT_MODES = {"ro_mount", "download", "direct"}
FETCHED_MODES = {"ro_mount", "download"}
MLTABLE_INPUT_MODES = INPUT_MODES | {"eval_mount", "eval_download"}
OUTPUT_FIELDS = {"type", "mode", "description", "name", "version"}
OUTPUT_TYPES = {"uri_folder", "uri_file", "mlflow_model", "custom_model", "mltable"}
OUTPUT_MODES = {"rw_mount", "upload", "mount"}  # each leaves the files in the job's outputs folder, kept with the job
REFUSED_OUTPUT_FIELDS = {
    "path": "Outputs are kept in the job's own outputs folder (listed at the job's outputs/): there is no datastore "
            "to write them to; leave path out.",
    "datastore": "There are no datastores here: outputs stay in the job's outputs folder; leave datastore out.",
}
DEFAULT_OUTPUT = "default"  # Azure ML's name for the run's own artifact folder (Dockyard's ./outputs)
BLOB_HOST = re.compile(r"([a-z0-9]{3,24})\.blob\.core\.windows\.net", re.ASCII)
URL_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
FILE_NAME_LIMITS = Limits(1, 1, 1, 255)
UPLOAD_IT = ("{path!r} is a path on your machine: upload it (the CLI's job create -f uploads a data input's local path "
             "and sends azureml://uploads/<sha256>; the API takes the path that uploads/ answers).")
NO_FOLDER_URL = ("A {kind} input cannot be fetched from {scheme}:// here: a folder has no listing over https, and there "
                 "are no datastores or storage credentials in Dockyard. Upload the folder (the CLI does for a local "
                 "path) or register it as a Data asset.")
SHAPE = "An input is a literal (string, number, boolean), {type: <literal type>, default: ...} or {type: uri_file|uri_folder|..., path: ...}."


def parse_inputs(value: object, errors: list) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        errors.append(("inputs", "inputs must be a mapping of names to values."))
        return {}
    result = {}
    for key, item in value.items():
        path = f"inputs.{key}"
        if not isinstance(key, str) or not ENV_NAME.match(key):
            errors.append((path, f"'{key}' is not a valid input name."))
        elif scalar_text(item) is not None:
            result[key] = item
        elif isinstance(item, dict):
            normalised = _input(item, path, errors)
            if normalised is not None:
                result[key] = normalised
        else:
            errors.append((path, SHAPE))
    return result


def _input(item: dict, path: str, errors: list) -> dict | None:
    """One input mapping with its type and mode in canonical spelling; a data input without `type` is a uri_folder."""
    unknown = set(item) - INPUT_FIELDS
    unknown_fields(item, INPUT_FIELDS, errors, f"'{{key}}' is not an input field here ({', '.join(sorted(INPUT_FIELDS))}).",
                   f"{path}.")
    result = dict(item)
    if "type" in item:
        kind = canonical_enum(item["type"], DATA_INPUT_TYPES | LITERAL_INPUT_TYPES)
    else:
        kind = "uri_folder" if "path" in item else None  # Azure ML's default for an input given by path
    if kind is not None:
        result["type"] = kind
    if "mode" in item:
        modes = MLTABLE_INPUT_MODES if kind == "mltable" else INPUT_MODES if kind in DATA_INPUT_TYPES else set()
        mode = canonical_enum(item["mode"], modes)
        if mode is None:
            shown = ", ".join(sorted(modes)) or "none: a literal input has no mode"
            errors.append((f"{path}.mode", f"mode {item['mode']!r} is not a mode of a {kind or 'literal'} input ({shown})."))
            return None
        result["mode"] = mode
    if unknown or ("type" in item and kind is None) or input_value(result) is None:
        if not unknown:
            errors.append((path, SHAPE))
        return None
    return result


def input_value(item: dict) -> str | None:
    """The text an input stands for in the command, or None when the input is malformed."""
    kind = item.get("type")
    if kind in DATA_INPUT_TYPES:
        return item["path"] if isinstance(item.get("path"), str) and item["path"] else None
    if kind in LITERAL_INPUT_TYPES or kind is None:
        return scalar_text(item.get("default", item.get("value")))
    return None


def input_text(value: object) -> str:
    """What `${{inputs.x}}` becomes for one input given as written."""
    return scalar_text(value) if not isinstance(value, dict) else input_value(value) or ""


def input_location(inputs_dir: str, name: str, resolved: dict) -> str:
    """Where a fetched input lands: its own folder under `inputs_dir`, or the one file in it for a uri_file."""
    folder = f"{inputs_dir}/{name}"
    return f"{folder}/{resolved['file']}" if resolved.get("file") else folder


# Where a data input's files come from


def input_source(item: object) -> dict | None:
    """What a data input names, for the service to resolve: one of {'asset': ref}, {'upload': sha256}, {'job': ...},
    {'url': https URL, 'file': name}, {'host': absolute path}, {'refused': why}; None when it is given as written
    (a literal, mode direct, mltable)."""
    if not isinstance(item, dict) or item.get("type") not in DATA_INPUT_TYPES - {"mltable"}:
        return None
    if item.get("mode", "ro_mount") not in FETCHED_MODES:
        return None
    path, kind = item["path"], item["type"]
    if upload_sha256(path):
        return {"upload": upload_sha256(path)}
    if path.startswith("azureml://jobs/"):
        return {"job_output": path}
    if is_reference(path) and not path.startswith("azureml://"):
        return {"asset": path}
    if path.startswith(("azureml://registries/", "azureml://locations/")):
        return {"asset": path}
    if path.startswith("azureml://"):
        return {"refused": "There are no datastores here (azureml://datastores/..., azureml://subscriptions/...): "
                           "upload the files (the CLI does for a local path) or register them as a Data asset."}
    if path.startswith("wasbs://"):
        return _url_source(_wasbs_https(path), kind, "wasbs")
    if URL_SCHEME.match(path):
        scheme = path.split("://", 1)[0].lower()
        return _url_source(path, kind, scheme) if scheme == "https" else _other_scheme(scheme, kind)
    if path.startswith("/"):
        return {"host": path}
    return {"refused": UPLOAD_IT.format(path=path)}


def _other_scheme(scheme: str, kind: str) -> dict:
    if kind != "uri_file":
        return {"refused": NO_FOLDER_URL.format(kind=kind, scheme=scheme)}
    return {"refused": f"{scheme}:// is not fetched here: a uri_file is fetched from an https:// URL (abfss://, s3:// "
                       "and datastores need storage credentials Dockyard does not hold). Upload the file instead."}


def _wasbs_https(path: str) -> str | None:
    """`wasbs://<container>@<account>.blob.core.windows.net/<path>` is Azure Blob's https://<account>.blob.../<container>/<path>."""
    rest = path[len("wasbs://"):]
    container, at, tail = rest.partition("@")
    host, slash, inside = tail.partition("/")
    if not at or not slash or not container or not BLOB_HOST.fullmatch(host.lower()):
        return None
    return f"https://{host.lower()}/{container}/{inside}"


def _url_source(url: str | None, kind: str, scheme: str) -> dict:
    if kind != "uri_file":
        return {"refused": NO_FOLDER_URL.format(kind=kind, scheme=scheme)}
    if url is None:
        return {"refused": "A wasbs:// path is wasbs://<container>@<account>.blob.core.windows.net/<path to the file>."}
    try:
        parts = urlsplit(url) if url.isascii() and not any(ord(char) < 33 for char in url) else None
        host = parts.hostname if parts is not None and parts.port != 0 else None
    except ValueError:  # an unbalanced [ in the host, a port that is not a number
        parts = host = None
    if parts is None or not host or parts.username or parts.password or parts.fragment:
        return {"refused": "A uri_file URL is https://<host>/<path> without credentials, spaces or a fragment."}
    name = unquote(basename(parts.path))
    if not name or path_problem(name, FILE_NAME_LIMITS):
        return {"refused": f"The URL's last part ({name!r}) cannot be a file name: the URL must name a file."}
    return {"url": url, "file": name}


# Outputs


def parse_outputs(value: object, errors: list) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        errors.append(("outputs", "outputs must be a mapping of names to {type, mode}."))
        return {}
    result = {}
    for key, item in value.items():
        if not isinstance(key, str) or not ENV_NAME.match(key):
            errors.append((f"outputs.{key}", f"'{key}' is not a valid output name."))
        elif item is not None and not isinstance(item, dict):
            errors.append((f"outputs.{key}", "An output is a mapping such as {type: uri_folder, mode: rw_mount}."))
        else:
            result[key] = item if item is None else _output(key, item, errors)
    return result


def _output(name: str, item: dict, errors: list) -> dict:
    """One output with its type and mode in canonical spelling; what Dockyard cannot do with it is refused."""
    path = f"outputs.{name}"
    result = {}
    for key, field in item.items():
        if key == "path" and name == DEFAULT_OUTPUT:
            continue  # `job show` output: Azure ML's artifact folder of the run, which the job's outputs folder is here
        if key in REFUSED_OUTPUT_FIELDS:
            errors.append((f"{path}.{key}", REFUSED_OUTPUT_FIELDS[key]))
        elif key not in OUTPUT_FIELDS:
            errors.append((f"{path}.{key}", f"'{key}' is not an output field here (type, mode, name, version, description)."))
        else:
            result[key] = field
    if "type" in item:
        result["type"] = canonical_enum(item["type"], OUTPUT_TYPES) or item["type"]
        if result["type"] not in OUTPUT_TYPES:
            errors.append((f"{path}.type", f"An output's type is one of {', '.join(sorted(OUTPUT_TYPES))}."))
    if "mode" in item:
        result["mode"] = canonical_enum(item["mode"], OUTPUT_MODES) or item["mode"]
        if result["mode"] not in OUTPUT_MODES:
            errors.append((f"{path}.mode", f"Output mode {item['mode']!r} is not available: the files a job writes stay in "
                                           "its outputs folder (rw_mount, upload or mount); `direct` needs storage to "
                                           "write to, which Dockyard does not have."))
    _registration(result, path, errors)
    return result


def _registration(output: dict, path: str, errors: list) -> None:
    """`name` (and `version`): the output is registered as a Data asset or Model when the job ends (Azure ML's shape)."""
    if "version" in output and "name" not in output:
        errors.append((f"{path}.version", "version goes with name: the asset the output is registered as."))
    if "name" not in output:
        return
    if not is_name(output["name"]):
        errors.append((f"{path}.name", "An asset name has 1-255 letters, digits, '.', '-' or '_', starting with a "
                                       "letter or digit."))
    if output.get("type", "uri_folder") == "mltable":
        errors.append((f"{path}.name", "mltable outputs are not registered here: use uri_folder."))
    if "version" in output:
        version = scalar_text(output["version"]) if not isinstance(output["version"], bool) else None
        whole = output.get("type") in MODEL_TYPES
        if version is None or not is_version(version) or (whole and not version.isdigit()):
            errors.append((f"{path}.version", "A model's version is a whole number from 1." if whole else
                           "A version has 1-30 letters, digits, '.', '-' or '_', starting with a letter or digit."))
        else:
            output["version"] = str(int(version)) if whole else version


def output_is_file(spec: dict, name: str) -> bool:
    """A uri_file output names a file in the outputs folder; every other type a folder."""
    return ((spec.get("outputs") or {}).get(name) or {}).get("type") == "uri_file"
