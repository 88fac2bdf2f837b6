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
