"""The fake API server's own tests get its fixtures here (other suites: see fixtures.py for the root line)."""
import pytest
from kubernetes import client

from tests.fake_kube.fixtures import fake_kube, fake_kube_session, kube_api, kube_dynamic, make_fake_kube  # noqa: F401


@pytest.fixture
def notebook(fake_kube, kube_api):  # noqa: F811 - the fixtures imported above
    """A StatefulSet `ci-nb` (one pod `ci-nb-0`, ports jupyter 8888 and vscode 8080) and its headless Service."""
    labels = {"dockyard.io/compute-instance": "nb"}
    client.CoreV1Api(kube_api).create_namespaced_service("default", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "ci-nb"},
        "spec": {"clusterIP": "None", "selector": labels, "ports": [
            {"name": "jupyter", "port": 8888, "targetPort": "jupyter"},
            {"name": "vscode", "port": 8080, "targetPort": "vscode"}]}})
    client.AppsV1Api(kube_api).create_namespaced_stateful_set("default", {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "ci-nb"},
        "spec": {"replicas": 1, "serviceName": "ci-nb", "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                     {"name": "jupyter", "image": "lab:1", "ports": [{"name": "jupyter", "containerPort": 8888}]},
                     {"name": "vscode", "image": "code:1", "ports": [{"name": "vscode", "containerPort": 8080}]}]}}}})
    return fake_kube
