"""Accepted means acted on: every field a compute parser takes is acted on, refused with its reason, or declared
stored-only with the reason (STORED_ONLY); record-only types say so in every response."""
import pytest

from compute import shapes
from compute.capabilities import RECORD_ONLY
from compute.spec import ACCEPTED_FIELDS, COMMON_FIELDS, STORED_ONLY
from compute.spec import KINDS as SERIALIZERS
from compute.tests.factories import body
from tests.support import assert_error

URL = "/api/v1/workspaces/team-a/computes/"
SHOWN_OR_VALIDATED = COMMON_FIELDS | {"$schema"}
# What a kubernetes compute does with each of its own fields.
KUBERNETES_ACTS = {
    "kubeconfig": "the credentials every check and reconcile uses", "context": "the kubeconfig context used",
    "namespace": "where jobs and deployments run", "node_selector": "added to every instance type's selector",
    "in_cluster": "use Dockyard's own service account",
    "karpenter_node_class": "the nodeClassRef of its compute clusters' NodePools",
    **{f"karpenter_node_class.{key}": "the NodePools' nodeClassRef" for key in ("group", "kind", "name")},
    "cluster_api": "its compute clusters' MachineDeployments", "cluster_api.cluster_name": "spec.clusterName",
    "cluster_api.namespace": "where the MachineDeployments live", "cluster_api.version": "the machines' version",
    "cluster_api.bootstrap_config_template": "bootstrap.configRef",
    **{f"cluster_api.bootstrap_config_template.{key}": "bootstrap.configRef" for key in ("api_group", "kind", "name")},
    "cluster_api.infrastructure_templates": "infrastructureRef of the size",
    "cluster_api.low_priority_infrastructure_templates": "infrastructureRef of the size, tier low_priority",
}
# What a compute cluster does with each of its own fields (compute/manifests/pools.py, compute/reconcile/clusters.py).
AMLCOMPUTE_ACTS = {
    "size": "requirement node.kubernetes.io/instance-type", "tier": "requirement karpenter.sh/capacity-type",
    "min_instances": "placeholder replicas", "max_instances": "limits.nodes",
    "idle_time_before_scale_down": "disruption.consolidateAfter", "kubernetes_compute": "the cluster and credentials",
}


# What a compute instance does with each of its own fields (compute/instances.py, the kube helper's manifests and
# reconcile, compute/schedules.py and the beat task); only Azure's network and identity are stored only.
COMPUTEINSTANCE_ACTS = {
    "kubernetes_compute": "the cluster, namespace and credentials (or the local sandbox)",
    "instance_type": "the pod's shape", "size": "the pod's shape (a whole node of that size)",
    "assigned_user": "who may open, start and stop it", "idle_time_before_shutdown_minutes": "idle shutdown",
    "idle_time_before_shutdown": "idle shutdown", "schedules": "the beat task fires them",
    **{f"schedules.compute_start_stop{rest}": "compute/schedules.py" for rest in (
        "", ".action", ".state", ".trigger", ".trigger.type", ".trigger.expression", ".trigger.frequency",
        ".trigger.interval", ".trigger.schedule", ".trigger.start_time", ".trigger.time_zone")},
}

# What an SSH host (virtualmachine, hdinsight) does with its fields: the attach (compute/reconcile/vms.py) reaches it,
# records and checks its host key, logs in and probes it.
SSH_HOST_ACTS = {
    "address": "where the check connects", "ssh_port": "the port it connects to", "admin_username": "who logs in",
    "admin_password": "password login, only when given", "ssh_private_key": "key login",
    "ssh_settings": "Azure ML's nesting of the four above", "host_key_fingerprint": "confirms the key on first contact",
}
SSH_TYPES = ("virtualmachine", "hdinsight")


@pytest.mark.parametrize("compute_type", SSH_TYPES)
def test_every_ssh_host_field_is_acted_on_but_its_azure_resource_id(compute_type):
    stored_only = {key.split(".", 1)[1] for key in STORED_ONLY if key.startswith(f"{compute_type}.")}
    assert stored_only == {"resource_id"}
    assert ACCEPTED_FIELDS[compute_type] - SHOWN_OR_VALIDATED - stored_only == set(SSH_HOST_ACTS)


def test_every_computeinstance_field_is_acted_on_but_azures_network_and_identity():
    stored_only = {key.split(".", 1)[1] for key in STORED_ONLY if key.startswith("computeinstance.")}
    assert stored_only == {"network_settings", "enable_node_public_ip", "identity", "location"}
    assert ACCEPTED_FIELDS["computeinstance"] - SHOWN_OR_VALIDATED - stored_only == set(COMPUTEINSTANCE_ACTS)


@pytest.mark.parametrize("compute_type", sorted(RECORD_ONLY))
def test_every_field_of_a_record_only_type_is_declared_stored_only(compute_type):
    acted_on = set(SSH_HOST_ACTS) if compute_type in SSH_TYPES else set()  # the attach uses them (HDInsight runs no job)
    undeclared = {key for key in ACCEPTED_FIELDS[compute_type] - SHOWN_OR_VALIDATED - acted_on
                  if f"{compute_type}.{key}" not in STORED_ONLY}
    assert undeclared == set()


def test_every_kubernetes_field_is_acted_on():
    assert ACCEPTED_FIELDS["kubernetes"] - SHOWN_OR_VALIDATED == set(KUBERNETES_ACTS)
    assert not [key for key in STORED_ONLY if key.startswith("kubernetes.")]


def test_stored_only_names_only_accepted_fields_each_with_a_sentence():
    for path, why in STORED_ONLY.items():
        compute_type, field = path.split(".", 1)
        assert field in ACCEPTED_FIELDS[compute_type], path
        assert why.endswith(".") and len(why) > 40, path


def test_every_amlcompute_field_is_acted_on_but_its_region():
    assert ACCEPTED_FIELDS["amlcompute"] - SHOWN_OR_VALIDATED == {*AMLCOMPUTE_ACTS, "location"}
    assert [key for key in STORED_ONLY if key.startswith("amlcompute.")] == ["amlcompute.location"]


def test_every_type_is_either_run_or_record_only():
    assert set(SERIALIZERS) == set(RECORD_ONLY) | {"kubernetes", "amlcompute", "computeinstance", "virtualmachine"}


def test_the_instance_type_parser_stores_nothing_inert():
    assert shapes.STORED_ONLY == {}
    assert {"name", "nodeSelector", "resources.requests.cpu"} <= shapes.ACCEPTED_FIELDS


REFUSED = [(compute_type, field, why) for compute_type, cls in SERIALIZERS.items() for field, why in cls.refused.items()]


@pytest.mark.parametrize("compute_type, field, why", REFUSED, ids=[f"{t}-{f}" for t, f, _ in REFUSED])
def test_refused_azure_fields_say_why(owner_api, workspace, compute_type, field, why):
    response = owner_api.post(URL, body(compute_type, **{field: {"type": "SystemAssigned"}}), format="json")
    error = assert_error(response, 400, "ValidationError", field)
    assert why in str(error)
    assert field not in {key for key in ACCEPTED_FIELDS[compute_type]}
