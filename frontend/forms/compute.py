"""The studio's compute create form: fields per type, the body they amount to, and that body as YAML.

The body is exactly what the REST API and the CLI accept, so the type's serializer stays the one validator:
this module only turns form fields into that body (numbers as ints, key=value lines as maps, the schedule row as
Azure ML's structure) and refuses only input that has no such form at all.
"""
import re
from dataclasses import replace
from urllib.parse import urlsplit

import yaml
from django.core.exceptions import ValidationError
from django.utils import timezone

from compute import validators, vmsizes
from compute.choices import ComputeType, Tier
from compute.selectors import kubernetes_compute_list
from compute.serializers import SERIALIZERS
from controlplane.parsers import load_yaml
from controlplane.reconciling import ProvisioningState
from workspaces.access import local_compute_allowed

from .fields import BoundField, Field, as_number, errors_by_field, parse_pairs
from .pickers import host_choices, instance_type_suggestions, member_choices, size_rows
from .yaml import as_yaml, pasted_document

HIDDEN = "<hidden>"
LOCAL = "local"
SIZE_KINDS = (("all", "All"), ("cpu", "CPU"), ("gpu", "GPU"))  # the size picker's filter
WEEK_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


NAME = Field("name", "Compute name", required=True, help="2–24 letters, digits or hyphens, starting with a letter.")
DESCRIPTION = Field("description", "Description", "textarea")
TAGS = Field("tags", "Tags", "pairs", help="One key=value per line.")
SIZE = Field(
    "size", "Virtual machine size", "size", initial="Standard_DS3_v2", help="Suggestions come from the VM-size catalog."
)
RESOURCE_ID = Field(
    "resource_id", "Azure resource ID",
    help="/subscriptions/<id>/resourceGroups/<group>/providers/<provider>/<type>/<name>",
)
SSH_HOST = (
    Field("address", "Host address", required=True, help="IP address or DNS name."),
    Field("ssh_port", "SSH port", "int", initial="22"),
    Field("admin_username", "User name", required=True),
    Field("admin_password", "Password", "password", help="Give a password or a private key."),
    Field(
        "ssh_private_key", "SSH private key", "secret_text", help="PEM or OpenSSH private key: paste it or choose the file."
    ),
    Field(
        "host_key_fingerprint", "Host key fingerprint (SHA256:…)",
        help="Optional: what ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub prints on the host. Given, the attach "
             "goes on at once when the host presents that key; left empty, you confirm the key it presents first.",
    ),
)

TYPE_FIELDS: dict[str, tuple[Field, ...]] = {
    ComputeType.COMPUTEINSTANCE: (
        Field("kubernetes_compute", "Kubernetes compute", "host",
              help="The attached Kubernetes cluster it runs on (or local, this server's sandbox, where staff allow it)."),
        Field("instance_type", "Instance type", "suggest",
              help="An instance type of that compute; or leave it empty and pick a VM size below (neither: the "
                   "compute's default instance type)."),
        replace(SIZE, kind="size_picker", initial="", help="The VM size whose vCPUs, memory and GPUs the instance gets."),
        Field("assigned_user", "Assigned user", "member",
              help="Only this member (and staff) can open it; owners can also start and stop it."),
        Field(
            "idle_time_before_shutdown_minutes", "Idle shutdown after (minutes)", "int",
            help="15 minutes to 3 days; empty means the instance never shuts down on its own.",
        ),
        Field("schedule", "Start/stop schedule", "schedule", help="Optional; the CLI can add up to four."),
    ),
    ComputeType.AMLCOMPUTE: (
        Field("kubernetes_compute", "Kubernetes compute", "host",
              help="The attached Kubernetes cluster whose autoscaler makes this cluster's nodes."),
        Field("tier", "Virtual machine tier", "select", initial=Tier.DEDICATED,
              choices=((Tier.DEDICATED, "Dedicated"), (Tier.LOW_PRIORITY, "Low priority (may be pre-empted)"))),
        replace(SIZE, kind="size_picker", help="Each node of the cluster is one VM of this size: its vCPUs, memory and GPUs go to one job instance."),
        Field("min_instances", "Minimum number of nodes", "int", initial="0", help="0 lets the cluster scale to zero."),
        Field("max_instances", "Maximum number of nodes", "int", initial="1"),
        Field("idle_time_before_scale_down", "Idle seconds before scale down", "int", initial="120",
              help="A node with no job for this long is removed (down to the minimum)."),
    ),
    ComputeType.KUBERNETES: (
        Field("kubeconfig", "Kubeconfig", "secret_text", required=True,
              help="Stored encrypted and never shown again; paste it or choose the file."),
        Field("context", "Context", "context", help="The contexts of the kubeconfig appear once it is pasted or chosen."),
        Field("namespace", "Namespace", initial="default", help="Jobs and deployments of this compute run here."),
        Field("node_selector", "Node selector", "pairs", help="label=value per line; added to every instance type."),
    ),
    ComputeType.VIRTUALMACHINE: SSH_HOST,
    ComputeType.HDINSIGHT: SSH_HOST,
    ComputeType.DATALAKEANALYTICS: (replace(RESOURCE_ID, required=True),),
    ComputeType.SYNAPSESPARK: (replace(RESOURCE_ID, required=True),),
    ComputeType.DATABRICKS: (
        Field("workspace_url", "Workspace URL", required=True, help="e.g. https://adb-1234.5.azuredatabricks.net"),
        Field("access_token", "Access token", "password", required=True),
        RESOURCE_ID,
    ),
    ComputeType.BATCH: (
        Field("account_name", "Batch account name", required=True, help="3–24 lowercase letters or digits."),
        Field("account_url", "Account URL"),
        Field("account_key", "Account key", "password", required=True),
        RESOURCE_ID,
    ),
}

# One or more real size names per catalog series; the catalog itself decides which are offered (retired, cluster-only).
EXAMPLE_SIZES = {
    "DDSv4": ("Standard_D2ds_v4", "Standard_D4ds_v4", "Standard_D8ds_v4"),
    "Dv2": ("Standard_D2_v2", "Standard_D3_v2"),
    "Dv3": ("Standard_D2_v3", "Standard_D4_v3"),
    "DSv2": ("Standard_DS2_v2", "Standard_DS3_v2", "Standard_DS4_v2"),
    "DSv3": ("Standard_D2s_v3", "Standard_D4s_v3", "Standard_D8s_v3"),
    "EAv4": ("Standard_E4as_v4", "Standard_E8as_v4"),
    "Ev3": ("Standard_E4_v3", "Standard_E8_v3"),
    "ESv3": ("Standard_E4s_v3", "Standard_E8s_v3"),
    "FSv2": ("Standard_F4s_v2", "Standard_F8s_v2", "Standard_F72s_v2"),
    "FX": ("Standard_FX4mds", "Standard_FX12mds"),
    "H": ("Standard_H8", "Standard_H16r"),
    "HB": ("Standard_HB60rs",),
    "HBv2": ("Standard_HB120rs_v2",),
    "HBv3": ("Standard_HB120rs_v3",),
    "HC": ("Standard_HC44rs",),
    "LSv2": ("Standard_L8s_v2",),
    "M": ("Standard_M64s", "Standard_M128ms"),
    "NC": ("Standard_NC6",),
    "NC Promo": ("Standard_NC6_Promo",),
    "NCv2": ("Standard_NC6s_v2",),
    "NCv3": ("Standard_NC6s_v3", "Standard_NC12s_v3", "Standard_NC24s_v3", "Standard_NC24rs_v3"),
    "ND": ("Standard_ND6s",),
    "NDv2": ("Standard_ND40rs_v2",),
    "NV": ("Standard_NV6",),
    "NVv3": ("Standard_NV12s_v3",),
    "NCasT4_v3": ("Standard_NC4as_T4_v3", "Standard_NC16as_T4_v3", "Standard_NC64as_T4_v3"),
    "NDasrA100_v4": ("Standard_ND96asr_v4",),
    "NV_Promo": ("Standard_NV6_Promo",),
    "Av1": ("Standard_A2",),
}
SIZE_TARGETS = {ComputeType.COMPUTEINSTANCE: vmsizes.INSTANCE, ComputeType.AMLCOMPUTE: vmsizes.CLUSTER}


def fields_for(compute_type: str) -> tuple[Field, ...]:
    return (NAME, DESCRIPTION, *TYPE_FIELDS[compute_type], TAGS)


def size_suggestions(compute_type: str) -> list[tuple[str, str]]:
    """(size, label) pairs the catalog accepts today for this type: no retired series, FX only for clusters."""
    target, today = SIZE_TARGETS[compute_type], timezone.now().date()
    suggestions = []
    for series in vmsizes.SERIES:
        label = f"{series.name} · {vmsizes.CATEGORIES[series.category]}"
        if series.gpu_architecture:
            label += f" · {series.gpu_architecture}, CUDA ≥ {series.min_cuda}"
        sizes = EXAMPLE_SIZES.get(series.name, ())
        suggestions += [(size, label) for size in sizes if vmsizes.size_problem(size, target, today) is None]
    return suggestions


def public_server(server: str) -> str:
    """A server URL without any user:password@ part, fit to show."""
    parts = urlsplit(server)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl() if parts.netloc else server


def kubeconfig_contexts(text: str) -> list[dict]:
    """The contexts a kubeconfig offers: name, server, namespace, whether current, and what is wrong with it.

    Only names and server URLs are read out (the kubeconfig itself is never sent back to the browser); each context
    goes through the same validator the serializer uses, so a context offered here is one the attach accepts.
    Raises ValueError when the text is no kubeconfig at all.
    """
    try:
        config = load_yaml(text)
    except (yaml.YAMLError, ValueError):
        raise ValueError("The kubeconfig is not valid YAML.") from None
    if not isinstance(config, dict) or not isinstance(config.get("contexts"), list):
        raise ValueError("The kubeconfig has no list of contexts.")
    names = [item["name"] for item in config["contexts"] if isinstance(item, dict) and isinstance(item.get("name"), str)]
    rows = []
    for name in names:
        row = {"name": name, "current": name == config.get("current-context"), "server": "", "namespace": "", "problem": ""}
        try:
            summary = validators.kubeconfig_summary(text, name)
        except ValidationError as exc:
            row["problem"] = exc.messages[0]
        else:
            row.update(server=public_server(summary["server"]), namespace=summary["namespace"] or "")
        rows.append(row)
    return rows


def chosen_context(contexts: list[dict], asked: str) -> str:
    """The context to select: the one asked for if offered, else the current-context, else the first."""
    names = [row["name"] for row in contexts]
    if asked in names or not names:
        return asked
    return next((row["name"] for row in contexts if row["current"]), names[0])


def context_choices(kubeconfig: str, asked: str) -> dict:
    """Template values for the context picker: the contexts offered, the one selected, or why none could be read."""
    values = {"contexts": [], "context_choice": asked, "contexts_error": ""}
    if not kubeconfig.strip():
        return values
    try:
        values["contexts"] = kubeconfig_contexts(kubeconfig)
    except ValueError as exc:
        values["contexts_error"] = str(exc)
    values["context_choice"] = chosen_context(values["contexts"], asked)
    return values


def schedule_values(data) -> dict:
    return {
        "action": data.get("schedule_action", ""),
        "time": data.get("schedule_time", ""),
        "days": data.getlist("schedule_days") if hasattr(data, "getlist") else data.get("schedule_days", []),
        "time_zone": data.get("schedule_time_zone", "UTC"),
    }


def schedule_body(data) -> dict | None:
    """The form's one schedule row as Azure ML's `schedules.compute_start_stop` (a weekly or daily recurrence)."""
    row = schedule_values(data)
    if not row["action"]:
        return None
    match = re.fullmatch(r"(\d{1,2}):(\d{2})", row["time"].strip())
    if not match:
        raise ValueError("Give the time of the schedule as HH:MM.")
    recurrence = {"hours": [int(match[1])], "minutes": [int(match[2])]}
    if row["days"]:
        recurrence["week_days"] = list(row["days"])
    trigger = {
        "type": "recurrence", "frequency": "week" if row["days"] else "day", "interval": 1,
        "schedule": recurrence, "time_zone": row["time_zone"].strip() or "UTC",
    }
    return {"compute_start_stop": [{"action": row["action"], "trigger": trigger}]}


def read_value(spec: Field, data, files):
    """One field's value for the body; raises ValueError for input that cannot be turned into a value at all."""
    if spec.kind == "schedule":
        return schedule_body(data)
    raw = data.get(spec.name, "")
    if spec.kind == "secret_text" and files.get(f"{spec.name}_file"):
        upload = files[f"{spec.name}_file"]
        upload.seek(0)  # one request reads the form more than once (body, YAML, contexts)
        try:
            return upload.read().decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError("The file is not UTF-8 text.") from None
    if spec.kind in ("password", "secret_text"):
        return raw  # secrets are kept byte for byte: keys end in newlines
    if spec.kind == "pairs":
        return parse_pairs(raw)
    raw = raw.strip()
    return as_number(raw) if spec.kind == "int" else raw


def compute_body(compute_type: str, data, files) -> tuple[dict, list[dict]]:
    """The API body the form amounts to, and rows {target, message} for input that could not be read."""
    body, problems = {}, []
    for spec in fields_for(compute_type):
        try:
            value = read_value(spec, data, files)
        except ValueError as exc:
            problems.append({"target": spec.name, "message": str(exc)})
            continue
        if value not in (None, "", {}):
            body["schedules" if spec.kind == "schedule" else spec.name] = value
    head = {"name": body.pop("name")} if "name" in body else {}
    return {**head, "type": compute_type, **body}, problems


def body_yaml(compute_type: str, body: dict, secrets_set=()) -> str:
    """The body as the YAML file the CLI and REST accept; secrets (given or stored) show as <hidden>."""
    secret_fields = SERIALIZERS[compute_type].secret_fields
    shown = {key: HIDDEN if key in secret_fields else value for key, value in body.items()}
    for key in secrets_set:
        parent, _, child = key.rpartition(".")  # a nested secret (ssh_settings.admin_password) shows in its mapping
        if parent:
            shown[parent] = {**(shown.get(parent) or {}), child: HIDDEN}
        else:
            shown[key] = HIDDEN
    return as_yaml(shown, text_blocks=False)


def initial_data(compute_type: str, workspace=None, user=None) -> dict:
    """The form's starting values; a compute cluster or instance starts on the workspace's Kubernetes compute when it
    has one only, an instance is for the user filling the form."""
    data = {spec.name: spec.initial for spec in fields_for(compute_type) if spec.initial}
    if any(spec.kind == "host" for spec in fields_for(compute_type)) and workspace is not None:
        hosts = host_choices(workspace)
        if len(hosts) == 1:
            data["kubernetes_compute"] = hosts[0][0]
    if compute_type == ComputeType.COMPUTEINSTANCE and user is not None:
        data["assigned_user"] = user.username
    return data


def pasted_body(text: str, compute_type: str) -> dict:
    """Pasted YAML as one compute's body, of the page's type unless it names its own."""
    body = pasted_document(text, empty="Paste a compute's YAML: at least `name`.", several="Paste one compute at a time")
    if not isinstance(body, dict):
        raise ValueError("The YAML must be a mapping of fields (name, type, size, …).")
    return {"type": compute_type, **body}


def options_for(spec: Field, compute_type: str, workspace) -> tuple[list, list]:
    """(suggestions, options) of one field: the datalist of a size box, or the rows of a picker."""
    if spec.kind == "size":
        return size_suggestions(compute_type), []
    if spec.kind == "size_picker":
        return [], size_rows(SIZE_TARGETS[compute_type])
    if workspace is None:
        return [], []
    if spec.kind == "host":
        local = [(LOCAL, "local — this server's sandbox")] if compute_type == ComputeType.COMPUTEINSTANCE and \
            local_compute_allowed(workspace) else []
        return [], host_choices(workspace) + local
    if spec.kind == "member":
        return [], member_choices(workspace)
    if spec.kind == "suggest":
        return instance_type_suggestions(workspace), []
    return [], []


def field_of(target: str) -> str:
    """The form field an error's target belongs to (`schedules.compute_start_stop.0.trigger.time_zone` → schedule)."""
    head = (target or "").split(".", 1)[0]
    return "schedule" if head == "schedules" else head


def bind(compute_type: str, data, errors: list[dict], workspace=None) -> tuple[list[BoundField], list[dict]]:
    """Fields with their current values and errors, plus the errors that belong to no field."""
    names = {spec.name for spec in fields_for(compute_type)}
    by_field = errors_by_field(errors, field_of)
    bound = []
    for spec in fields_for(compute_type):
        if spec.kind == "schedule":
            value = schedule_values(data)
        elif spec.kind in ("password", "secret_text"):
            value = ""  # a secret is never sent back to the browser
        else:
            value = data.get(spec.name, "")
        suggestions, options = options_for(spec, compute_type, workspace)
        bound.append(BoundField(spec, value, by_field.get(spec.name, []), suggestions, options))
    stray = [row for row in errors if field_of(row["target"]) not in names]
    return bound, stray


def target_choices(workspace) -> list[tuple[str, str]]:
    """Where a job or an endpoint can run: local (when this server allows it) and each Kubernetes compute."""
    choices = [(LOCAL, "local — the worker's host")] if local_compute_allowed(workspace) else []
    for compute in kubernetes_compute_list(workspace=workspace):
        state = "" if compute.provisioning_state == ProvisioningState.SUCCEEDED else f" ({compute.provisioning_state})"
        choices.append((compute.name, f"{compute.name} — Kubernetes{state}"))
    return choices
