"""The studio's endpoint forms: create an endpoint, add a deployment (fields or pasted YAML), the traffic split.

Each form only turns its fields into the body the REST API and the CLI accept (`compute: azureml:<name>`, numbers as
ints, key=value lines as maps, resources as requests/limits); `endpoints.services` stays the one validator and names
each problem by its field path (`resources.requests.cpu`), which `field_of` maps back to the field that wrote it.
"""
from dataclasses import replace

from django.conf import settings

from compute import vmsizes
from compute.selectors import instance_type_list
from controlplane.kube.objects import GPU

from .compute import LOCAL, target_choices
from .fields import BoundField, Field, as_number, errors_by_field, parse_pairs
from .instance_types import menu
from .yaml import pasted_document

DEPLOYMENT_SCHEMA = "https://azuremlschemas.azureedge.net/latest/kubernetesOnlineDeployment.schema.json"
NAME_HELP = "3–32 letters, digits or '-', starting with a letter."

# The create-endpoint form.
ENDPOINT_FIELDS = (
    Field("name", "Endpoint name", required=True, help=NAME_HELP + " Part of the scoring URL."),
    Field("compute", "Compute", "select", required=True,
          help="local: inference servers on the worker's host; a Kubernetes compute: a Deployment per deployment; "
               "managed: each deployment is placed on a compute cluster of its VM size."),
    Field("auth_mode", "Authentication", "select", initial="key",
          choices=(("key", "Key: two keys, shown once"), ("aml_token", "Token: a member's Dockyard API token"))),
    Field("description", "Description", "textarea"),
)

# The add-deployment form.
DEPLOYMENT_FIELDS = (
    Field("name", "Deployment name", required=True, help=NAME_HELP + " e.g. blue, green."),
    Field("code", "Code folder", required=True, help="The folder holding the scoring script (a path on the Dockyard host "
                                                     "for local deployments, in the image for Kubernetes)."),
    Field("scoring_script", "Scoring script", required=True, initial="score.py",
          help="Relative to the code folder; it defines init() and run(raw_data)."),
    Field("model", "Model", help="Optional: a registered model (azureml:<name>:<version> or azureml:<name>@latest) or a "
                                 "file or folder, given to the script as AZUREML_MODEL_DIR."),
    Field("image", "Environment image", help="The container image, required on Kubernetes (not for local deployments: they run in a venv), e.g. "
                                             "mcr.microsoft.com/azureml/minimal-ubuntu22.04-py39-cpu-inference:latest."),
    Field("venv", "Python venv", help="Local only: the venv the server runs in, with azureml-inference-server-http "
                                      "(filled in: the one this server provides)."),
    Field("instance_type", "Instance type", "select"),
    Field("instance_count", "Instance count", "int", initial="1", help="Replicas of the server."),
    Field("environment_variables", "Environment variables", "pairs", help="NAME=value per line."),
    Field("requests_cpu", "CPU", help='Cores ("1") or millicores ("500m").'),
    Field("requests_memory", "Memory", help="A number and a unit: 512Mi, 2Gi."),
    Field("limits_cpu", "CPU", help="Less than the instance type's."),
    Field("limits_memory", "Memory", help="Less than the instance type's."),
    Field("limits_gpu", "GPUs", "int", help="nvidia.com/gpu, whole GPUs, up to the instance type's."),
)
DEPLOYMENT_FIELD_NAMES = {spec.name for spec in DEPLOYMENT_FIELDS}
RESOURCE_FIELDS = {
    "requests_cpu": ("requests", "cpu"), "requests_memory": ("requests", "memory"),
    "limits_cpu": ("limits", "cpu"), "limits_memory": ("limits", "memory"), "limits_gpu": ("limits", GPU),
}
# Error paths of the deployment body → the field that wrote them (the first match wins).
FIELD_OF_PREFIX = (
    ("code_configuration.scoring_script", "scoring_script"),
    ("code_configuration", "code"),
    ("environment_variables", "environment_variables"),
    ("environment.venv", "venv"),
    ("environment", "image"),
    ("model", "model"),
    *((f"resources.{section}.{key}", name) for name, (section, key) in RESOURCE_FIELDS.items()),
    ("resources.requests", "requests_cpu"),
    ("resources", "requests_cpu"),  # a local deployment's resources, refused as a whole
    ("instance_type", "instance_type"),
    ("instance_count", "instance_count"),
    ("name", "name"),
)
YAML_EXAMPLE = f"""$schema: {DEPLOYMENT_SCHEMA}
name: blue
model:
  path: ./model
code_configuration:
  code: ./onlinescoring
  scoring_script: score.py
environment:
  image: mcr.microsoft.com/azureml/minimal-ubuntu22.04-py39-cpu-inference:latest
instance_type: defaultinstancetype
instance_count: 1
"""
# A local deployment runs in a venv on the worker's host: no image, no instance type (they would be refused).
LOCAL_YAML_EXAMPLE = f"""$schema: {DEPLOYMENT_SCHEMA}
name: blue
model:
  path: /srv/models/model
code_configuration:
  code: /srv/onlinescoring
  scoring_script: score.py
"""


def pasted_deployment(text: str) -> object:
    """Pasted YAML as one deployment body; refuses text that is not YAML or holds several documents."""
    return pasted_document(text, empty="Paste an online deployment.", several="Paste one online deployment at a time")


# Create an endpoint

MANAGED = "managed"  # the form's choice for an endpoint without `compute`, which Dockyard places (Azure ML's managed)


def endpoint_body(data) -> dict:
    """The API body of the create form."""
    compute = (data.get("compute") or "").strip()
    body = {"name": (data.get("name") or "").strip(), "auth_mode": data.get("auth_mode") or "key"}
    if compute != MANAGED:
        body["compute"] = compute if compute in ("", LOCAL) else f"azureml:{compute}"
    description = (data.get("description") or "").strip()
    if description:
        body["description"] = description
    return body


def endpoint_initial(workspace) -> dict:
    choices = target_choices(workspace)
    kubernetes = [value for value, _ in choices if value != LOCAL]
    return {"auth_mode": "key", "compute": kubernetes[0] if kubernetes else (choices[0][0] if choices else "")}


def bind_endpoint(workspace, data, errors: list[dict]) -> tuple[dict[str, BoundField], list[dict]]:
    """The create form's fields with values, choices and errors, plus the errors that belong to no field."""
    names = {spec.name for spec in ENDPOINT_FIELDS}
    by_field = errors_by_field(errors, lambda target: (target or "").split(".", 1)[0])
    bound = {}
    for spec in ENDPOINT_FIELDS:
        if spec.name == "compute":
            managed = (MANAGED, "managed — placed on a compute cluster of each deployment's VM size")
            spec = replace(spec, choices=(*target_choices(workspace), managed))
        bound[spec.name] = BoundField(spec, data.get(spec.name, ""), by_field.get(spec.name, []))
    return bound, [row for row in errors if (row["target"] or "").split(".", 1)[0] not in names]


# Add a deployment


def instance_type_choices(endpoint) -> tuple[list[tuple[str, str]], str]:
    """The instance types a deployment of this endpoint can name, and what leaving the field empty means."""
    if endpoint.is_managed:
        return [(size.name, f"{size.name} — {size.vcpus} vCPU, {size.memory_gib:g} GiB" + (f", {size.gpus} GPU" if size.gpus else ""))
                for size in vmsizes.SIZES], ("A VM size: each instance takes one node of that size on a compute cluster "
                                             "of the workspace, which Dockyard picks (leave resources out).")
    if endpoint.compute_id is None:
        return [("", "none (local)")], ("A local deployment runs as a process on the worker's host: it has no instance "
                                        "type and no resource limits (leave resources out).")
    return menu(instance_type_list(compute=endpoint.compute)), "Requests, limits and node selector of the pods, from the compute's instance types."


def deployment_initial(endpoint) -> dict:
    data = {spec.name: spec.initial for spec in DEPLOYMENT_FIELDS if spec.initial}
    if endpoint.is_local:
        data["venv"] = str(settings.DOCKYARD_INFERENCE_VENV)  # what a local server runs in, said out loud
    return data


def deployment_body(data, endpoint_name: str) -> tuple[dict, list[dict]]:
    """The deployment YAML the form amounts to, and rows {target, message} for input that could not be read."""
    problems = []
    try:
        variables = parse_pairs(data.get("environment_variables", ""))
    except ValueError as exc:
        problems.append({"target": "environment_variables", "message": str(exc)})
        variables = {}
    text = {spec.name: (data.get(spec.name) or "").strip() for spec in DEPLOYMENT_FIELDS if spec.kind != "pairs"}
    body = {"$schema": DEPLOYMENT_SCHEMA, "name": text["name"], "endpoint_name": endpoint_name}
    if text["model"]:
        # a registered model is named by its reference, as the YAML does; anything else is a path
        body["model"] = text["model"] if text["model"].startswith("azureml:") else {"path": text["model"]}
    if text["code"] or text["scoring_script"]:
        body["code_configuration"] = {"code": text["code"], "scoring_script": text["scoring_script"]}
    environment = {key: text[key] for key in ("image", "venv") if text[key]}
    if environment:
        body["environment"] = environment
    if text["instance_type"]:
        body["instance_type"] = text["instance_type"]
    if text["instance_count"]:
        body["instance_count"] = as_number(text["instance_count"])
    if variables:
        body["environment_variables"] = variables
    resources: dict = {}
    for name, (section, key) in RESOURCE_FIELDS.items():
        if text[name]:
            resources.setdefault(section, {})[key] = as_number(text[name]) if key == GPU else text[name]
    if resources:
        body["resources"] = resources
    return body, problems


def deployment_field_of(target: str) -> str:
    """The form field an error's path belongs to ("" for none): `resources.limits.cpu` → limits_cpu."""
    target = target or ""
    for prefix, name in FIELD_OF_PREFIX:
        if target == prefix or target.startswith(prefix + "."):
            return name
    return ""


def bind_deployment(endpoint, data, errors: list[dict]) -> tuple[dict[str, BoundField], list[dict]]:
    """The deployment form's fields by name with values, choices and errors, plus the errors of no field."""
    by_field = errors_by_field(errors, deployment_field_of)
    choices, help_text = instance_type_choices(endpoint)
    bound = {}
    for spec in DEPLOYMENT_FIELDS:
        if spec.name == "instance_type":
            spec = replace(spec, choices=tuple(choices), help=help_text)
        bound[spec.name] = BoundField(spec, data.get(spec.name, ""), by_field.get(spec.name, []))
    return bound, [row for row in errors if not deployment_field_of(row["target"])]


def spec_document(deployment) -> dict:
    """A deployment as the YAML file people write: what was given, in Azure ML's order, defaults included."""
    spec = deployment.spec
    body = {"$schema": DEPLOYMENT_SCHEMA, "name": deployment.name, "endpoint_name": deployment.endpoint.name}
    for key in ("description", "model", "code_configuration", "environment", "environment_variables"):
        if spec.get(key) not in (None, "", {}, []):
            body[key] = spec[key]
    if deployment.instance_type:  # a local deployment has none (the API shows null)
        body["instance_type"] = deployment.instance_type
    body["instance_count"] = deployment.instance_count
    for key in ("resources", "scale_settings", "request_settings", "liveness_probe", "readiness_probe"):
        if spec.get(key) not in (None, {}):
            body[key] = spec[key]
    return body


# The traffic split


def traffic_body(data, names: list[str]) -> dict:
    """`traffic` and `mirror_traffic` from the sliders (one per deployment) and the mirror row."""
    traffic = {name: as_number((data.get(f"traffic.{name}") or "0").strip()) for name in names if f"traffic.{name}" in data}
    mirror_name = (data.get("mirror_deployment") or "").strip()
    mirror = {mirror_name: as_number((data.get("mirror_percent") or "0").strip())} if mirror_name else {}
    return {"traffic": traffic, "mirror_traffic": mirror}
