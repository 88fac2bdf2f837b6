"""Small helpers shared by the fake's own tests."""
from __future__ import annotations

import json

import pytest
from kubernetes import client


def status_of(call, *args, **kwargs) -> tuple[int, dict]:
    """Run a client call that must fail; return (HTTP status, parsed Status body)."""
    with pytest.raises(client.ApiException) as caught:
        call(*args, **kwargs)
    return caught.value.status, json.loads(caught.value.body)


def reasonless_500(call, *args, **kwargs) -> str:
    """Run a call kube-apiserver answers with a plain error (a 500 whose Status has no reason); return its message."""
    with pytest.raises(client.ApiException) as caught:
        call(*args, **kwargs)
    body = json.loads(caught.value.body)
    assert caught.value.status == 500 and body == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                                   "status": "Failure", "code": 500, "message": body.get("message")}
    return body["message"]


def namespace(core: client.CoreV1Api, name: str) -> str:
    """Create a namespace and return its name."""
    core.create_namespace({"metadata": {"name": name}})
    return name


def job_manifest(name: str, image: str = "busybox:1.36", restart: str = "Never", resources: dict | None = None,
                 **spec) -> dict:
    """A batch/v1 Job as Dockyard builds them (plain dict)."""
    container = {"name": "main", "image": image, "command": ["sh", "-c", "echo hi"]}
    if resources is not None:
        container["resources"] = resources
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"backoffLimit": 0, **spec, "template": {"metadata": {"labels": {"app": name}}, "spec": {
                "restartPolicy": restart, "containers": [container]}}}}


def deployment_manifest(name: str, replicas: int = 2, image: str = "nginx:1.27") -> dict:
    """An apps/v1 Deployment."""
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": image, "ports": [{"containerPort": 80}]}]}}}}


def status_body(error: client.ApiException) -> dict:
    """The Status of an ApiException."""
    return json.loads(error.body)


def valid_manifests() -> list[dict]:
    """Manifests the real server accepts (and kubernetes_validate passes): the fake must accept them too."""
    labels = {"app.kubernetes.io/managed-by": "dockyard", "dockyard.dev/workspace": "team-a"}
    job = job_manifest("train-3f2a9c", resources={"limits": {"cpu": "2", "memory": "2Gi", "nvidia.com/gpu": 1},
                                                  "requests": {"cpu": "100m", "memory": "2Gi"}},
                       activeDeadlineSeconds=3600, completionMode="Indexed", completions=2, parallelism=2)
    job["metadata"]["labels"].update(labels)
    spec = job["spec"]["template"]["spec"]
    spec["nodeSelector"] = {"gpu": "a100"}
    spec["volumes"] = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}]
    spec["containers"][0]["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    spec["containers"][0]["env"] = [{"name": "WORLD_SIZE", "value": "2"}]
    spec["subdomain"] = "train-3f2a9c"
    headless = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "train-3f2a9c", "labels": labels},
                "spec": {"clusterIP": "None", "selector": {"job-name": "train-3f2a9c"},
                         "ports": [{"name": "rdzv", "port": 29500}]}}
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "notebook"},
           "spec": {"replicas": 1, "serviceName": "notebook", "selector": {"matchLabels": {"app": "notebook"}},
                    "template": {"metadata": {"labels": {"app": "notebook"}}, "spec": {"containers": [
                        {"name": "jupyter", "image": "jupyter/base-notebook:2024-01-01",
                         "volumeMounts": [{"name": "home", "mountPath": "/home/jovyan"}]}]}},
                    "volumeClaimTemplates": [{"metadata": {"name": "home"}, "spec": {
                        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}}}]}}
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "minReplicas": 1, "maxReplicas": 5}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a.b_c-d": "x"}}
    return [job, headless, deployment_manifest("web"), sts, hpa, pvc, cm]
