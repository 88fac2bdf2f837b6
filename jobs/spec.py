"""Azure ML command-job YAML → a validated, normalised spec (pure: no Django, no network).

Field names are Azure ML's. Every field accepted is acted on, or refused by name with the reason (a typo, or an Azure
ML feature Dockyard does not have, is never silently ignored); the few kept only to be shown are in STORED_ONLY.
Enum values are read as Azure ML's schema reads them (StringTransformedEnum: lower-cased before the check) and stored
in their canonical spelling.
"""
import math
import re
from datetime import date

from assets.specs.conda import inline_conda_file
from assets.specs.environment import BUILD_REFUSED
from assets.specs.references import InvalidReference, parse_reference
from assets.specs.snapshots import UPLOADS_PREFIX, upload_sha256
from controlplane.specs import (
    SpecErrors,
    canonical_enum,
    limit_errors,
    positive_int,
    string_map,
    unknown_fields,
)

from .spec_io import (  # noqa: F401 (the input and output field sets and helpers, read from here too)
    DATA_INPUT_TYPES,
    DEFAULT_OUTPUT,
    ENV_NAME,
    INPUT_FIELDS,
    OUTPUT_FIELDS,
    input_location,
    input_text,
    output_is_file,
    parse_inputs,
    parse_outputs,
)

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,254}$")
DOCKER_SIZE = re.compile(r"^([1-9][0-9]*)([bkmg]?)$", re.IGNORECASE)
REFERENCE = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}")
DEFAULT_SHM = "2g"
DEFAULT_EXPERIMENT = "Default"
MAX_INSTANCES = 100000
NAME_HINT = " (letters, digits and '_', not starting with a digit)"

TOP_LEVEL = {
    "$schema", "type", "name", "display_name", "experiment_name", "description", "tags", "command", "code",
    "environment", "environment_variables", "compute", "resources", "distribution", "limits", "inputs", "outputs",
    "properties",
    # read-only in Azure ML; accepted (and dropped) so `job show -o yaml` output can be submitted again
    "status", "status_reason", "creation_context", "log_files", "parameters", "id", "start_time", "end_time",
    "duration", "exit_code", "instance_type", "placement", "created_on", "updated_on", "created_by",
    "log_lines", "deleting", "manifests",
}
READ_ONLY = TOP_LEVEL - {
    "$schema", "type", "name", "display_name", "experiment_name", "description", "tags", "command", "code",
    "environment", "environment_variables", "compute", "resources", "distribution", "limits", "inputs", "outputs",
    "properties",
}
# Azure ML job fields Dockyard has no backend for: refused with the reason rather than stored and ignored.
REFUSED_TOP_LEVEL = {
    "queue_settings": "queue_settings (job_tier, priority) is not honoured here: Kubernetes schedules jobs in the order "
                      "their pods fit; leave it out.",
    "identity": "Jobs here run without an Azure identity (no managed or user identity is passed to them); leave identity "
                "out and give credentials through environment_variables or the image.",
    "services": "Interactive services (ssh, jupyter_lab, tensor_board, vs_code) are not started for jobs here; leave "
                "services out.",
}
# `job show -o yaml` lists these services; they describe Azure ML's own studio, so they are dropped when submitted again.
READ_ONLY_SERVICES = {"studio", "tracking"}
RESOURCE_FIELDS = {"instance_type", "instance_count", "shm_size"}
REFUSED_RESOURCES = {
    "docker_args": "docker_args cannot be honoured: jobs run as Kubernetes pods or in the local sandbox, not with docker "
                   "run; use shm_size for /dev/shm.",
    "locations": "locations (Azure regions for serverless jobs) have no meaning here: choose a compute instead.",
    "properties": "resources.properties (Azure ML backend settings) are not read here; leave them out.",
    "max_instance_count": "Elastic training (max_instance_count) is not supported: a job runs exactly instance_count "
                          "instances.",
}
ENVIRONMENT_FIELDS = {"image", "venv", "conda_file", "description", "tags"}
REFUSED_ENVIRONMENT = {
    "build": BUILD_REFUSED,
    "name": "An inline environment is not registered: register it (dockyard environment create -f) and give "
            "environment: azureml:<name>:<version>, or leave name and version out.",
    "version": "An inline environment is not registered: register it (dockyard environment create -f) and give "
               "environment: azureml:<name>:<version>, or leave name and version out.",
}
# What `job show` writes for a referenced environment: the reference, and the image it resolved to (resolved again).
SHOWN_REFERENCE = {"reference", "image", "conda_file"}
LIMITS_FIELDS = {"timeout"}
DISTRIBUTIONS = {
    "pytorch": {"process_count_per_instance"},
    "mpi": {"process_count_per_instance"},
    "tensorflow": {"worker_count", "parameter_server_count"},
}
# Kept and shown, but not read by Dockyard (the field-audit test walks the accepted fields against this).
STORED_ONLY: dict[str, str] = {
    "properties": "Descriptive key/value pairs, kept and shown with the job like tags; Dockyard reads none of them.",
    "inputs.*.description": "Shown with the job; describes the input.",
    "outputs.*.description": "Shown with the job; describes the output.",
}


def parse_job(body: object) -> dict:
    """Validate a command-job body; returns the normalised spec (defaults filled in) or raises SpecErrors."""
    if not isinstance(body, dict):
        raise SpecErrors([("", "The body must be a mapping of command-job fields (Azure ML job YAML).")])
    errors: list[tuple[str, str]] = []
    for key in sorted(set(body) - TOP_LEVEL, key=str):
        if key in REFUSED_TOP_LEVEL and not (key == "services" and _read_only_services(body[key])):
            errors.append((key, REFUSED_TOP_LEVEL[key]))
        elif key not in REFUSED_TOP_LEVEL:
            errors.append((str(key), f"'{key}' is not a command-job field."))
    if canonical_enum(body.get("type", "command"), {"command"}) is None:
        errors.append(("type", f"Only command jobs are supported here, not type '{body.get('type')}'."))
    spec = {key: value for key, value in body.items() if key in TOP_LEVEL - READ_ONLY and key not in ("$schema", "type")}
    spec["type"] = "command"
    spec["code"] = _code(body.get("code"), errors)
    spec["name"] = _name(body.get("name"), errors)
    for key in ("display_name", "description"):
        spec[key] = _text(body.get(key), key, errors)
    spec["experiment_name"] = _text(body.get("experiment_name"), "experiment_name", errors) or DEFAULT_EXPERIMENT
    spec["tags"] = string_map(body.get("tags"), "tags", errors, key_hint=NAME_HINT)
    spec["command"] = _command(body.get("command"), errors)
    spec["compute"] = _compute(body.get("compute"), errors)
    spec["environment"] = _environment(body.get("environment"), errors)
    spec["environment_variables"] = string_map(body.get("environment_variables"), "environment_variables", errors, ENV_NAME, NAME_HINT)
    spec["resources"] = _resources(body.get("resources"), errors)
    spec["distribution"] = _distribution(body.get("distribution"), spec["resources"].get("instance_count", 1), errors)
    spec["limits"] = _limits(body.get("limits"), errors)
    spec["inputs"] = parse_inputs(body.get("inputs"), errors)
    spec["outputs"] = parse_outputs(body.get("outputs"), errors)
    if isinstance(spec["command"], str):
        _check_references(spec, errors)
    spec = _json_safe(spec, "", errors)
    errors.extend(row for row in limit_errors(spec) if row not in errors)  # _text checked display_name already
    if errors:
        raise SpecErrors(errors)
    # compute stays even when empty: "" is serverless, and services read it to place the job
    return {key: value for key, value in spec.items() if value not in (None, {}, "") or key in ("name", "command", "compute")}


def _read_only_services(value: object) -> bool:
    """`job show` output's services (Studio, Tracking links): Azure ML's own, dropped when the job is submitted again."""
    return isinstance(value, dict) and all(
        isinstance(item, dict) and canonical_enum(item.get("type"), READ_ONLY_SERVICES) for item in value.values())


def _code(value: object, errors: list) -> str | None:
    """An uploaded folder (`azureml://uploads/<sha256>`, what the CLI sends), or a folder on the Dockyard host."""
    if value is None or value == "":
        return None
    if not isinstance(value, str) or "\0" in value:
        errors.append(("code", "code must be the path of a folder."))
        return None
    if value.startswith(UPLOADS_PREFIX):
        if upload_sha256(value) is None:
            errors.append(("code", f"An uploaded folder is named {UPLOADS_PREFIX}<sha256> (64 lowercase hex digits)."))
            return None
        return value
    if value.startswith("azureml:"):
        errors.append(("code", "Registered code assets (azureml:...) are not available here: give the path of a folder."))
        return None
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", value) or value.startswith("git+"):
        errors.append(("code", "code must be an uploaded folder (azureml://uploads/<sha256>: the CLI uploads `code: ./src` "
                               "for you) or a folder on the Dockyard host, not a URL: Dockyard does not download code."))
        return None
    return value


def _json_safe(value: object, path: str, errors: list) -> object:
    """The spec as JSON can store it: YAML's dates become their ISO text; what JSON lacks (.nan, binary, sets) is refused."""
    if isinstance(value, dict):
        result = {}
        for key, item in value.items():
            key = key.isoformat() if isinstance(key, date) else key
            where = f"{path}.{key}" if path else str(key)
            if not isinstance(key, str | int | float | bool):
                errors.append((where, "Keys must be names (text or numbers)."))
                continue
            result[key] = _json_safe(item, where, errors)
        return result
    if isinstance(value, list):
        return [_json_safe(item, f"{path}.{index}", errors) for index, item in enumerate(value)]
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        errors.append((path, "Numbers must be finite (not .nan or .inf)."))
        return None
    if value is not None and not isinstance(value, str | int | float | bool):
        errors.append((path, f"A {type(value).__name__} value cannot be stored here: write it as text."))
        return None
    return value


def _name(value: object, errors: list) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not NAME.match(value):
        errors.append(("name", "A job name has 1–255 letters, digits, '_' or '-', starting with a letter or digit."))
        return None
    return value


def _text(value: object, path: str, errors: list) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        errors.append((path, f"{path} must be a string."))
        return ""
    if len(value) > 255 and path != "description":
        errors.append((path, f"{path} must be at most 255 characters."))
    return value


def _command(value: object, errors: list) -> str | None:
    if not isinstance(value, str) or not value.strip():
        errors.append(("command", "command is required: the shell command the job runs."))
        return None
    return value


def _compute(value: object, errors: list) -> str:
    """'azureml:NAME', 'NAME', 'local', or nothing (serverless)."""
    if value is None or value == "":
        return ""
    if not isinstance(value, str):
        errors.append(("compute", "compute must be a string: 'azureml:<name>', '<name>' or 'local'."))
        return ""
    name = value.removeprefix("azureml:").strip()
    if not name or "/" in name or ":" in name:
        errors.append(("compute", f"'{value}' is not a compute reference: use 'azureml:<name>', '<name>' or 'local'."))
        return ""
    return name


def _environment(value: object, errors: list) -> dict:
    """An inline environment, or {'reference': ...} for a registered or curated one (the service resolves it)."""
    if value is None:
        return {}
    if isinstance(value, dict) and "reference" in value and set(value) <= SHOWN_REFERENCE:
        value = value["reference"]  # `job show` output submitted again: the reference is what counts
    if isinstance(value, str):
        try:
            parse_reference(value, "environment")
        except InvalidReference as exc:
            errors.append(("environment", str(exc)))
            return {}
        return {"reference": value}
    if not isinstance(value, dict):
        errors.append(("environment", "environment must be a mapping with `image` (or, for local jobs, `venv`)."))
        return {}
    unknown_fields(value, ENVIRONMENT_FIELDS, errors, "'{key}' is not an environment field here (image and conda_file, or "
                   "venv for local jobs).", "environment.", REFUSED_ENVIRONMENT)
    for key in ("image", "venv"):
        if key in value and (not isinstance(value[key], str) or not value[key].strip()):
            errors.append((f"environment.{key}", f"environment.{key} must be a non-empty string."))
    if isinstance(value.get("image"), str) and re.search(r"\s", value["image"]):
        errors.append(("environment.image", "An image reference has no spaces (e.g. python:3.11 or registry/repo:tag)."))
    if "conda_file" in value:  # realised on top of the image (or, locally, the host's python3) when the job starts
        value = {**value, "conda_file": inline_conda_file(value["conda_file"], errors)}
    return dict(value)


def _resources(value: object, errors: list) -> dict:
    if value is None:
        value = {}
    if not isinstance(value, dict):
        errors.append(("resources", "resources must be a mapping (instance_type, instance_count, shm_size)."))
        return {"instance_count": 1, "shm_size": DEFAULT_SHM}
    unknown_fields(value, RESOURCE_FIELDS, errors, "'{key}' is not a resources field (instance_type, instance_count, "
                   "shm_size).", "resources.", REFUSED_RESOURCES)
    result = dict(value)
    instance_type = value.get("instance_type")
    if instance_type is not None and (not isinstance(instance_type, str) or not instance_type.strip()):
        errors.append(("resources.instance_type", "resources.instance_type must be an instance type's name."))
    result["instance_count"] = positive_int(value.get("instance_count"), "resources.instance_count", errors, 1)
    if result["instance_count"] > MAX_INSTANCES:  # an Indexed Job's limit on a real API server
        errors.append(("resources.instance_count", f"instance_count can be at most {MAX_INSTANCES}."))
    shm = value.get("shm_size", DEFAULT_SHM)
    if not isinstance(shm, str) or not DOCKER_SIZE.match(shm):
        errors.append(("resources.shm_size", "shm_size is a number with an optional unit b, k, m or g (e.g. 2g)."))
    result["shm_size"] = shm
    return result


def _distribution(value: object, instance_count: int, errors: list) -> dict:
    if value is None:
        return {}
    kind = canonical_enum(value.get("type"), DISTRIBUTIONS) if isinstance(value, dict) else None
    if kind is None:
        given = value.get("type") if isinstance(value, dict) else None
        errors.append(("distribution.type", f"distribution.type must be pytorch, mpi or tensorflow (not {given!r})."))
        return {}
    unknown_fields(value, DISTRIBUTIONS[kind] | {"type"}, errors, f"'{{key}}' is not a field of a {kind} distribution.",
                   "distribution.")
    result = {"type": kind}
    if kind in ("pytorch", "mpi"):
        path = "distribution.process_count_per_instance"
        result["process_count_per_instance"] = positive_int(value.get("process_count_per_instance"), path, errors, 1)
        if kind == "mpi" and (result["process_count_per_instance"] or 1) > 1:
            errors.append((path, "Dockyard starts one process per instance and no MPI launcher (mpirun) for it: use "
                                 "process_count_per_instance 1 and start the ranks in the command, or use pytorch "
                                 "(torchrun reads the process count)."))
    else:
        result["worker_count"] = positive_int(value.get("worker_count"), "distribution.worker_count", errors, instance_count)
        result["parameter_server_count"] = positive_int(
            value.get("parameter_server_count"), "distribution.parameter_server_count", errors, 0, minimum=0)
    return result


def _limits(value: object, errors: list) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        errors.append(("limits", "limits must be a mapping with `timeout` (seconds)."))
        return {}
    unknown_fields(value, LIMITS_FIELDS, errors, "'{key}' is not a limits field (timeout).", "limits.")
    timeout = positive_int(value.get("timeout"), "limits.timeout", errors)
    return {"timeout": timeout} if timeout else {}


def _check_references(spec: dict, errors: list) -> None:
    for reference in REFERENCE.findall(spec["command"]):
        kind, _, name = reference.partition(".")
        known = spec["inputs"] if kind == "inputs" else spec["outputs"] if kind == "outputs" else None
        if known is None:
            errors.append(("command", f"${{{{{reference}}}}} is not an input or output reference."))
        elif name not in known:
            errors.append(("command", f"The command uses ${{{{{reference}}}}} but the job has no {kind[:-1]} '{name}'."))


def render_command(spec: dict, outputs_dir: str = "outputs", inputs_dir: str = "inputs",
                   resolved: dict | None = None) -> str:
    """The command with `${{inputs.x}}` and `${{outputs.y}}` substituted: fetched inputs (`resolved`, the job's
    resolved_inputs) by where they land under `inputs_dir`, other inputs literally, outputs as folders."""
    resolved = resolved or {}

    def substitute(match: re.Match) -> str:
        kind, _, name = match.group(1).partition(".")
        if kind == "inputs":
            if name in resolved:
                return input_location(inputs_dir, name, resolved[name])
            return input_text(spec.get("inputs", {})[name])
        return f"{outputs_dir}/{name}"

    return REFERENCE.sub(substitute, spec["command"])


def shm_quantity(shm_size: str) -> str:
    """Docker's size (2g = 2 GiB) as a Kubernetes quantity."""
    number, unit = DOCKER_SIZE.match(shm_size).groups()
    return number + {"": "", "b": "", "k": "Ki", "m": "Mi", "g": "Gi"}[unit.lower()]
