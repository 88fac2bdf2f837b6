"""Online endpoints and deployments as the CLI sees them: traffic options, telling documents apart, comparing (pure)."""
import copy
import re

from .documents import contains
from .errors import EXIT_USAGE, InvalidInput
from .jobs import as_strings

# What `PATCH online-endpoints/{ep}/` can change; name and compute are fixed once created.
ENDPOINT_EDITABLE = ("description", "tags", "auth_mode", "traffic", "mirror_traffic")
TRAFFIC_FIELDS = ("traffic", "mirror_traffic")
# A deployment's own fields, as `GET …/deployments/{d}/` shows them (after the API filled in its defaults).
DEPLOYMENT_FIELDS = (
    "description", "tags", "model", "model_mount_path", "code_configuration", "environment", "environment_variables",
    "liveness_probe", "readiness_probe", "request_settings", "scale_settings", "app_insights_enabled", "data_collector",
    "instance_type", "instance_count", "resources",
)
# Azure ML's YAML of these resources: `$schema` names the kind; without one, fields only the kind has tell.
ENDPOINT_SCHEMAS = ("managedonlineendpoint", "kubernetesonlineendpoint")
DEPLOYMENT_SCHEMAS = ("managedonlinedeployment", "kubernetesonlinedeployment")
DEPLOYMENT_ONLY_KEYS = ("endpoint_name", "code_configuration", "scale_settings", "liveness_probe", "readiness_probe",
                        "request_settings", "instance_count", "model", "model_mount_path", "app_insights_enabled",
                        "data_collector")
ENDPOINT_ONLY_KEYS = ("auth_mode", "traffic", "mirror_traffic", "scoring_uri")
TRAFFIC_ITEM = re.compile(r"^\s*([^=:\s]+)\s*[=:]\s*(-?\d+)\s*$")
# Key types of `regenerate-keys --key-type` and the fields of the one answer that shows a new key.
KEY_TYPES = ("primary", "secondary")
KEY_FIELDS = ("primaryKey", "secondaryKey")


LOCAL_INSTANCE_TYPE = "none (local)"


def online_kind(body: dict) -> str | None:
    """`online-endpoint`, `online-deployment`, or None for a document that is neither."""
    schema = str(body.get("$schema") or "").lower()
    if any(name in schema for name in DEPLOYMENT_SCHEMAS):
        return "online-deployment"
    if any(name in schema for name in ENDPOINT_SCHEMAS):
        return "online-endpoint"
    if any(key in body for key in DEPLOYMENT_ONLY_KEYS):
        return "online-deployment"
    if any(key in body for key in ENDPOINT_ONLY_KEYS):
        return "online-endpoint"
    if "compute" in body and not any(key in body for key in ("type", "kind", "command")):
        return "online-endpoint"  # `name` and `compute` only: the smallest endpoint YAML
    return None


def parse_traffic(text: str, option: str) -> dict[str, int]:
    """`blue=90,green=10` (or Azure CLI's `blue=90 green=10`, or `blue:90`) as {deployment: percent}; `""` clears it."""
    traffic: dict[str, int] = {}
    for item in filter(None, re.split(r"[,\s]+", re.sub(r"\s*([=:])\s*", r"\1", text.strip()))):
        match = TRAFFIC_ITEM.match(item)
        if match is None:
            raise InvalidInput(f"'{item}' is not DEPLOYMENT=PERCENT (e.g. {option} \"blue=90,green=10\").", target=option,
                               code="InvalidOption", exit_code=EXIT_USAGE)
        name, percent = match.group(1), int(match.group(2))
        if name in traffic:
            raise InvalidInput(f"'{name}' is given twice.", target=option, code="InvalidOption", exit_code=EXIT_USAGE)
        traffic[name] = percent
    return traffic


def traffic_text(traffic) -> str | None:
    """{blue: 90, green: 10} as `blue=90,green=10` (None when there is none)."""
    if not isinstance(traffic, dict) or not traffic:
        return None
    return ",".join(f"{name}={percent}" for name, percent in traffic.items())


def live(traffic) -> dict:
    """The shares that send something: a deployment at 0 is the same as one left out."""
    return {name: percent for name, percent in (traffic or {}).items() if percent} if isinstance(traffic, dict) else traffic


def compute_name(reference) -> str:
    """`azureml:NAME` and `NAME` name the same compute; `local` is local."""
    return str(reference or "").removeprefix("azureml:").strip()


def same_endpoint_field(key: str, desired, current) -> bool:
    if key in TRAFFIC_FIELDS:
        return live(desired) == live(current)
    if key == "tags":
        return as_strings(desired or {}) == (current or {})
    if key == "description":
        return (desired or "") == (current or "")
    if key == "auth_mode":
        return (desired or "key") == current
    return desired == current


def endpoint_changes(document: dict, current: dict) -> list[str]:
    """The editable fields the document sets to something new (a field left out is left as it is)."""
    return [key for key in ENDPOINT_EDITABLE if key in document and not same_endpoint_field(key, document[key], current.get(key))]


def deployments_named(document: dict) -> set[str]:
    """Every deployment the document's traffic and mirror_traffic name."""
    names: set[str] = set()
    for key in TRAFFIC_FIELDS:
        if isinstance(document.get(key), dict):
            names.update(str(name) for name in document[key])
    return names


def editable_view(endpoint: dict) -> dict:
    """The fields `update` may change, as the endpoint has them now (a copy: `--set` changes it in place)."""
    return copy.deepcopy({key: endpoint.get(key) for key in ENDPOINT_EDITABLE})


def as_model(value):
    """A model path given as a string is `{path, type: custom_model}` to the API."""
    return {"path": value, "type": "custom_model"} if isinstance(value, str) else value


def same_deployment_field(key: str, desired, current) -> bool:
    if key in ("tags", "environment_variables"):
        return as_strings(desired or {}) == (current or {})
    if key == "description":
        return (desired or "") == (current or "")
    if key == "model":
        return contains(current, as_model(desired))
    if key == "instance_type" and desired is None:
        return True  # the default instance type, whichever it is
    return contains(current, desired)  # the API fills in defaults (probes, request and scale settings)


def deployment_changes(document: dict, current: dict) -> list[str]:
    """The fields of a deployment document that differ from the deployment (left out: left as they are)."""
    return [key for key in DEPLOYMENT_FIELDS if key in document and not same_deployment_field(key, document[key], current.get(key))]


def deployment_view(deployment: dict) -> dict:
    """A deployment's own fields as shown (a copy), to change with `--set` or to tell whether a PATCH changed anything."""
    return copy.deepcopy({key: deployment.get(key) for key in DEPLOYMENT_FIELDS})


def changed_keys(before: dict, after: dict) -> list[str]:
    return [key for key in dict.fromkeys([*before, *after]) if before.get(key) != after.get(key)]


def shown_keys(body: dict) -> dict[str, str]:
    """The keys an answer shows (once): `keys: {primaryKey, secondaryKey}` on create, `primaryKey` on regenerate."""
    keys = body.get("keys") if isinstance(body.get("keys"), dict) else body
    return {field: keys[field] for field in KEY_FIELDS if isinstance(keys.get(field), str) and keys[field]}


def instance_type_cell(row: dict) -> str:
    """A deployment's instance type; a local one has none (the API says null) and the studio says so too."""
    return row.get("instance_type") or LOCAL_INSTANCE_TYPE


def ready_cell(row: dict) -> str | None:
    """`ready/replicas` of a deployment, from its observed status."""
    status = row.get("status") or {}
    if "ready_replicas" not in status and "replicas" not in status:
        return None
    return f"{status.get('ready_replicas') or 0}/{status.get('replicas', row.get('instance_count')) or 0}"
