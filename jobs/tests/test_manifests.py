"""Job records → batch/v1 Job (+ headless Service): checked field by field and against the official schemas.

kubernetes-validate holds the OpenAPI schemas of each Kubernetes release; strict mode also refuses fields a
schema does not declare. What the schema cannot say (DNS labels, the rank environment, TF_CONFIG) is checked here.
"""
import json
import re
import subprocess

import kubernetes_validate
import pytest

from compute import shapes
from jobs.manifests import COMPLETION_INDEX, NAME_LIMIT, RENDEZVOUS_PORT, job_manifests, kube_job_name
from jobs.spec import parse_job, shm_quantity

KUBERNETES = "1.36"
DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
GPU_SHAPE = shapes.Shape("gpu-a100", {"gpu": "a100"}, {"cpu": "4", "memory": "16Gi"}, {"cpu": "8", "memory": "32Gi"}, 1)
EXTENSION = {"pool": "training"}
IMAGE = "pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime"
INDEX = {"fieldRef": {"fieldPath": COMPLETION_INDEX}}


def build(body: dict, shape: shapes.Shape = shapes.DEFAULT_SHAPE, extension: dict | None = None, workspace="team-a"):
    """The manifests for a job body, through the same steps as submission: spec, shape, effective selector."""
    spec = parse_job({"command": "python train.py", "environment": {"image": IMAGE}, **body})
    return job_manifests(spec=spec, job_name=kube_job_name(workspace, spec["name"]), namespace="ml", workspace=workspace,
                         shape=shape.on(extension))


def valid(manifest: dict) -> dict:
    assert kubernetes_validate.validate(manifest, KUBERNETES, strict=True) == KUBERNETES
    return manifest


def pod_spec(job: dict) -> dict:
    return job["spec"]["template"]["spec"]


def env_of(job: dict) -> dict:
    return {var["name"]: var.get("value", var.get("valueFrom")) for var in pod_spec(job)["containers"][0]["env"]}


# --- names -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, expected_prefix", [
    ("train", "train-"),
    ("train_resnet_50", "train-resnet-50-"),
    ("Train_ResNet", "train-resnet-"),
    ("a" * 255, "a" * (NAME_LIMIT - 9) + "-"),
    ("x" * 42 + "_" + "y" * 20, "x" * 42 + "-"),  # cut at the separator: no '--' before the hash
    ("1st-run", "job-1st-run-"),  # a Service name must start with a letter
    ("42", "job-42-"),
    ("run__", "run-"),
])
def test_kubernetes_names_are_short_dns_labels(name, expected_prefix):
    job_name = kube_job_name("team-a", name)
    assert job_name.startswith(expected_prefix) and re.fullmatch(r"[0-9a-f]{8}", job_name.split("-")[-1])
    assert len(job_name) <= NAME_LIMIT and DNS_1035.match(job_name)
    assert len(f"{job_name}-99999") <= 63  # the hostname of an Indexed Job's pod stays a DNS label
    assert kube_job_name("team-a", name) == job_name  # deterministic: a retry names the same Job


def test_names_that_slug_alike_stay_apart():
    names = {kube_job_name("team-a", "a_b"), kube_job_name("team-a", "a-b"), kube_job_name("team-a", "A-b"),
             kube_job_name("team-b", "a-b"), kube_job_name("team-a", "a" * 100), kube_job_name("team-a", "a" * 101)}
    assert len(names) == 6


# --- a job on a GPU instance type ----------------------------------------------------------------

def test_gpu_job_field_by_field():
    body = {"name": "train_gpu", "command": "python train.py --lr ${{inputs.lr}}", "inputs": {"lr": 0.01},
            "environment_variables": {"B": "2", "A": "1"}, "limits": {"timeout": 3600},
            "resources": {"instance_type": "gpu-a100", "shm_size": "8g"}}
    (job,) = build(body, GPU_SHAPE, EXTENSION)
    name = kube_job_name("team-a", "train_gpu")
    labels = {"app.kubernetes.io/managed-by": "dockyard", "dockyard.dev/kind": "job",
              "dockyard.dev/workspace": "team-a", "dockyard.dev/job": name}
    assert valid(job)["apiVersion"] == "batch/v1" and job["kind"] == "Job"
    assert job["metadata"] == {"name": name, "namespace": "ml", "labels": labels,
                               "annotations": {"dockyard.dev/job-name": "train_gpu"}}
    assert job["spec"] == {"backoffLimit": 0, "activeDeadlineSeconds": 3600,
                           "template": {"metadata": {"labels": labels}, "spec": pod_spec(job)}}
    spec = pod_spec(job)
    assert spec["restartPolicy"] == "Never" and spec["enableServiceLinks"] is False
    assert spec["nodeSelector"] == {"pool": "training", "gpu": "a100"}  # the extension's ∪ the instance type's
    assert "subdomain" not in spec
    assert spec["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}]
    (container,) = spec["containers"]
    assert container == {
        "name": "main", "image": IMAGE, "command": ["/bin/sh", "-c", "python train.py --lr 0.01"],
        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
        "resources": {"requests": {"cpu": "4", "memory": "16Gi"},
                      "limits": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": 1}},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }


def test_gpus_appear_under_limits_only():
    (job,) = build({"name": "g"}, GPU_SHAPE)
    resources = pod_spec(job)["containers"][0]["resources"]
    assert "nvidia.com/gpu" not in resources["requests"] and resources["limits"]["nvidia.com/gpu"] == 1


# --- the default instance type -------------------------------------------------------------------

def test_default_instance_type_job():
    (job,) = build({"name": "plain"})
    spec = valid(job) and pod_spec(job)
    assert spec["containers"][0]["resources"] == {"requests": {"cpu": "100m", "memory": "2Gi"},
                                                  "limits": {"cpu": "2", "memory": "2Gi"}}
    assert "nodeSelector" not in spec  # no extension selector, none on the built-in type
    assert "activeDeadlineSeconds" not in job["spec"] and "completionMode" not in job["spec"]
    assert spec["volumes"][0]["emptyDir"] == {"medium": "Memory", "sizeLimit": "2Gi"}  # shm_size defaults to 2g
    assert spec["containers"][0]["env"] == []


def test_extension_selector_alone_applies_to_the_default_instance_type():
    (job,) = build({"name": "plain"}, extension=EXTENSION)
    assert pod_spec(job)["nodeSelector"] == EXTENSION


@pytest.mark.parametrize("docker, quantity", [
    ("2g", "2Gi"), ("2G", "2Gi"), ("512m", "512Mi"), ("64k", "64Ki"), ("1024", "1024"), ("100b", "100"),
])
def test_shm_size_is_a_kubernetes_quantity(docker, quantity):
    assert shm_quantity(docker) == quantity
    (job,) = build({"name": "shm", "resources": {"shm_size": docker}})
    assert valid(job)["spec"]["template"]["spec"]["volumes"][0]["emptyDir"]["sizeLimit"] == quantity


# --- distributed PyTorch -------------------------------------------------------------------------

def test_distributed_pytorch_is_an_indexed_job_with_a_headless_service():
    body = {"name": "ddp", "resources": {"instance_count": 3},
            "distribution": {"type": "pytorch", "process_count_per_instance": 2}}
    service, job = build(body, GPU_SHAPE)
    name = kube_job_name("team-a", "ddp")
    valid(service), valid(job)
    assert job["spec"]["completionMode"] == "Indexed"
    assert (job["spec"]["completions"], job["spec"]["parallelism"], job["spec"]["backoffLimit"]) == (3, 3, 0)
    assert pod_spec(job)["subdomain"] == name == service["metadata"]["name"]
    assert service["metadata"]["labels"] == job["metadata"]["labels"]
    assert service["spec"] == {"clusterIP": "None", "publishNotReadyAddresses": True,
                               "selector": {"dockyard.dev/job": name},
                               "ports": [{"name": "rendezvous", "port": RENDEZVOUS_PORT, "targetPort": RENDEZVOUS_PORT}]}
    assert set(service["spec"]["selector"].items()) <= set(job["spec"]["template"]["metadata"]["labels"].items())
    master = f"{name}-0.{name}"  # rank 0's hostname in the Service's domain
    assert env_of(job) == {
        "MASTER_ADDR": master, "MASTER_PORT": "29500", "WORLD_SIZE": "6", "LOCAL_WORLD_SIZE": "2", "NODE_RANK": INDEX,
        "PET_NNODES": "3", "PET_NPROC_PER_NODE": "2", "PET_NODE_RANK": INDEX, "PET_MASTER_ADDR": master,
        "PET_MASTER_PORT": "29500",
    }  # no RANK: with two processes per node the launcher gives each its own


def test_one_process_per_node_gets_its_rank_from_the_completion_index():
    body = {"name": "ddp1", "resources": {"instance_count": 2},
            "distribution": {"type": "pytorch", "process_count_per_instance": 1}}
    _, job = build(body)
    env = env_of(valid(job))
    assert (env["RANK"], env["NODE_RANK"], env["WORLD_SIZE"], env["LOCAL_WORLD_SIZE"]) == (INDEX, INDEX, "2", "1")


def test_mpi_gets_the_rank_environment_without_torchrun_options():
    # one process per instance: no mpirun is started for more (the parser refuses process_count_per_instance > 1)
    body = {"name": "mpi", "resources": {"instance_count": 2}, "distribution": {"type": "mpi"}}
    _, job = build(body)
    env = env_of(valid(job))
    assert env["WORLD_SIZE"] == "2" and "RANK" in env and not [key for key in env if key.startswith("PET_")]


def test_several_instances_without_a_distribution_still_get_stable_hostnames():
    service, job = build({"name": "many", "resources": {"instance_count": 2}})
    assert valid(service)["kind"] == "Service" and job["spec"]["completions"] == 2 and env_of(job) == {}


def test_the_rank_comes_from_the_completion_index_annotation():
    assert COMPLETION_INDEX == "metadata.annotations['batch.kubernetes.io/job-completion-index']"


# --- TensorFlow ----------------------------------------------------------------------------------

def test_tensorflow_workers_get_tf_config(tmp_path):
    body = {"name": "tf", "command": 'echo "$TF_CONFIG"', "resources": {"instance_count": 2},
            "distribution": {"type": "tensorflow", "worker_count": 2}}
    service, job = build(body)
    name = kube_job_name("team-a", "tf")
    valid(service), valid(job)
    assert job["spec"]["completionMode"] == "Indexed" and pod_spec(job)["subdomain"] == name
    assert env_of(job) == {"WORLD_SIZE": "2", "NODE_RANK": INDEX}
    command = pod_spec(job)["containers"][0]["command"]
    assert command[:2] == ["/bin/sh", "-c"]
    # What the shell of pod 1 makes of it (NODE_RANK is what the kubelet resolves from the annotation).
    shown = subprocess.run(command, env={"NODE_RANK": "1", "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                           check=True, cwd=tmp_path).stdout
    assert json.loads(shown) == {"cluster": {"worker": [f"{name}-0.{name}:2222", f"{name}-1.{name}:2222"]},
                                 "task": {"type": "worker", "index": 1}}


# --- what every job carries ----------------------------------------------------------------------

@pytest.mark.parametrize("body", [
    {"name": "a"},
    {"name": "b", "limits": {"timeout": 60}},
    {"name": "c", "resources": {"instance_count": 4}, "distribution": {"type": "pytorch", "process_count_per_instance": 8}},
    {"name": "d", "resources": {"instance_count": 3}, "distribution": {"type": "tensorflow", "worker_count": 3}},
])
def test_every_object_is_labelled_never_restarted_and_valid(body):
    for manifest in build(body, GPU_SHAPE, EXTENSION):
        valid(manifest)
        labels = manifest["metadata"]["labels"]
        assert labels["app.kubernetes.io/managed-by"] == "dockyard" and labels["dockyard.dev/workspace"] == "team-a"
        assert labels["dockyard.dev/job"] == manifest["metadata"]["name"] and labels["dockyard.dev/kind"] == "job"
        if manifest["kind"] == "Job":
            assert pod_spec(manifest)["restartPolicy"] == "Never" and manifest["spec"]["backoffLimit"] == 0
            assert manifest["spec"].get("activeDeadlineSeconds") == body.get("limits", {}).get("timeout")
            assert manifest["spec"]["template"]["metadata"]["labels"] == labels


def test_the_schema_check_would_catch_a_broken_job():
    (job,) = build({"name": "broken"})
    job["spec"]["template"]["spec"]["restartPolicyy"] = "Never"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(job, KUBERNETES, strict=True)
