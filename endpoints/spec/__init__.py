"""Azure ML online endpoint / online deployment YAML → validated specs, with the seed's rules (pure).

An endpoint names its compute (`local`, or a Kubernetes compute) or none: then it is managed, and Dockyard places its
deployments on a compute cluster of their VM size (`managed`, `placement`). A deployment's resources are checked
against its instance type by `resources.resolve_resources`.

Enum values are read as Azure ML's SDK reads them: `auth_mode`, `scale_settings.type` and the deployment's `type` through
its camel-to-snake transform (`Key` → `key`, `AMLToken` → `aml_token`, `TargetUtilization` → `target_utilization`),
`model.type` and the network-access switches lower-cased; the canonical value is stored.
"""
import re
from pathlib import PurePosixPath

from assets.specs.conda import inline_conda_file
from assets.specs.references import InvalidReference, parse_reference
from controlplane.specs import (
    SpecErrors,
    camel_to_snake,
    limit_errors,
    positive_int,
    refused_fields,
    string_map,
    unknown_fields,
)
from endpoints.model_spec import parse_model, parse_mount_path

from .managed import MANAGED_REFUSED, managed_errors  # noqa: F401  (MANAGED_REFUSED: beside the other refusals)
from .resources import MIN_MEMORY, resolve_resources  # noqa: F401  (the spec's names, as importers use them)

ENDPOINT_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{1,30}[A-Za-z0-9]$")
DEPLOYMENT_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{1,30}[A-Za-z0-9]$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
INT32_MAX = 2**31 - 1
PROBE_DEFAULTS = {"period": 10, "initial_delay": 10, "timeout": 2, "success_threshold": 1, "failure_threshold": 30}
REQUEST_DEFAULTS = {"request_timeout_ms": 5000, "max_concurrent_requests_per_instance": 1}
TARGET_DEFAULTS = {"min_instances": 1, "max_instances": 1, "target_utilization_percentage": 70}
AUTH_MODES = ("key", "aml_token")
DEPLOYMENT_TYPES = ("kubernetes", "managed")
SCALE_TYPES = ("default", "target_utilization")

ENDPOINT_FIELDS = {"$schema", "name", "description", "tags", "auth_mode", "compute", "traffic", "mirror_traffic",
                   "public_network_access"}
ENDPOINT_READ_ONLY = {"scoring_uri", "openapi_uri", "provisioning_state", "provisioning_errors", "id", "keys",
                      "created_on", "updated_on", "created_by", "deployments", "status", "kind", "placement", "manifests"}
DEPLOYMENT_FIELDS = {"$schema", "name", "endpoint_name", "description", "tags", "type", "model", "model_mount_path",
                     "code_configuration", "environment", "environment_variables", "instance_type", "instance_count",
                     "resources", "liveness_probe", "readiness_probe", "request_settings", "scale_settings",
                     "app_insights_enabled"}
DEPLOYMENT_READ_ONLY = {"provisioning_state", "provisioning_errors", "id", "status", "created_on", "updated_on",
                        "created_by", "manifests", "scoring", "placement"}
ENVIRONMENT_FIELDS = {"image", "conda_file", "venv", "name", "version"}
# Azure ML fields Dockyard refuses, each with the reason and what to do instead (not "unknown": Azure ML has them).
ENDPOINT_REFUSED = {
    "identity": "Managed identities are Microsoft Entra ID's; Dockyard has none to give a deployment. Remove identity "
                "and pass credentials as environment_variables or in the image.",
    "location": "Dockyard has no Azure regions: an endpoint runs where its compute is. Remove location.",
}
DEPLOYMENT_REFUSED = {
    "data_collector": "Data collection into Azure storage is not available here: log inputs and outputs from the "
                      "scoring script (they are in the deployment's logs). Remove data_collector.",
    "egress_public_network_access": "Dockyard does not switch a deployment's outbound network: pods (managed ones "
                                    "too) follow their cluster's network policies, and local deployments have no "
                                    "network unless staff allow it. Remove egress_public_network_access.",
    "private_network_connection": "Dockyard has no private endpoints (Azure Private Link): a deployment is reached "
                                  "through Dockyard's score URL. Remove private_network_connection.",
    "request_settings.max_queue_wait_ms": "The inference server here has no request queue with its own timeout: a "
                                          "request waits for a free worker within request_timeout_ms. Remove it.",
    "scale_settings.polling_interval": "Kubernetes sets how often autoscalers look cluster-wide (kube-controller-manager "
                                       "--horizontal-pod-autoscaler-sync-period), not per deployment. Remove it.",
    "environment.inference_config": "Custom container routes are not supported: Dockyard runs Azure ML's inference "
                                    "server on its own routes (/, /score). Remove inference_config.",
}
# Fields one kind of target acts on and the other cannot: refused there, with the reason.
LOCAL_REFUSED = {
    "instance_type": "A local deployment runs as a process on the Dockyard host, not on an instance type: leave "
                     "instance_type out (Kubernetes deployments use it).",
    "resources": "A local deployment's process is not limited (it runs on the Dockyard host, not in a container): "
                 "leave resources out (Kubernetes deployments use them).",
    "environment.image": "A local deployment runs in a Python venv on the Dockyard host, not in a container: leave "
                         "environment.image out (environment.venv names another venv).",
    "readiness_probe": "A local deployment is one server with no load balancer in front: its liveness_probe decides "
                       "when it serves and when it is restarted. Leave readiness_probe out.",
    "model.type": "A local deployment needs code_configuration: Dockyard has no no-code server for MLflow models.",
    "model_mount_path": "A local deployment runs Dockyard's inference server, not a custom container: its model is "
                        "at AZUREML_MODEL_DIR (/var/azureml-app/azureml-models/<name>/<version>). Leave it out.",
    "environment.conda_file": "A local deployment realises its conda file with the inference server's own interpreter, "
                              "or runs a venv of your own (environment.venv), not both: leave one out.",
}
KUBERNETES_REFUSED = {
    "environment.venv": "venv is for local deployments: a Kubernetes deployment runs environment.image.",
    "type": "type managed is for the deployments of a managed endpoint (one without compute), which Dockyard places "
            "on a compute cluster: on a Kubernetes endpoint use type kubernetes (or leave type out).",
}
# Accepted, kept and shown, but not acted on: why each stays (the README's field table lists them too).
STORED_ONLY: dict[str, str] = {
    "public_network_access": "Only `enabled` is accepted, which is what Dockyard does (the score URL is reachable "
                             "wherever its API is); `disabled` is refused, as there are no private endpoints.",
    "app_insights_enabled": "Kept so Azure ML files (and the seed's example) post unchanged; nothing is sent to "
                            "Application Insights: the deployment's logs and status are in Dockyard's log view.",
    "environment.name": "A label of the inline environment, shown; a registered one is named as azureml:<name>:<v>.",
    "environment.version": "A label of the inline environment, shown; a registered one is named as azureml:<name>:<v>.",
}


def enum_value(value: object, allowed: tuple[str, ...], path: str, errors: list, transform=camel_to_snake,
               hint: str = "") -> str | None:
    """`value` as the canonical member of `allowed` after Azure ML's casing transform, else an error at `path`."""
    canonical = transform(value) if isinstance(value, str) else None
    if canonical in allowed:
        return canonical
    errors.append((path, f"{path} must be {' or '.join(allowed)}{hint}, not {value!r}."))
    return None


def _mapping(body: object, what: str) -> dict:
    if not isinstance(body, dict):
        raise SpecErrors([("", f"The body must be a mapping of {what} fields (Azure ML YAML).")])
    return body


def _name(value: object, rule: re.Pattern, what: str, errors: list) -> str:
    if not isinstance(value, str) or not rule.match(value):
        errors.append(("name", f"An online {what} name has 3–32 letters, digits or '-', starts with a letter and does not end with '-'."))
        return ""
    return value


def compute_reference(value: object, errors: list) -> str:
    """'local', a Kubernetes compute's name, or "" for a managed endpoint (no compute: Dockyard places it)."""
    if value is None or value == "":
        return ""
    if not isinstance(value, str) or not value.removeprefix("azureml:").strip() or "/" in value:
        errors.append(("compute", "compute must be 'local' or 'azureml:<kubernetes compute>', or left out for a "
                                  "managed endpoint."))
        return ""
    return value.removeprefix("azureml:").strip()


def parse_endpoint(body: object) -> dict:
    """Validate an endpoint body (traffic is checked against the deployments by `check_traffic`)."""
    body = _mapping(body, "online endpoint")
    errors: list = []
    refused_fields(body, ENDPOINT_REFUSED, errors)
    unknown_fields(body, ENDPOINT_FIELDS | ENDPOINT_READ_ONLY | set(ENDPOINT_REFUSED), errors, "'{key}' is not an online endpoint field.")
    spec = {
        "name": _name(body.get("name"), ENDPOINT_NAME, "endpoint", errors),
        "description": body.get("description") or "",
        "tags": string_map(body.get("tags"), "tags", errors),
        "auth_mode": enum_value(body.get("auth_mode", "key"), AUTH_MODES, "auth_mode", errors,
                                hint=" (aad_token needs Microsoft Entra ID)"),
        "compute": compute_reference(body.get("compute"), errors),
        "traffic": traffic_map(body.get("traffic"), "traffic", errors),
        "mirror_traffic": traffic_map(body.get("mirror_traffic"), "mirror_traffic", errors),
    }
    if not isinstance(spec["description"], str):
        errors.append(("description", "description must be a string."))
    if "public_network_access" in body:
        spec["public_network_access"] = enum_value(body["public_network_access"], ("enabled",), "public_network_access",
                                                   errors, str.lower, " (Dockyard has no private endpoints)")
    errors.extend(limit_errors(spec))
    if errors:
        raise SpecErrors(errors)
    return spec


def traffic_map(value: object, path: str, errors: list) -> dict[str, int]:
    """{deployment: percent}, whole numbers 0–100."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        errors.append((path, f"{path} maps deployment names to whole percentages, e.g. {{blue: 90, green: 10}}."))
        return {}
    result = {}
    for name, percent in value.items():
        if isinstance(percent, bool) or not isinstance(percent, int) or not 0 <= percent <= 100:
            errors.append((f"{path}.{name}", "A traffic share is a whole percentage from 0 to 100."))
        else:
            result[str(name)] = percent
    return result


def check_traffic(traffic: dict[str, int], mirror: dict[str, int], deployments: set[str]) -> list[tuple[str, str]]:
    """The endpoint rules: traffic totals 0 or 100 over existing deployments; one mirror ≤ 50 without live traffic."""
    errors = [(f"traffic.{name}", f"There is no deployment '{name}' on this endpoint.") for name in traffic if name not in deployments]
    total = sum(traffic.values())
    if total not in (0, 100):
        errors.append(("traffic", f"The traffic shares must total 0 or 100 (they total {total})."))
    errors += [(f"mirror_traffic.{name}", f"There is no deployment '{name}' on this endpoint.") for name in mirror if name not in deployments]
    mirrored = {name: percent for name, percent in mirror.items() if percent}
    if len(mirrored) > 1:
        errors.append(("mirror_traffic", "Traffic can be mirrored to one deployment only."))
    for name, percent in mirrored.items():
        if percent > 50:
            errors.append((f"mirror_traffic.{name}", f"At most 50% of the traffic can be mirrored (got {percent})."))
        if traffic.get(name):
            errors.append((f"mirror_traffic.{name}", f"'{name}' already takes live traffic; mirror to a deployment without any."))
    return errors


def _settings(value: object, path: str, defaults: dict, errors: list, minimums: dict | None = None) -> dict:
    if value is None:
        return dict(defaults)
    if not isinstance(value, dict):
        errors.append((path, f"{path} must be a mapping ({', '.join(defaults)})."))
        return dict(defaults)
    refused = {key.removeprefix(f"{path}."): reason for key, reason in DEPLOYMENT_REFUSED.items() if key.startswith(f"{path}.")}
    unknown_fields(value, {*defaults, "type"}, errors, f"'{{key}}' is not a field of {path} ({', '.join(defaults)}).", f"{path}.",
                   refused)
    minimums = minimums or {}
    return {key: positive_int(value.get(key), f"{path}.{key}", errors, default, minimums.get(key, 1), INT32_MAX) for key, default in defaults.items()}


def _probe(value: object, path: str, errors: list) -> dict:
    probe = _settings(value, path, PROBE_DEFAULTS, errors, {"initial_delay": 0})
    if path == "liveness_probe" and probe["success_threshold"] != 1:
        errors.append((f"{path}.success_threshold", "A liveness probe's success_threshold must be 1 (Kubernetes)."))
    return probe


def _scale(value: object, errors: list) -> dict:
    if value is None:
        return {"type": "default"}
    if not isinstance(value, dict):
        errors.append(("scale_settings", "scale_settings is a mapping with type default or target_utilization."))
        return {"type": "default"}
    kind = enum_value(value.get("type", "default"), SCALE_TYPES, "scale_settings.type", errors)
    if kind != "target_utilization":
        for key in sorted(set(value) - {"type"}, key=str) if kind else ():
            errors.append((f"scale_settings.{key}", DEPLOYMENT_REFUSED.get(f"scale_settings.{key}")
                           or "A default scale setting has no other fields: set instance_count."))
        return {"type": "default"}
    scale = {"type": kind, **_settings({k: v for k, v in value.items() if k != "type"}, "scale_settings", TARGET_DEFAULTS, errors)}
    if scale["min_instances"] > scale["max_instances"]:
        errors.append(("scale_settings.min_instances", "min_instances cannot be more than max_instances."))
    if scale["target_utilization_percentage"] > 100:
        errors.append(("scale_settings.target_utilization_percentage", "A utilisation target is a percentage from 1 to 100."))
    return scale


def _code(value: object, model: dict | None, errors: list) -> dict | None:
    if value is None:
        if not (model and model.get("type") == "mlflow_model"):
            errors.append(("code_configuration", "code_configuration (code, scoring_script) is required unless the model is an MLflow model."))
        return None
    if not isinstance(value, dict):
        errors.append(("code_configuration", "code_configuration is a mapping with code and scoring_script."))
        return None
    for key in ("code", "scoring_script"):
        if not isinstance(value.get(key), str) or not value[key]:
            errors.append((f"code_configuration.{key}", f"code_configuration.{key} is required."))
    script = value.get("scoring_script")
    if isinstance(script, str) and (script.startswith(("/", "\\")) or ".." in PurePosixPath(script.replace("\\", "/")).parts):
        errors.append(("code_configuration.scoring_script", "scoring_script is a path inside the code folder (no leading / and no ..)."))
    return dict(value)


def _environment(value: object, errors: list) -> dict:
    if value is None:
        return {}  # a local deployment may use Dockyard's inference server as it is; Kubernetes needs an image (services)
    if isinstance(value, dict) and "reference" in value and set(value) <= {"reference", "image", "conda_file"}:
        value = value["reference"]  # a shown deployment sent back: the reference is resolved again
    if isinstance(value, str):
        try:
            parse_reference(value, "environment")
        except InvalidReference as exc:
            errors.append(("environment", str(exc)))
            return {}
        return {"reference": value}  # resolved to its image by the service
    if not isinstance(value, dict):
        errors.append(("environment", "environment is a mapping with image (and for local deployments, venv)."))
        return {}
    refused_fields(value, {key.removeprefix("environment."): reason for key, reason in DEPLOYMENT_REFUSED.items()
                     if key.startswith("environment.")}, errors, "environment.")
    unknown_fields(value, ENVIRONMENT_FIELDS | {"inference_config"}, errors, "'{key}' is not an environment field here.",
                   "environment.")
    if "conda_file" in value:  # realised on top of the image before the inference server starts
        value = {**value, "conda_file": inline_conda_file(value["conda_file"], errors)}
    return dict(value)


def parse_deployment(body: object, endpoint_name: str) -> dict:
    """Validate a deployment body's own fields; resources are checked against the instance type by `resolve_resources`."""
    body = _mapping(body, "online deployment")
    errors: list = []
    refused_fields(body, DEPLOYMENT_REFUSED, errors)
    unknown_fields(body, DEPLOYMENT_FIELDS | DEPLOYMENT_READ_ONLY | set(DEPLOYMENT_REFUSED), errors,
                   "'{key}' is not an online deployment field.")
    if body.get("endpoint_name", endpoint_name) != endpoint_name:
        errors.append(("endpoint_name", f"This deployment is posted to endpoint '{endpoint_name}', not '{body['endpoint_name']}'."))
    model = parse_model(body.get("model"), errors)
    code = body.get("code_configuration")
    code_folder = code.get("code") if isinstance(code, dict) else None  # a model mounted over it would hide it
    instance_type = body.get("instance_type")
    if instance_type is not None and (not isinstance(instance_type, str) or not instance_type):
        errors.append(("instance_type", "instance_type must be an instance type's name."))
    spec = {
        "name": _name(body.get("name"), DEPLOYMENT_NAME, "deployment", errors),
        "endpoint_name": endpoint_name,
        "description": body.get("description") or "",
        "tags": string_map(body.get("tags"), "tags", errors),
        "model": model,
        **({"model_mount_path": parse_mount_path(body["model_mount_path"], model, errors, code_folder)}
           if body.get("model_mount_path") is not None else {}),
        "code_configuration": _code(body.get("code_configuration"), model, errors),
        "environment": _environment(body.get("environment"), errors),
        "environment_variables": string_map(body.get("environment_variables"), "environment_variables", errors, ENV_NAME),
        "instance_type": instance_type or None,
        "instance_count": positive_int(body.get("instance_count"), "instance_count", errors, 1, maximum=INT32_MAX),
        "resources": body.get("resources"),
        "liveness_probe": _probe(body.get("liveness_probe"), "liveness_probe", errors),
        "readiness_probe": _probe(body.get("readiness_probe"), "readiness_probe", errors),
        "request_settings": _settings(body.get("request_settings"), "request_settings", REQUEST_DEFAULTS, errors),
        "scale_settings": _scale(body.get("scale_settings"), errors),
    }
    if "type" in body:
        spec["type"] = enum_value(body["type"], DEPLOYMENT_TYPES, "type", errors)
    if "app_insights_enabled" in body:
        if not isinstance(body["app_insights_enabled"], bool):
            errors.append(("app_insights_enabled", "app_insights_enabled is true or false."))
        spec["app_insights_enabled"] = body["app_insights_enabled"]
    errors.extend(limit_errors(spec))
    if errors:
        raise SpecErrors(errors)
    return spec


LOCAL, KUBERNETES, MANAGED = "local", "kubernetes", "managed"


def target_errors(spec: dict, target: str) -> list[tuple[str, str]]:
    """The fields this deployment's target (local, Kubernetes or managed) cannot act on, each with its reason
    (LOCAL_REFUSED, KUBERNETES_REFUSED, managed.MANAGED_REFUSED)."""
    environment = spec.get("environment") or {}
    if target == MANAGED:
        return managed_errors(spec)
    if target == LOCAL:
        given = {"instance_type": spec.get("instance_type") is not None, "resources": bool(spec.get("resources")),
                 "environment.image": bool(environment.get("image")),
                 "environment.conda_file": bool(environment.get("conda_file")) and "venv" in environment,
                 "readiness_probe": spec.get("readiness_probe", PROBE_DEFAULTS) != PROBE_DEFAULTS,
                 "model.type": (spec.get("model") or {}).get("type") == "mlflow_model" and not spec.get("code_configuration"),
                 "model_mount_path": spec.get("model_mount_path") is not None}
        refused = LOCAL_REFUSED
    else:
        given = {"environment.venv": "venv" in environment, "type": spec.get("type") == "managed"}
        refused = KUBERNETES_REFUSED
    return [(path, refused[path]) for path, present in given.items() if present]
