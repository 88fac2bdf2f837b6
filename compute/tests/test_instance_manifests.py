"""A compute instance's manifests (pure): names, every field where it lands, the shape split between JupyterLab and
code-server, and valid built-in objects (kubernetes-validate's schemas)."""
import base64
import hashlib
from dataclasses import replace

import kubernetes_validate
import pytest

from compute import shapes, vmsizes
from compute.manifests.instances import (
    INSTANCE_LABEL,
    Instance,
    instance_manifests,
    instance_names,
    split_shape,
)
from controlplane.kube.objects import MANAGED_BY
from controlplane.kube.quantities import cpu_millicores, memory_bytes
from controlplane.kube.resources import Shape

NEWEST = ".".join(str(kubernetes_validate.latest_version()).split(".")[:2])
TOKEN = "t" * 43
INSTANCE = Instance(workspace="team-a", name="notebook", namespace="ml", shape=shapes.DEFAULT_SHAPE, running=True,
                    token=TOKEN, image="quay.io/jupyter/scipy-notebook:2025-12-01",
                    code_server_image="docker.io/codercom/code-server:4.106.3")


def objects(**fields) -> dict:
    return {item["kind"]: item for item in instance_manifests(replace(INSTANCE, **fields))}


def pod(**fields) -> dict:
    return objects(**fields)["StatefulSet"]["spec"]["template"]["spec"]


def container(name: str, **fields) -> dict:
    return next(item for item in pod(**fields)["containers"] if item["name"] == name)


def test_names_follow_the_contract():
    names = instance_names("notebook")
    assert (names.statefulset, names.service, names.secret, names.claim, names.pod) == (
        "ci-notebook", "ci-notebook", "ci-notebook-token", "home-ci-notebook-0", "ci-notebook-0")


@pytest.mark.parametrize("fields", [{}, {"running": False}, {"shape": vmsizes.size_shape("Standard_NC6s_v3").on({"pool": "gpu"})},
                                    {"disk_gb": 100}])
def test_every_manifest_is_a_valid_object(fields):
    for manifest in instance_manifests(replace(INSTANCE, **fields)):
        assert kubernetes_validate.validate(manifest, NEWEST, strict=True) == NEWEST


def read_env(container_spec: dict, name: str) -> dict:
    return next(item for item in container_spec["env"] if item["name"] == name)


# Every field → where it lands.
FIELDS = [
    ({}, lambda o: [o[k]["metadata"]["name"] for k in ("Secret", "Service", "StatefulSet")],
     ["ci-notebook-token", "ci-notebook", "ci-notebook"]),
    ({}, lambda o: {o[k]["metadata"]["namespace"] for k in o}, {"ml"}),
    ({}, lambda o: o["StatefulSet"]["metadata"]["labels"],
     {MANAGED_BY: "dockyard", "dockyard.dev/kind": "compute-instance", "dockyard.dev/workspace": "team-a",
      "dockyard.dev/compute": "notebook", INSTANCE_LABEL: "notebook"}),
    ({}, lambda o: base64.b64decode(o["Secret"]["data"]["JUPYTER_TOKEN"]).decode(), TOKEN),
    ({}, lambda o: base64.b64decode(o["Secret"]["data"]["HASHED_PASSWORD"]).decode(), hashlib.sha256(TOKEN.encode()).hexdigest()),
    ({}, lambda o: o["Service"]["spec"]["clusterIP"], "None"),
    ({}, lambda o: [(p["name"], p["port"], p["targetPort"]) for p in o["Service"]["spec"]["ports"]],
     [("jupyter", 8888, "jupyter"), ("vscode", 8080, "vscode")]),
    ({}, lambda o: o["Service"]["spec"]["selector"], {INSTANCE_LABEL: "notebook", "dockyard.dev/workspace": "team-a"}),
    ({}, lambda o: o["StatefulSet"]["spec"]["selector"]["matchLabels"], {INSTANCE_LABEL: "notebook", "dockyard.dev/workspace": "team-a"}),
    ({"running": True}, lambda o: o["StatefulSet"]["spec"]["replicas"], 1),
    ({"running": False}, lambda o: o["StatefulSet"]["spec"]["replicas"], 0),
    ({}, lambda o: o["StatefulSet"]["spec"]["serviceName"], "ci-notebook"),
    ({}, lambda o: o["StatefulSet"]["spec"]["podManagementPolicy"], "Parallel"),
    ({}, lambda o: o["StatefulSet"]["spec"]["persistentVolumeClaimRetentionPolicy"], {"whenScaled": "Retain", "whenDeleted": "Delete"}),
    ({}, lambda o: [(t["metadata"]["name"], t["spec"]["accessModes"], t["spec"]["resources"]["requests"]["storage"])
                    for t in o["StatefulSet"]["spec"]["volumeClaimTemplates"]], [("home", ["ReadWriteOnce"], "32Gi")]),
    ({"disk_gb": 100}, lambda o: o["StatefulSet"]["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"], "100Gi"),
]


@pytest.mark.parametrize("fields, read, expected", FIELDS)
def test_each_field_lands_where_it_should(fields, read, expected):
    assert read(objects(**fields)) == expected


POD_FIELDS = [
    (lambda p: p["securityContext"]["runAsNonRoot"], True),
    (lambda p: (p["securityContext"]["runAsUser"], p["securityContext"]["fsGroup"]), (1000, 100)),
    (lambda p: p["automountServiceAccountToken"], False),
    (lambda p: [c["name"] for c in p["containers"]], ["jupyter", "vscode"]),
    (lambda p: {m["mountPath"] for c in p["containers"] for m in c["volumeMounts"]}, {"/home/jovyan"}),
    (lambda p: [c["securityContext"]["allowPrivilegeEscalation"] for c in p["containers"]], [False, False]),
    (lambda p: [c["readinessProbe"]["httpGet"] for c in p["containers"]],
     [{"path": "/instances/team-a/notebook/jupyter/api", "port": "jupyter"}, {"path": "/healthz", "port": "vscode"}]),
]


@pytest.mark.parametrize("read, expected", POD_FIELDS)
def test_each_pod_field(read, expected):
    assert read(pod()) == expected


def test_jupyter_runs_under_dockyards_path_with_the_token_from_the_secret():
    jupyter = container("jupyter")
    assert jupyter["image"] == INSTANCE.image and "command" not in jupyter  # the image's tini stays PID 1
    args = jupyter["args"]
    assert args[0] == "start-notebook.py"
    for flag in ("--ServerApp.base_url=/instances/team-a/notebook/jupyter/", "--ServerApp.ip=0.0.0.0",
                 "--ServerApp.terminals_enabled=True", "--ServerApp.port=8888"):
        assert flag in args
    assert not any("allow_origin" in arg or TOKEN in arg for arg in args)
    assert read_env(jupyter, "JUPYTER_TOKEN")["valueFrom"] == {"secretKeyRef": {"name": "ci-notebook-token", "key": "JUPYTER_TOKEN"}}


def test_code_server_uses_password_auth_and_no_idle_timeout_of_its_own():
    vscode = container("vscode")
    assert vscode["image"] == INSTANCE.code_server_image
    assert "--bind-addr=0.0.0.0:8080" in vscode["args"] and "--auth=password" in vscode["args"]
    assert not any("idle-timeout" in arg for arg in vscode["args"])
    assert read_env(vscode, "HASHED_PASSWORD")["valueFrom"]["secretKeyRef"] == {"name": "ci-notebook-token", "key": "HASHED_PASSWORD"}
    assert read_env(vscode, "HOME")["value"] == "/home/jovyan"  # its settings and extensions survive a stop


def test_the_shape_places_the_pod_as_a_jobs_is_placed():
    shape = vmsizes.size_shape("Standard_NC6s_v3").on({"pool": "gpu"})
    spec = pod(shape=shape)
    assert spec["nodeSelector"] == {"pool": "gpu", "node.kubernetes.io/instance-type": "Standard_NC6s_v3"}
    assert container("jupyter", shape=shape)["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert "nvidia.com/gpu" not in container("vscode", shape=shape)["resources"]["limits"]


def total(resources: list[dict], section: str, key: str) -> int:
    measure = cpu_millicores if key == "cpu" else memory_bytes
    return sum(measure(item[section][key]) for item in resources)


SHAPES = [
    shapes.DEFAULT_SHAPE,  # 100m/2Gi requests, 2/2Gi limits
    vmsizes.size_shape("Standard_DS3_v2"),  # a whole node: requests = limits
    vmsizes.size_shape("Standard_NC6s_v3"),
    Shape("small", {}, {"cpu": "200m", "memory": "1Gi"}, {"cpu": "4", "memory": "8Gi"}),
    Shape("odd", {}, {"cpu": "1", "memory": "3G"}, {"cpu": "1", "memory": "3G"}),
]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda shape: shape.name)
def test_the_two_containers_add_up_to_the_shape_each_within_its_limits(shape):
    jupyter, vscode = split_shape(shape)
    for section, source in (("requests", shape.requests), ("limits", shape.limits)):
        for key in ("cpu", "memory"):
            assert total([jupyter, vscode], section, key) == (cpu_millicores if key == "cpu" else memory_bytes)(source[key])
    for part in (jupyter, vscode):
        assert cpu_millicores(part["requests"]["cpu"]) <= cpu_millicores(part["limits"]["cpu"])
        assert memory_bytes(part["requests"]["memory"]) <= memory_bytes(part["limits"]["memory"])
        assert cpu_millicores(part["requests"]["cpu"]) > 0


@pytest.mark.parametrize("shape, vscode", [
    (vmsizes.size_shape("Standard_DS3_v2"), {"requests": {"cpu": "100m", "memory": "512Mi"}, "limits": {"cpu": "100m", "memory": "512Mi"}}),
    (shapes.DEFAULT_SHAPE, {"requests": {"cpu": "25m", "memory": "512Mi"}, "limits": {"cpu": "500m", "memory": "512Mi"}}),
    (Shape("roomy", {}, {"cpu": "2", "memory": "8Gi"}, {"cpu": "8", "memory": "16Gi"}),
     {"requests": {"cpu": "100m", "memory": "512Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}}),
], ids=["whole-node", "default", "roomy"])
def test_code_server_takes_a_small_fixed_share_capped_at_a_quarter(shape, vscode):
    assert split_shape(shape)[1] == vscode
