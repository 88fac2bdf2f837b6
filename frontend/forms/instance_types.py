"""The studio's instance-type form: fields ↔ the API body, that body as the InstanceType CR, and pasted YAML.

The body is the flat form the API accepts (`{name, nodeSelector, resources}`); the service checks it against the
seed's rules and names each problem by its path (`resources.requests.cpu`), which `field_of` maps back to a field.
The preview shows the same body as the CR (`kind: InstanceType`) that `kubectl apply` and the API also accept.
"""
import difflib

import yaml

from compute.manifests import INSTANCE_TYPE_API_VERSION
from controlplane.kube.objects import GPU

from .fields import BoundField, Field, errors_by_field, parse_pairs
from .yaml import as_yaml, pasted_documents

DEFAULT_INSTANCE_TYPE = "defaultinstancetype"
YAML_EXAMPLE = """apiVersion: amlarc.azureml.com/v1alpha1
kind: InstanceType
metadata:
  name: gpu-small
spec:
  nodeSelector:
    nvidia.com/gpu.present: "true"
  resources:
    requests:
      cpu: "1"
      memory: 4Gi
    limits:
      cpu: "2"
      memory: 8Gi
      nvidia.com/gpu: 1
"""

FIELDS = (
    Field("name", "Name", required=True, help="Lowercase letters, digits, '-' and '.'; unique on the cluster."),
    Field("node_selector", "Node selector", "pairs",
          help="label=value per line; pods of this type run only on nodes with all these labels."),
    Field("requests_cpu", "CPU", required=True, help='Cores ("1") or millicores ("500m").'),
    Field("requests_memory", "Memory", required=True, help="A number and a unit: 1500Mi, 4Gi."),
    Field("limits_cpu", "CPU", required=True, help="At least the request."),
    Field("limits_memory", "Memory", required=True, help="At least the request."),
    Field("limits_gpu", "GPUs", "int", help="nvidia.com/gpu, whole GPUs; empty for none."),
)
RESOURCE_FIELDS = {
    "requests_cpu": ("requests", "cpu"), "requests_memory": ("requests", "memory"),
    "limits_cpu": ("limits", "cpu"), "limits_memory": ("limits", "memory"), "limits_gpu": ("limits", GPU),
}
FIELD_OF_TARGET = {f"resources.{section}.{key}": name for name, (section, key) in RESOURCE_FIELDS.items()}


def shape_label(row: dict) -> str:
    """An instance type's requests/limits and GPUs in a few words: 700m/1 cpu, 1500Mi/2Gi, 1 GPU.

    Limits alone read the same for types that differ in what they reserve, so both are shown.
    """
    requests, limits = row["resources"]["requests"], row["resources"]["limits"]
    gpu = limits.get(GPU)
    text = f"{requests['cpu']}/{limits['cpu']} cpu, {requests['memory']}/{limits['memory']}"
    return text + (f", {gpu} GPU" if gpu else "")


def choice_label(row: dict) -> str:
    """How a dropdown names an instance type: gpu-small — 700m/1 cpu, 1500Mi/2Gi, 1 GPU."""
    return f"{row['name']} — {shape_label(row)}"


def menu(rows: list[dict]) -> list[tuple[str, str]]:
    """A compute's instance types as dropdown choices: empty (the default's shape, as the default is used) first."""
    default = next((row for row in rows if row["name"] == DEFAULT_INSTANCE_TYPE), None)
    choices = [("", choice_label(default) if default else DEFAULT_INSTANCE_TYPE)]
    return choices + [(row["name"], choice_label(row)) for row in rows if row["name"] != DEFAULT_INSTANCE_TYPE]


def body_of(data) -> tuple[dict, list[dict]]:
    """The API body the form amounts to, and rows {target, message} for input that could not be read."""
    problems = []
    try:
        selector = parse_pairs(data.get("node_selector", ""))
    except ValueError as exc:
        problems.append({"target": "nodeSelector", "message": str(exc)})
        selector = {}
    resources: dict = {"requests": {}, "limits": {}}
    for name, (section, key) in RESOURCE_FIELDS.items():
        raw = data.get(name, "").strip()
        if raw:
            # A mistyped GPU count goes through as text, so the service names the problem like the API does.
            resources[section][key] = int(raw) if key == GPU and raw.isdigit() else raw
    body = {"name": data.get("name", "").strip()}
    if selector:
        body["nodeSelector"] = selector
    body["resources"] = resources
    return body, problems


def cr_of(body: dict) -> dict:
    """A flat body as the InstanceType custom resource."""
    spec = {"nodeSelector": body["nodeSelector"]} if body.get("nodeSelector") else {}
    resources = body.get("resources") or {}
    spec["resources"] = {section: {key: value for key, value in (values or {}).items() if value is not None}
                         for section, values in resources.items()}
    return {"apiVersion": INSTANCE_TYPE_API_VERSION, "kind": "InstanceType", "metadata": {"name": body.get("name", "")}, "spec": spec}


def cr_yaml(document) -> str:
    """An instance type's CR or spec as YAML (multi-line strings stay quoted, as they always were here)."""
    return as_yaml(document, text_blocks=False)


def data_of(row: dict) -> dict:
    """Form values for an instance type as the selectors return it (edit and override start from these)."""
    resources = row["resources"]
    data = {"name": row["name"], "node_selector": "\n".join(f"{key}={value}" for key, value in row["nodeSelector"].items())}
    for name, (section, key) in RESOURCE_FIELDS.items():
        value = resources.get(section, {}).get(key)
        data[name] = "" if value in (None, 0) and key == GPU else str(value if value is not None else "")
    return data


def field_of(target: str) -> str:
    """The form field an error's path belongs to ("" for none): `resources.limits.cpu` → limits_cpu."""
    target = target or ""
    if target == "name":
        return "name"
    if target.startswith("nodeSelector"):
        return "node_selector"
    return FIELD_OF_TARGET.get(target, "")


def bind(data, errors: list[dict]) -> tuple[dict[str, BoundField], list[dict]]:
    """Fields by name with their values and errors, plus the errors that belong to no field."""
    by_field = errors_by_field(errors, field_of)
    bound = {spec.name: BoundField(spec, data.get(spec.name, ""), by_field.get(spec.name, [])) for spec in FIELDS}
    return bound, [row for row in errors if not field_of(row["target"])]


def pasted_body(text: str) -> object:
    """Pasted YAML as one body: an InstanceType, an InstanceTypeList, or several InstanceTypes separated by ---."""
    documents = pasted_documents(text)
    if not documents:
        raise ValueError("Paste an InstanceType or an InstanceTypeList.")
    if len(documents) == 1:
        return documents[0]
    return {"apiVersion": INSTANCE_TYPE_API_VERSION, "kind": "InstanceTypeList", "items": documents}


def spec_diff(wanted: dict, observed: dict) -> list[tuple[tuple[str, bool], tuple[str, bool]]]:
    """Two specs as YAML lines side by side, each flagged when it differs from the other side."""
    # Sorted keys: the server may give the fields back in another order, which is no difference.
    left, right = (yaml.safe_dump(spec or {}, sort_keys=True, width=100).splitlines() for spec in (wanted, observed))
    rows = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=left, b=right, autojunk=False).get_opcodes():
        changed = tag != "equal"
        a, b = left[i1:i2], right[j1:j2]
        for index in range(max(len(a), len(b))):
            rows.append(((a[index] if index < len(a) else "", changed), (b[index] if index < len(b) else "", changed)))
    return rows
