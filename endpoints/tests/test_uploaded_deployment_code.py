"""Deployments whose `code_configuration.code` is an upload (`azureml://uploads/<sha256>`): a local server runs it from
the deployment's folder; a Kubernetes pod fetches it in an init container from a URL kept live in a Secret."""
import time
from urllib.parse import urlsplit

import kubernetes_validate
import pytest

from assets import delivery
from cli.resources import uploads
from endpoints.manifests import CODE_DIR, code_secret_name, deployment_object_name
from endpoints.tests.test_kubernetes import fake, fresh_kube_clients, look, make_endpoint  # noqa: F401 (fixtures)
from endpoints.tests.test_local_endpoints import (  # noqa: F401
    ADDER,
    BASE,
    create_endpoint,
    local_worker,
    score,
    serving,
)

KUBERNETES = "1.36"
IMAGE = "registry.example.com/inference:1"


def upload(client, folder) -> str:
    packed = uploads.pack(folder)
    response = client.generic("POST", "/api/v1/workspaces/team-a/uploads/", uploads.archive(packed),
                              content_type="application/gzip")
    assert response.status_code in (200, 201), response.json()
    return response.json()["path"]


def deployment_body(reference: str, script: str = "score.py", **fields) -> dict:
    return {"name": "blue", "code_configuration": {"code": reference, "scoring_script": script},
            "environment_variables": {"DEPLOYMENT_NAME": "blue"}, **fields}


@pytest.mark.usefixtures("local_compute", "local_worker")
def test_a_local_deployment_serves_its_uploaded_scoring_script(owner_api, client):
    key = create_endpoint(owner_api, "adder")
    response = owner_api.post(f"{BASE}/adder/deployments/", deployment_body(upload(owner_api, ADDER)), format="json")
    assert response.status_code == 201, response.json()

    serving(owner_api, "adder", "blue")

    answer = score(client, "adder", key["primaryKey"], (2, 3), deployment="blue")
    assert answer.status_code == 200, answer.content
    assert answer.json()["sum"] == 5


def test_an_upload_without_the_scoring_script_is_refused_at_the_field(owner_api, local_compute):
    create_endpoint(owner_api, "adder")

    response = owner_api.post(f"{BASE}/adder/deployments/", deployment_body(upload(owner_api, ADDER), "missing.py"),
                              format="json")

    assert response.status_code == 400
    assert response.json()["error"]["details"][0]["target"] == "code_configuration.scoring_script"


def test_an_unknown_upload_is_refused_at_the_field(owner_api, local_compute):
    create_endpoint(owner_api, "adder")

    response = owner_api.post(f"{BASE}/adder/deployments/", deployment_body("azureml://uploads/" + "a" * 64), format="json")

    assert response.status_code == 400
    assert response.json()["error"]["details"][0]["target"] == "code_configuration.code"


@pytest.mark.usefixtures("fake")
def test_a_kubernetes_deployment_fetches_its_code_from_a_url_the_secret_keeps_live(owner_api, fake_kube, client, settings,
                                                                                   monkeypatch):
    cluster = fake_kube
    settings.DOCKYARD_EXTERNAL_URL = "https://dockyard.example.org"
    make_endpoint(owner_api)
    body = deployment_body(upload(owner_api, ADDER), environment={"image": IMAGE})
    assert owner_api.post(f"{BASE}/adder/deployments/", body, format="json").status_code == 201

    row = look()

    name = deployment_object_name("team-a", "adder", "blue")
    live = cluster.get("deployments", name, "default", group="apps")
    pod = live["spec"]["template"]["spec"]
    init, server = pod["initContainers"][0], pod["containers"][0]
    assert init["image"] == "busybox:1.37.0"
    assert init["env"] == [{"name": "CODE_URL", "valueFrom": {"secretKeyRef": {"name": code_secret_name(name), "key": "url"}}}]
    assert pod["volumes"] == [{"name": "code", "emptyDir": {}}]
    assert server["volumeMounts"] == [{"name": "code", "mountPath": CODE_DIR, "readOnly": True}]
    assert {"name": "AZUREML_ENTRY_SCRIPT", "value": f"{CODE_DIR}/score.py"} in server["env"]
    for manifest in row.manifests:
        assert kubernetes_validate.validate(manifest, KUBERNETES, strict=True) == KUBERNETES
    secret = cluster.get("secrets", code_secret_name(name), "default")
    url = secret_url(secret)
    assert url.startswith("https://dockyard.example.org/api/v1/artifacts/fetch/")
    assert client.get(urlsplit(url).path).status_code == 200

    look()  # again within the URL's first half-life: nothing renewed, nothing rolled out
    assert secret_url(cluster.get("secrets", code_secret_name(name), "default")) == url
    generation = cluster.get("deployments", name, "default", group="apps")["metadata"]["generation"]
    later = time.time() + settings.DOCKYARD_ARTIFACT_URL_SECONDS * 0.6
    monkeypatch.setattr(delivery.time, "time", lambda: later)
    from endpoints.reconcile import kubernetes as kube_reconcile

    monkeypatch.setattr(kube_reconcile.time, "time", lambda: later)
    look()

    renewed = secret_url(cluster.get("secrets", code_secret_name(name), "default"))
    assert renewed != url and client.get(urlsplit(renewed).path).status_code == 200
    assert cluster.get("deployments", name, "default", group="apps")["metadata"]["generation"] == generation


def secret_url(secret: dict) -> str:
    import base64

    if "data" in secret:
        return base64.b64decode(secret["data"]["url"]).decode()
    return secret["stringData"]["url"]
