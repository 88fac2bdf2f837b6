"""The studio's job submit form: fields → the Azure ML command-job body, that body as YAML, and pasted YAML.

The body is exactly what the REST API and the CLI accept, so `jobs.services.job_create` stays the one validator:
this module only turns form fields into that body (numbers as ints, key=value lines as maps, the compute choice as
`azureml:<name>`) and maps each error's field path (`resources.instance_count`) back to the field it came from.
"""
from dataclasses import replace

from compute.choices import ComputeType
from compute.selectors import compute_list, instance_type_list, kubernetes_compute_list

from .compute import LOCAL, target_choices
from .fields import BoundField, Field, as_number, errors_by_field, parse_pairs
from .instance_types import menu
from .yaml import pasted_document

SCHEMA = "https://azuremlschemas.azureedge.net/latest/commandJob.schema.json"
SERVERLESS = "serverless"
YAML_EXAMPLE = f"""$schema: {SCHEMA}
type: command
display_name: hello
experiment_name: Default
command: echo hello from $HOSTNAME
compute: azureml:my-kubernetes
environment:
  image: python:3.11-slim
resources:
  instance_count: 1
limits:
  timeout: 600
"""

FIELDS = (
    Field("display_name", "Display name", help="What the job list shows; the job's name when empty."),
    Field("experiment_name", "Experiment", initial="Default", help="Groups related jobs; the job list filters by it."),
    Field("name", "Job name", help="Unique in the workspace; generated (e.g. calm_otter_1a2b3c4d) when empty."),
    Field("command", "Command", "code", required=True,
          help="Runs in a shell; ${{inputs.x}} references work when the YAML declares the inputs."),
    Field("compute", "Compute", "select", required=True,
          help="local: a process on the worker's host; serverless: Dockyard picks a Kubernetes compute that fits."),
    Field("code", "Code", "upload",
          help="A folder (its .amlignore, else .gitignore, says what stays behind), a .zip or a .tar.gz: stored once "
               "as an upload and written out as the job's working folder. After an upload this holds its "
               "azureml://uploads/<sha256>, which later jobs may name too."),
    Field("image", "Container image", help="Required on Kubernetes and serverless, e.g. python:3.11-slim; leave it empty for local (a local job runs on the host)."),
    Field("instance_type", "Instance type", "select"),
    Field("instance_count", "Instance count", "int", initial="1", help="Nodes (pods) the job runs on."),
    Field("timeout", "Timeout (seconds)", "int", help="The job is stopped after this long; empty for no limit."),
    Field("environment_variables", "Environment variables", "pairs", help="NAME=value per line."),
    Field("tags", "Tags", "pairs", help="One key=value per line."),
)
FIELD_NAMES = {spec.name for spec in FIELDS}
SPEC_ORDER = ("display_name", "experiment_name", "description", "compute", "command", "code", "environment",
              "environment_variables", "resources", "distribution", "limits", "inputs", "outputs", "tags")
# Error paths of the job body → the field that wrote them (the first match wins).
FIELD_OF_PREFIX = (
    ("environment_variables", "environment_variables"),
    ("environment", "image"),
    ("resources.instance_type", "instance_type"),
    ("resources.instance_count", "instance_count"),
    ("limits", "timeout"),
    ("tags", "tags"),
)


def compute_of_choice(choice: str) -> str | None:
    """The form's compute choice as the job YAML writes it: local, azureml:<name>, or nothing (serverless)."""
    if choice in ("", SERVERLESS):
        return None
    return choice if choice == LOCAL else f"azureml:{choice}"


def job_body(data) -> tuple[dict, list[dict]]:
    """The API body the form amounts to, and rows {target, message} for input that could not be read."""
    problems, maps = [], {}
    for name in ("environment_variables", "tags"):
        try:
            maps[name] = parse_pairs(data.get(name, ""))
        except ValueError as exc:
            problems.append({"target": name, "message": str(exc)})
            maps[name] = {}
    text = {spec.name: (data.get(spec.name) or "").strip() for spec in FIELDS if spec.kind not in ("pairs", "code")}
    body = {"$schema": SCHEMA, "type": "command"}
    body.update({key: text[key] for key in ("name", "display_name", "experiment_name") if text[key]})
    # The command is kept as typed (minus a trailing newline): scripts care about their whitespace.
    body["command"] = (data.get("command") or "").replace("\r\n", "\n").rstrip("\n")
    if text["code"]:
        body["code"] = text["code"]
    compute = compute_of_choice(text["compute"])
    if compute:
        body["compute"] = compute
    if text["image"]:
        body["environment"] = {"image": text["image"]}
    if maps["environment_variables"]:
        body["environment_variables"] = maps["environment_variables"]
    resources = {key: value for key, value in (("instance_type", text["instance_type"]),
                                               ("instance_count", as_number(text["instance_count"]))) if value != ""}
    if resources:
        body["resources"] = resources
    if text["timeout"]:
        body["limits"] = {"timeout": as_number(text["timeout"])}
    if maps["tags"]:
        body["tags"] = maps["tags"]
    return body, problems


def preview_body(data) -> dict:
    """The body as the YAML preview shows it: a folder or archive picked but not sent yet is `code: ./<its name>`,
    as the CLI's file would name it."""
    body, _ = job_body(data)
    picked = (data.get("code_name") or "").strip()
    if "code" in body or not picked:
        return body
    shown = {}
    for key, value in body.items():
        shown[key] = value
        if key == "command":  # where job_body puts `code` too
            shown["code"] = f"./{picked}"
    return shown


def field_of(target: str) -> str:
    """The form field an error's path belongs to ("" for none): `resources.instance_count` → instance_count."""
    target = target or ""
    for prefix, name in FIELD_OF_PREFIX:
        if target == prefix or target.startswith(prefix + "."):
            return name
    return target if target in FIELD_NAMES else ""


def compute_clusters(workspace) -> list:
    """The workspace's compute clusters, by name (a job takes whole nodes of the cluster's size)."""
    return list(compute_list(workspace=workspace, load_creators=False, types=[ComputeType.AMLCOMPUTE]).order_by("name"))


def compute_choices(workspace) -> list[tuple[str, str]]:
    """Where a job can run: local (when this server allows it), each Kubernetes compute, each compute cluster,
    serverless."""
    clusters = [(cluster.name, f"{cluster.name} — compute cluster ({cluster.properties.get('size')})")
                for cluster in compute_clusters(workspace)]
    return [*target_choices(workspace), *clusters, (SERVERLESS, "serverless")]


def initial_compute(choices: list[tuple[str, str]]) -> str:
    """A Kubernetes compute if there is one (what teams mostly run on), else local, else serverless."""
    kubernetes = [value for value, _ in choices if value not in (LOCAL, SERVERLESS)]
    return kubernetes[0] if kubernetes else choices[0][0]


def instance_type_choices(workspace, compute_choice: str) -> tuple[list[tuple[str, str]], str]:
    """The instance types the chosen compute offers, and a note on what leaving it empty means."""
    if compute_choice == LOCAL:
        return [("", "none (local)")], "A local job is one process on the worker's host: it has no pod shape."
    computes = list(kubernetes_compute_list(workspace=workspace))
    if compute_choice == SERVERLESS:
        names = sorted({row["name"] for compute in computes for row in instance_type_list(compute=compute)})
        choices = [("", "the smallest that fits a node now")]
        return choices + [(name, name) for name in names], "Placement picks the compute that has this instance type free."
    cluster = next((cluster for cluster in compute_clusters(workspace) if cluster.name == compute_choice), None)
    if cluster is not None:
        size = cluster.properties.get("size", "")
        return [("", f"{size} (the cluster's size)")], "Each instance takes one whole node of the compute cluster's size."
    compute = next((compute for compute in computes if compute.name == compute_choice), None)
    rows = instance_type_list(compute=compute) if compute else []
    return menu(rows), "Pod shape (requests, limits, node selector) from the compute's instance types."


def initial_data(workspace) -> dict:
    """What an empty form starts with: the fields' initial values and the likeliest compute."""
    data = {spec.name: spec.initial for spec in FIELDS if spec.initial}
    data["compute"] = initial_compute(compute_choices(workspace))
    return data


def bind(workspace, data, errors: list[dict]) -> tuple[dict[str, BoundField], list[dict]]:
    """Fields by name with their values, choices and errors, plus the errors that belong to no field."""
    by_field = errors_by_field(errors, field_of)
    computes = compute_choices(workspace)
    compute = data.get("compute") or initial_compute(computes)
    instance_types, instance_type_help = instance_type_choices(workspace, compute)
    dynamic = {"compute": {"choices": tuple(computes)},
               "instance_type": {"choices": tuple(instance_types), "help": instance_type_help}}
    bound = {}
    for spec in FIELDS:
        spec = replace(spec, **dynamic.get(spec.name, {}))
        bound[spec.name] = BoundField(spec, data.get(spec.name, ""), by_field.get(spec.name, []))
    bound["compute"].value = compute
    return bound, [row for row in errors if not field_of(row["target"])]


def pasted_body(text: str) -> object:
    """Pasted YAML as one job body; refuses text that is not YAML or holds several documents."""
    return pasted_document(text, empty="Paste a command job: at least `command`, and `compute` unless it runs serverless.",
                           several="Paste one job per submission")


def spec_document(spec: dict, compute: str | None, *, with_name: bool = True) -> dict:
    """A job's spec as the YAML file people write (Azure ML's key order); without its name, a file to submit again."""
    body = {"$schema": SCHEMA, "type": "command"}
    if with_name:
        body["name"] = spec.get("name")
    values = {**spec, "compute": compute}
    for key in (*SPEC_ORDER, *spec):
        if key not in body and key not in ("name", "type") and values.get(key) not in (None, "", {}, []):
            body[key] = values[key]
    return body
