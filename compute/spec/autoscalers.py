"""A `kubernetes` compute's settings for the autoscaler that makes its compute clusters' nodes (pure).

`karpenter_node_class` is the `nodeClassRef` every NodePool Dockyard declares on the cluster points at (AKS's own
`karpenter.azure.com/AKSNodeClass/default` when omitted); `cluster_api` is what a Cluster API `MachineDeployment`
needs where the cluster has no Karpenter but cluster-autoscaler with Cluster API (the attached cluster is then its own
management cluster). Which of the two is used is found on the cluster (discovery), not chosen here.
"""
import re

from controlplane.kube import names

from .. import vmsizes
from .fields import Checks, Mapping, Pattern, Text, rule
from .forms import Form, problem
from .rules import namespace_problem

# AKS Node Auto-Provisioning's node class: what Karpenter on AKS is installed with.
AKS_NODE_CLASS = {"group": "karpenter.azure.com", "kind": "AKSNodeClass", "name": "default"}
KIND = re.compile(r"^[A-Z][A-Za-z0-9]{0,62}$")
KIND_MESSAGE = "Must be a Kubernetes kind such as AKSNodeClass: a capital letter, then letters and digits."
# A Kubernetes version as Cluster API writes it in a MachineDeployment (v1.31.2, v1.31.2+rke2r1).
VERSION = re.compile(r"^v\d+\.\d+\.\d+([-+][0-9A-Za-z.+-]+)?$")


def _subdomain(value: str) -> str | None:
    return names.dns_subdomain_problem(value)


def _group(value: str) -> str | None:
    """An API group: a DNS subdomain with at least one dot (the core group has no custom kinds)."""
    return names.dns_subdomain_problem(value) or (None if "." in value else f"'{value}' is not an API group such as "
                                                                            "karpenter.azure.com.")


class NodeClassRef(Form):
    """Karpenter's `nodeClassRef`: the provider's node class every NodePool of this cluster uses."""

    fields = {
        "group": Text(max_length=253, rules=(rule(_group),)),
        "kind": Pattern(KIND, messages={"invalid": KIND_MESSAGE}),
        "name": Text(max_length=253, rules=(rule(_subdomain),)),
    }


class TemplateRef(Form):
    """A Cluster API template a MachineDeployment refers to (v1beta2's `apiGroup`, `kind`, `name`)."""

    fields = {
        "api_group": Text(max_length=253, rules=(rule(_group),)),
        "kind": Pattern(KIND, messages={"invalid": KIND_MESSAGE}),
        "name": Text(max_length=253, rules=(rule(_subdomain),)),
    }


def _by_size(templates: dict) -> dict:
    """A per-size map keyed by each size's canonical name; a size whose shape Dockyard does not know is refused (the
    autoscaler is told each size's capacity)."""
    unknown = [key for key in templates if vmsizes.vm_size(key) is None]
    if unknown:
        raise problem(unknown[0], f"'{unknown[0]}' is not a VM size Dockyard knows the vCPUs and memory of; see "
                                  "GET /api/v1/vm-sizes/.")
    return {vmsizes.vm_size(key).name: ref for key, ref in templates.items()}


class ClusterApi(Form):
    """What a MachineDeployment per compute cluster needs: the Cluster it belongs to, where it lives, the Kubernetes
    version of its machines, the bootstrap config template, and an infrastructure template per VM size (spot ones
    apart, for `tier: low_priority`)."""

    fields = {
        "cluster_name": Text(max_length=63, rules=(rule(names.dns_label_problem),)),
        "namespace": Text(rules=(rule(namespace_problem),)),
        "version": Pattern(VERSION, max_length=64, messages={"invalid": "Must be a Kubernetes version such as v1.31.2."}),
        "bootstrap_config_template": TemplateRef(),
        "infrastructure_templates": Mapping(TemplateRef()),
        "low_priority_infrastructure_templates": Mapping(TemplateRef(), required=False, default=dict),
    }

    def check_infrastructure_templates(self, value: dict, checks: Checks) -> dict:
        if not value:
            raise problem("", "Name an infrastructure template for at least one VM size.")
        return _by_size(value)

    def check_low_priority_infrastructure_templates(self, value: dict, checks: Checks) -> dict:
        return _by_size(value)
