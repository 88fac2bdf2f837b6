"""A compute cluster's pool manifests (pure): every Azure ML field → its NodePool / MachineDeployment field, the
placeholder that holds min_instances nodes, valid built-in objects (kubernetes-validate's schemas)."""
import kubernetes_validate
import pytest

from compute import pools
from compute.manifests import (
    PLACEHOLDER_PRIORITY_CLASS,
    Pool,
    PoolProblem,
    machinedeployment_manifest,
    nodepool_manifest,
    placeholder_manifest,
    priority_class_manifest,
)
from controlplane.kube.objects import MANAGED_BY

NEWEST = ".".join(str(kubernetes_validate.latest_version()).split(".")[:2])
POOL = Pool(workspace="team-a", compute="gpu-cluster", size="Standard_NC6s_v3", namespace="ml")
CAPI = {
    "cluster_name": "work", "namespace": "capi", "version": "v1.31.2",
    "bootstrap_config_template": {"api_group": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfigTemplate", "name": "workers"},
    "infrastructure_templates": {"Standard_NC6s_v3": {"api_group": "infrastructure.cluster.x-k8s.io",
                                                      "kind": "AzureMachineTemplate", "name": "nc6s-v3"}},
    "low_priority_infrastructure_templates": {"Standard_NC6s_v3": {"api_group": "infrastructure.cluster.x-k8s.io",
                                                                   "kind": "AzureMachineTemplate", "name": "nc6s-v3-spot"}},
}


def pool(**fields) -> Pool:
    return Pool(**{**POOL.__dict__, **fields})


def requirement(nodepool: dict, key: str) -> list[str] | None:
    rows = nodepool["spec"]["template"]["spec"]["requirements"]
    return next((row["values"] for row in rows if row["key"] == key), None)


# Every Azure ML field → where the NodePool says it.
NODEPOOL_FIELDS = [
    ({"size": "Standard_DS3_v2"}, lambda np: requirement(np, "node.kubernetes.io/instance-type"), ["Standard_DS3_v2"]),
    ({"tier": "dedicated"}, lambda np: requirement(np, "karpenter.sh/capacity-type"), ["on-demand"]),
    ({"tier": "low_priority"}, lambda np: requirement(np, "karpenter.sh/capacity-type"), ["spot"]),
    ({"max_instances": 7}, lambda np: np["spec"]["limits"], {"nodes": "7"}),
    ({"idle_seconds": 120}, lambda np: np["spec"]["disruption"], {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "120s"}),
    ({"idle_seconds": 0}, lambda np: np["spec"]["disruption"]["consolidateAfter"], "0s"),
    ({}, lambda np: np["spec"]["template"]["spec"]["expireAfter"], "Never"),
    ({}, lambda np: np["metadata"]["name"], pools.pool_name("team-a", "gpu-cluster")),
    ({}, lambda np: np["spec"]["template"]["spec"]["taints"],
     [{"key": "dockyard.dev/compute", "value": pools.pool_name("team-a", "gpu-cluster"), "effect": "NoSchedule"}]),
    ({"node_selector": {"team": "vision"}}, lambda np: np["spec"]["template"]["metadata"]["labels"],
     {"team": "vision", "dockyard.dev/compute": pools.pool_name("team-a", "gpu-cluster")}),
    # Karpenter refuses template labels of kubernetes.io domains: those selector keys become requirements.
    ({"node_selector": {"kubernetes.io/os": "linux"}}, lambda np: requirement(np, "kubernetes.io/os"), ["linux"]),
    ({}, lambda np: np["spec"]["template"]["spec"]["nodeClassRef"],
     {"group": "karpenter.azure.com", "kind": "AKSNodeClass", "name": "default"}),
    ({}, lambda np: (np["apiVersion"], np["kind"], np["metadata"]["labels"][MANAGED_BY]), ("karpenter.sh/v1", "NodePool", "dockyard")),
]


@pytest.mark.parametrize("fields, read, expected", NODEPOOL_FIELDS)
def test_each_field_lands_in_its_nodepool_field(fields, read, expected):
    assert read(nodepool_manifest(pool(**fields))) == expected


def test_the_node_class_comes_from_the_attachment():
    ref = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"}
    assert nodepool_manifest(POOL, ref)["spec"]["template"]["spec"]["nodeClassRef"] == ref


def test_the_default_consolidation_policy_never_appears():
    assert "WhenEmptyOrUnderutilized" not in str(nodepool_manifest(POOL))


def test_the_placeholder_holds_min_instances_whole_nodes_of_the_pool():
    name = pools.pool_name("team-a", "gpu-cluster")
    deployment = placeholder_manifest(pool(min_instances=2, node_selector={"team": "vision"}), pools.KARPENTER, "pause:3")
    kubernetes_validate.validate(deployment, NEWEST, strict=True)
    spec = deployment["spec"]["template"]["spec"]
    assert (deployment["metadata"]["namespace"], deployment["spec"]["replicas"]) == ("ml", 2)
    assert spec["priorityClassName"] == PLACEHOLDER_PRIORITY_CLASS
    assert spec["nodeSelector"] == {"team": "vision", "node.kubernetes.io/instance-type": "Standard_NC6s_v3",
                                    "karpenter.sh/nodepool": name}
    assert spec["tolerations"] == [pools.pool_toleration(name)]
    node = pools.pool_shape("Standard_NC6s_v3", pools.KARPENTER, name)
    assert spec["containers"][0]["resources"] == node.container_resources()  # one node's allocatable, its GPU too
    assert spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 1
    (term,) = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    # A placeholder must not keep a node from being consolidated once real work preempted it.
    assert "annotations" not in deployment["spec"]["template"]["metadata"]


def test_the_priority_class_is_below_every_pod_and_preempts_none():
    priority = priority_class_manifest()
    kubernetes_validate.validate(priority, NEWEST, strict=True)
    assert priority["value"] < 0 and priority["value"] >= -10  # -10 and below: cluster-autoscaler ignores the pod
    assert (priority["preemptionPolicy"], priority["globalDefault"]) == ("Never", False)


MACHINEDEPLOYMENT_FIELDS = [
    ({"min_instances": 1}, lambda md: md["metadata"]["annotations"]["cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"], "1"),
    ({"max_instances": 5}, lambda md: md["metadata"]["annotations"]["cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"], "5"),
    ({"idle_seconds": 300}, lambda md: md["metadata"]["annotations"]["cluster.x-k8s.io/autoscaling-options-scaledownunneededtime"], "300s"),
    ({}, lambda md: md["spec"]["template"]["spec"]["infrastructureRef"],
     {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AzureMachineTemplate", "name": "nc6s-v3"}),
    ({"tier": "low_priority"}, lambda md: md["spec"]["template"]["spec"]["infrastructureRef"]["name"], "nc6s-v3-spot"),
    ({}, lambda md: md["spec"]["template"]["spec"]["bootstrap"]["configRef"],
     {"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfigTemplate", "name": "workers"}),
    ({}, lambda md: (md["spec"]["clusterName"], md["spec"]["template"]["spec"]["version"], md["metadata"]["namespace"]),
     ("work", "v1.31.2", "capi")),
    ({}, lambda md: md["spec"]["template"]["metadata"]["labels"]["node.cluster.x-k8s.io/dockyard-pool"],
     pools.pool_name("team-a", "gpu-cluster")),
    ({}, lambda md: "replicas" in md["spec"], False),  # the autoscaler's
    ({}, lambda md: {key.rsplit("/", 1)[1]: value for key, value in md["metadata"]["annotations"].items()
                     if key.startswith("capacity.") and not key.endswith("labels")},
     {"cpu": "6", "memory": "114688Mi", "gpu-type": "nvidia.com/gpu", "gpu-count": "1"}),
]


@pytest.mark.parametrize("fields, read, expected", MACHINEDEPLOYMENT_FIELDS)
def test_each_field_lands_in_its_machinedeployment_field(fields, read, expected):
    assert read(machinedeployment_manifest(pool(**fields), CAPI)) == expected


def test_scale_from_zero_labels_name_the_pool_and_the_size():
    labels = machinedeployment_manifest(POOL, CAPI)["metadata"]["annotations"]["capacity.cluster-autoscaler.kubernetes.io/labels"]
    assert f"node.cluster.x-k8s.io/dockyard-pool={pools.pool_name('team-a', 'gpu-cluster')}" in labels.split(",")
    assert "node.kubernetes.io/instance-type=Standard_NC6s_v3" in labels.split(",")


@pytest.mark.parametrize("fields, capi, words", [
    ({"size": "Standard_DS3_v2"}, CAPI, "no template for Standard_DS3_v2 in infrastructure_templates"),
    ({"tier": "low_priority"}, {**CAPI, "low_priority_infrastructure_templates": {}},
     "no template for Standard_NC6s_v3 in low_priority_infrastructure_templates"),
])
def test_a_size_without_a_template_is_a_problem_naming_it(fields, capi, words):
    with pytest.raises(PoolProblem, match=words):
        machinedeployment_manifest(pool(**fields), capi)


def test_an_unknown_size_is_a_problem():
    with pytest.raises(PoolProblem, match="Standard_Nope"):
        placeholder_manifest(pool(size="Standard_Nope", min_instances=1), pools.KARPENTER, "pause:3")
