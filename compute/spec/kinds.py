"""A compute body per type: the fields every type has, and the Kubernetes and compute-cluster types (pure).

Field names are Azure ML's. A field a type does not know is refused by name; the Azure ML fields Dockyard refuses
on purpose say why (`refused`); the few kept as given without acting on them are `kept_as_given`.
"""
from controlplane.specs import enum_choice, tag_map_problem

from .. import vmsizes
from .autoscalers import ClusterApi, NodeClassRef
from .fields import Boolean, Checks, Choice, Field, Integer, Invalid, Json, Mapping, Refused, Text, rule
from .forms import Form, problem
from .rules import compute_name_problem, namespace_problem, node_selector_problem

# Fields of Azure ML's YAML that Dockyard keeps as given without acting on them, so files load unchanged.
KEPT_AS_GIVEN = ("location", "identity", "network_settings", "enable_node_public_ip", "ssh_public_access_enabled")
IGNORED = ("$schema",)
# Azure ML's identity types; its schema reads them in snake case from any spelling (SystemAssigned, system_assigned).
IDENTITY_TYPES = ("system_assigned", "user_assigned", "none", "system_assigned,user_assigned")
TIERS = ("dedicated", "low_priority")
# What a response adds to every compute's fields: taken in a body (a GET's output sent back) and ignored.
SHOWN_COMMON = ("provisioning_state", "provisioning_errors", "backend", "secrets_set", "created_by", "created_on",
                "updated_on")
GIVEN_COMMON = ("name", "type", "description", "tags")
COMMON_FIELDS = frozenset(GIVEN_COMMON + SHOWN_COMMON)
USERNAME_MESSAGE = "Must be a user name: letters, digits, '_', '.', '-'."


def secret(max_length: int = 65536, **kwargs) -> Text:
    """A write-only secret: taken as written (no trimming), stored encrypted, never shown."""
    return Text(write_only=True, required=False, trim=False, max_length=max_length, **kwargs)


def canonical_identity(identity: object) -> dict:
    """An identity kept as given, its `type` in Azure ML's canonical spelling; refused at identity.type when unknown."""
    if not isinstance(identity, dict):
        raise problem("identity", "identity must be a mapping with a type.")
    if "type" not in identity:
        return identity
    canonical = enum_choice(identity["type"], IDENTITY_TYPES)
    if canonical is None:
        raise problem("identity.type", f"One of: {', '.join(IDENTITY_TYPES)} (any case).")
    return {**identity, "type": canonical}


COMMON = {
    "name": Text(max_length=64, rules=(rule(compute_name_problem),)),
    "description": Text(required=False, allow_blank=True, default="", max_length=2000),
    "tags": Json(required=False, default=dict, rules=(rule(tag_map_problem),)),
}


class ComputeKind(Form):
    """A compute type's body: the common fields, then `own`; `secret_fields` are moved out to be stored encrypted."""

    compute_type = ""
    own: dict[str, Field] = {}
    secret_fields: tuple[str, ...] = ()
    kept_as_given: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()  # other spellings `normalise` rewrites into the fields (Azure ML's nested forms)
    refused: dict[str, str] = {}  # Azure ML fields of this type that Dockyard refuses: {field: why, and what instead}
    strict = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.fields = {"name": COMMON["name"], "type": Choice([cls.compute_type]), "description": COMMON["description"],
                      "tags": COMMON["tags"], **cls.own}

    def convert(self, data, checks: Checks):
        if not isinstance(data, dict):
            raise problem("", "The body must be a mapping of fields.")
        refused = [(key, why) for key, why in self.refused.items() if key in data]
        if refused:
            raise Invalid(refused)
        data = self.normalise(dict(data))
        known = {*self.fields, *SHOWN_COMMON, *self.shown, *self.kept_as_given, *IGNORED}
        unknown = sorted(key for key in data if key not in known)
        if unknown:
            raise Invalid([(str(key), f"Unknown field for type '{self.compute_type}'.") for key in unknown])
        if "identity" in data and "identity" in self.kept_as_given:
            data["identity"] = canonical_identity(data["identity"])
        values = self.read(data, checks)
        values.update({key: data[key] for key in self.kept_as_given if key in data})
        return self.validate(values, checks)

    def normalise(self, data: dict) -> dict:
        """Rewrite accepted alternative spellings (Azure ML's nested forms) into our fields."""
        return data

    @classmethod
    def merge_for_update(cls, stored: dict, patch: dict) -> dict:
        """The full body a PATCH amounts to: stored fields overlaid with the patch."""
        return {**stored, **patch}

    def accepted_fields(self) -> frozenset[str]:
        """Every field this type takes (dotted paths; kept-as-given fields and aliases included)."""
        return frozenset(self.accepted() | set(self.kept_as_given) | set(IGNORED) | set(self.aliases))


def size_rule(target: str):
    """A VM size Dockyard lists for `target` (a compute cluster or instance), not retired today."""
    return lambda value, checks: vmsizes.size_problem(value, target, checks.today())


class Kubernetes(ComputeKind):
    compute_type = "kubernetes"
    secret_fields = ("kubeconfig",)
    shown = ("server",)
    refused = {
        "identity": "Dockyard acts on the cluster with the kubeconfig's credentials (or its own service account with "
                    "in_cluster), never with an Azure managed identity; remove identity.",
        "resource_id": "Dockyard cannot look a cluster up in Azure Resource Manager; attach it with its kubeconfig "
                       "instead of its resource ID.",
        "properties": "Give namespace and node_selector as top-level fields; Azure ML's extension properties do not "
                      "apply to a cluster Dockyard attaches itself.",
    }
    own = {
        "kubeconfig": secret(),
        "context": Text(required=False, allow_null=True, default=None, max_length=253),
        "namespace": Text(required=False, default="default", rules=(rule(namespace_problem),)),
        "node_selector": Mapping(Text(allow_blank=True, max_length=63), required=False, default=dict),
        "in_cluster": Boolean(required=False, default=False),
        "karpenter_node_class": NodeClassRef(required=False),
        "cluster_api": ClusterApi(required=False),
    }

    @classmethod
    def merge_for_update(cls, stored: dict, patch: dict) -> dict:
        if patch.get("kubeconfig") and "in_cluster" not in patch:
            stored = {**stored, "in_cluster": False}
        if "kubeconfig" in patch and "context" not in patch:
            stored = {key: value for key, value in stored.items() if key != "context"}
        return {**stored, **patch}

    def check_node_selector(self, value: dict, checks: Checks) -> dict:
        message = node_selector_problem(value)
        if message:
            raise problem("", message)
        return value

    def validate(self, values: dict, checks: Checks) -> dict:
        if values.get("in_cluster"):
            return self._in_cluster(values, checks)
        kubeconfig = values.get("kubeconfig") or checks.secrets.get("kubeconfig")
        if not kubeconfig:
            raise problem("kubeconfig", "A kubeconfig is required to attach a Kubernetes cluster.")
        try:
            summary = checks.cluster(kubeconfig, values.get("context"))  # the worker checks again before each connection
        except Refused as exc:
            raise Invalid.at("kubeconfig", *exc.messages) from None
        values["context"] = summary["context"]
        values["server"] = summary["server"]
        return values

    def _in_cluster(self, values: dict, checks: Checks) -> dict:
        if values.get("kubeconfig"):
            raise problem("in_cluster", "Give either a kubeconfig or in_cluster: true, not both.")
        host, port = checks.in_cluster_server()
        if not host:
            raise problem("in_cluster", "Dockyard is not running inside a Kubernetes pod (KUBERNETES_SERVICE_HOST is not set).")
        values["server"] = f"https://{host}:{port}" if ":" not in host else f"https://[{host}]:{port}"
        values["context"] = None
        values["kubeconfig"] = ""
        return values


# Why a compute cluster refuses Azure ML's fields that describe Azure VMs: its nodes are made by the cluster's
# autoscaler from the node class (Karpenter) or the machine templates (Cluster API) the kubernetes compute names.
_NODES_BY_AUTOSCALER = ("A compute cluster's nodes are made by the attached cluster's autoscaler from its node class "
                        "(Karpenter) or machine templates (Cluster API)")
AML_REFUSED = {
    "identity": f"{_NODES_BY_AUTOSCALER}, which decide the identity nodes run with; Dockyard cannot give one compute "
                "cluster an Azure managed identity. Remove identity (set it on the node class).",
    "network_settings": f"{_NODES_BY_AUTOSCALER}, which decide the network and subnet of the nodes. Remove "
                        "network_settings (set the subnet on the node class).",
    "enable_node_public_ip": f"{_NODES_BY_AUTOSCALER}, which decide whether nodes get public addresses. Remove "
                             "enable_node_public_ip.",
    "ssh_public_access_enabled": f"{_NODES_BY_AUTOSCALER}; Dockyard opens no SSH access to them. Remove "
                                 "ssh_public_access_enabled.",
    "ssh_settings": f"{_NODES_BY_AUTOSCALER}, which set the nodes' users and SSH keys; Dockyard cannot give one "
                    "compute cluster its own admin user or key. Remove ssh_settings.",
}


def _host_problem(name: str | None, computes: dict[str, str]) -> str | None:
    """Why `name` cannot host a compute cluster (None when it can); `computes` are the workspace's {name: type}.
    No name is fine when the workspace has exactly one kubernetes compute."""
    hosts = sorted(key for key, kind in computes.items() if kind == "kubernetes")
    if name is None:
        if not hosts:
            return ("A compute cluster lives on an attached Kubernetes cluster and this workspace has none; attach one "
                    "(type: kubernetes) first, then name it in kubernetes_compute.")
        return None if len(hosts) == 1 else (f"Several kubernetes computes could host this compute cluster "
                                             f"({', '.join(hosts)}); name one in kubernetes_compute.")
    listed = f"the kubernetes computes here: {', '.join(hosts)}" if hosts else "this workspace has no kubernetes compute"
    if name not in computes:
        return f"There is no compute named '{name}' in this workspace; {listed}."
    if computes[name] != "kubernetes":
        return f"'{name}' is a {computes[name]} compute; a compute cluster lives on a kubernetes compute ({listed})."
    return None


class AmlCompute(ComputeKind):
    compute_type = "amlcompute"
    # An Azure region means nothing on an attached cluster (the nodes are where it runs); kept and shown, so the
    # Azure ML files that name one load unchanged (compute/spec/audit.py says so).
    kept_as_given = ("location",)
    refused = AML_REFUSED
    shown = ("status",)
    own = {
        "size": Text(required=False, default="Standard_DS3_v2", rules=(size_rule(vmsizes.CLUSTER),)),
        "tier": Choice(TIERS, required=False, default="dedicated"),
        "min_instances": Integer(minimum=0, maximum=10000, required=False, default=0),
        "max_instances": Integer(minimum=1, maximum=10000, required=False, default=1),
        "idle_time_before_scale_down": Integer(minimum=0, maximum=365 * 86400, required=False, default=120),
        "kubernetes_compute": Text(required=False, max_length=64),
    }

    def validate(self, values: dict, checks: Checks) -> dict:
        if values["min_instances"] > values["max_instances"]:
            raise problem("min_instances", f"min_instances ({values['min_instances']}) must not exceed max_instances "
                                           f"({values['max_instances']}).")
        values["size"] = vmsizes.vm_size(values["size"]).name
        return {**values, "kubernetes_compute": self._host(values.get("kubernetes_compute"), checks)}

    @staticmethod
    def _host(name: str | None, checks: Checks) -> str:
        """The kubernetes compute named, or the workspace's only one when none is named (Azure ML's files name none)."""
        computes = checks.workspace_computes()
        message = _host_problem(name, computes)
        if message:
            raise problem("kubernetes_compute", message)
        return name or next(key for key, kind in computes.items() if kind == "kubernetes")
