"""Issue 12's "Done means" for models: a local deployment of a registered model with a scoring script from an uploaded
`code:` serves a score that reads the model file at AZUREML_MODEL_DIR (Azure ML's layout, shown read-only), and a new
version rolls it; a Kubernetes deployment's pod spec gets both the code and the model (two init containers, the
Secret's two URLs, the mounts and AZUREML_MODEL_DIR), as the fake API server and the official schemas validate it."""
import base64
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import kubernetes_validate
import pytest

from assets import delivery
from assets.specs.pods import fetch_script
from cli.resources import uploads
from endpoints.manifests import CODE_DIR, SNAPSHOTS_ANNOTATION, code_secret_name, deployment_object_name
from endpoints.models import OnlineDeployment
from endpoints.tests.test_kubernetes import fake, fresh_kube_clients, look, make_endpoint  # noqa: F401 (fixtures)
from endpoints.tests.test_local_endpoints import BASE, create_endpoint, local_worker, score, serving  # noqa: F401

KUBERNETES = "1.36"
IMAGE = "registry.example.com/inference:1"
MODELS = "/api/v1/workspaces/team-a/models/"
# Azure ML's examples open os.path.join(AZUREML_MODEL_DIR, "model/<file>") for a model registered from a folder `model/`.
SCORE = '''
import json, os

def init():
    global weight, model_file
    model_file = os.path.join(os.getenv("AZUREML_MODEL_DIR"), "model/weight.txt")
    with open(model_file) as handle:
        weight = int(handle.read())

def run(raw_data):
    try:
        open(model_file, "a").close()
        writable = True
    except OSError:
        writable = False
    numbers = json.loads(raw_data)["numbers"]
    return {"sum": sum(numbers) * weight, "model_dir": os.getenv("AZUREML_MODEL_DIR"), "writable": writable}
'''


def upload(api, folder: Path, named: bool = False) -> str:
    """The folder packed as the CLI packs it (a model folder under its own name) and uploaded."""
    packed = uploads.pack(folder, named)
    response = api.generic("POST", "/api/v1/workspaces/team-a/uploads/", uploads.archive(packed),
                           content_type="application/gzip")
    assert response.status_code in (200, 201), response.json()
    return response.json()["path"]


def register_model(api, tmp_path: Path, version: str, weight: int) -> str:
    folder = tmp_path / f"model-{version}" / "model"
    folder.mkdir(parents=True)
    (folder / "weight.txt").write_text(str(weight))
    response = api.post(MODELS, {"name": "scaler", "version": version, "path": upload(api, folder, named=True)},
                        format="json")
    assert response.status_code == 201, response.json()
    return response.json()["path"]


def scoring_code(api, tmp_path: Path) -> str:
    folder = tmp_path / "onlinescoring"
    folder.mkdir()
    (folder / "score.py").write_text(SCORE)
    return upload(api, folder)


def body(code: str, model: str, **fields) -> dict:
    return {"name": "blue", "model": model, "code_configuration": {"code": code, "scoring_script": "score.py"}, **fields}


@pytest.mark.usefixtures("local_compute", "local_worker")
def test_a_local_deployment_of_a_registered_model_serves_and_a_new_version_rolls_it(owner_api, client, tmp_path,
                                                                                     settings):
    register_model(owner_api, tmp_path, "1", 2)
    key = create_endpoint(owner_api, "scaler")["primaryKey"]
    response = owner_api.post(f"{BASE}/scaler/deployments/", body(scoring_code(owner_api, tmp_path), "azureml:scaler:1"),
                              format="json")
    assert response.status_code == 201, response.json()
    serving(owner_api, "scaler", "blue")

    answer = score(client, "scaler", key, (2, 3), deployment="blue")
    assert answer.status_code == 200, answer.content
    assert answer.json() == {"sum": 10, "model_dir": "/var/azureml-app/azureml-models/scaler/1", "writable": False}

    second = register_model(owner_api, tmp_path, "2", 5)
    patched = owner_api.patch(f"{BASE}/scaler/deployments/blue/", {"model": "azureml:scaler@latest"}, format="json")
    assert patched.status_code == 200 and patched.json()["provisioning_state"] == "Updating"
    serving(owner_api, "scaler", "blue")

    answer = score(client, "scaler", key, (2, 3), deployment="blue")
    assert answer.json() == {"sum": 25, "model_dir": "/var/azureml-app/azureml-models/scaler/2", "writable": False}
    row = OnlineDeployment.objects.get(name="blue")
    written = sorted(path.name for path in (row.local_folder / "model").iterdir())
    assert written == [second.rsplit("/", 1)[-1]]  # the earlier version's files went with the change, no partial left


def secret_urls(secret: dict) -> dict[str, str]:
    if "data" in secret:
        return {key: base64.b64decode(value).decode() for key, value in secret["data"].items()}
    return dict(secret["stringData"])


def fetched_by_init_container(client, url: str, folder: Path) -> Path:
    """What the init container's own script leaves in its folder, run here on the URL's archive (served by the test
    client, as the pod would be by Dockyard)."""
    archive = b"".join(client.get(urlsplit(url).path).streaming_content)
    folder.mkdir(parents=True)
    (folder / "fetched.tar.gz").write_bytes(archive)
    script = fetch_script(str(folder)).replace('wget -q -O /tmp/code.tar.gz "$CODE_URL"; ', "").replace(
        "/tmp/code.tar.gz", str(folder / "fetched.tar.gz"))
    subprocess.run(["/bin/sh", "-c", script], check=True, capture_output=True)
    return folder


@pytest.mark.usefixtures("fake")
def test_a_kubernetes_deployment_fetches_its_code_and_its_model(owner_api, fake_kube, client, settings, tmp_path):
    cluster = fake_kube
    settings.DOCKYARD_EXTERNAL_URL = "https://dockyard.example.org"
    register_model(owner_api, tmp_path, "1", 2)
    make_endpoint(owner_api, "scaler")
    created = owner_api.post(f"{BASE}/scaler/deployments/", body(scoring_code(owner_api, tmp_path), "azureml:scaler:1",
                                                                  environment={"image": IMAGE}), format="json")
    assert created.status_code == 201, created.json()

    row = look(endpoint="scaler")

    name = deployment_object_name("team-a", "scaler", "blue")
    model_dir = "/var/azureml-app/azureml-models/scaler/1"
    live = cluster.get("deployments", name, "default", group="apps")
    pod = live["spec"]["template"]["spec"]
    secret_ref = {"name": code_secret_name(name)}
    assert [(c["name"], c["env"], c["volumeMounts"]) for c in pod["initContainers"]] == [
        ("fetch-code", [{"name": "CODE_URL", "valueFrom": {"secretKeyRef": {**secret_ref, "key": "url"}}}],
         [{"name": "code", "mountPath": CODE_DIR}]),
        ("fetch-model", [{"name": "CODE_URL", "valueFrom": {"secretKeyRef": {**secret_ref, "key": "model-url"}}}],
         [{"name": "model", "mountPath": model_dir}]),
    ]
    assert pod["volumes"] == [{"name": "code", "emptyDir": {}}, {"name": "model", "emptyDir": {}}]
    server = pod["containers"][0]
    assert server["volumeMounts"] == [{"name": "code", "mountPath": CODE_DIR, "readOnly": True},
                                      {"name": "model", "mountPath": model_dir, "readOnly": True}]
    assert {"name": "AZUREML_MODEL_DIR", "value": model_dir} in server["env"]
    assert {"name": "AZUREML_ENTRY_SCRIPT", "value": f"{CODE_DIR}/score.py"} in server["env"]
    for manifest in row.manifests:
        assert kubernetes_validate.validate(manifest, KUBERNETES, strict=True) == KUBERNETES
    secret = cluster.get("secrets", code_secret_name(name), "default")
    urls = secret_urls(secret)
    assert set(urls) == {"url", "model-url"}
    assert all(url.startswith("https://dockyard.example.org/api/v1/artifacts/fetch/") for url in urls.values())
    # the init step, as far as it can run here: the model's archive unpacked by the container's own script
    fetched = fetched_by_init_container(client, urls["model-url"], tmp_path / "pod" / model_dir.lstrip("/"))
    assert (fetched / "model" / "weight.txt").read_text() == "2"  # os.path.join(AZUREML_MODEL_DIR, "model/weight.txt")

    # A new version rolls the Deployment (the template names the snapshots) and the Secret fetches it at once.
    register_model(owner_api, tmp_path, "2", 5)
    generation = live["metadata"]["generation"]
    patched = owner_api.patch(f"{BASE}/scaler/deployments/blue/", {"model": "azureml:scaler:2",
                                                                    "model_mount_path": "/var/models"}, format="json")
    assert patched.status_code == 200, patched.json()
    look(endpoint="scaler")
    live = cluster.get("deployments", name, "default", group="apps")
    assert live["metadata"]["generation"] > generation
    server = live["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "AZUREML_MODEL_DIR", "value": "/var/models"} in server["env"]  # Azure ML's model_mount_path
    assert {"name": "model", "mountPath": "/var/models", "readOnly": True} in server["volumeMounts"]
    renewed = secret_urls(cluster.get("secrets", code_secret_name(name), "default"))
    assert renewed["model-url"] != urls["model-url"]
    annotations = cluster.get("secrets", code_secret_name(name), "default")["metadata"]["annotations"]
    assert annotations[SNAPSHOTS_ANNOTATION] == live["spec"]["template"]["metadata"]["annotations"][SNAPSHOTS_ANNOTATION]
    fetched = fetched_by_init_container(client, renewed["model-url"], tmp_path / "pod2" / "var" / "models")
    assert (fetched / "model" / "weight.txt").read_text() == "5"


@pytest.mark.usefixtures("fake")
def test_a_model_gone_from_storage_fails_the_deployment_with_the_reason(owner_api, settings, tmp_path):
    settings.DOCKYARD_EXTERNAL_URL = "https://dockyard.example.org"
    path = register_model(owner_api, tmp_path, "1", 2)
    make_endpoint(owner_api, "scaler")
    created = owner_api.post(f"{BASE}/scaler/deployments/", body(scoring_code(owner_api, tmp_path), "azureml:scaler:1",
                                                                  environment={"image": IMAGE}), format="json")
    assert created.status_code == 201, created.json()
    row = OnlineDeployment.objects.get(name="blue")
    row.spec = {**row.spec, "model": {**row.spec["model"], "path": "azureml://uploads/" + "d" * 64}}
    row.save(update_fields=["spec"])  # as if its snapshot had been collected (ops' GC must not do this)

    row = look(endpoint="scaler")

    assert row.provisioning_state == "Failed"
    assert row.provisioning_errors[0]["code"] == "SnapshotMissing" and "model" in row.provisioning_errors[0]["message"]
    assert path != row.spec["model"]["path"] and delivery.snapshot_named(row.endpoint.workspace, path) is not None


@pytest.mark.usefixtures("local_compute", "deployment_folders")
def test_writing_out_a_model_is_idempotent_and_a_crash_leaves_nothing_that_looks_whole(owner_api, tmp_path, settings):
    from endpoints.reconcile import local, reconcile_deployment

    path = register_model(owner_api, tmp_path, "1", 2)
    create_endpoint(owner_api, "scaler")
    created = owner_api.post(f"{BASE}/scaler/deployments/", body(scoring_code(owner_api, tmp_path), "azureml:scaler:1"),
                             format="json")
    assert created.status_code == 201, created.json()
    row = OnlineDeployment.objects.select_related("endpoint", "endpoint__workspace").get(name="blue")
    sha256 = path.rsplit("/", 1)[-1]
    crashed = row.local_folder / "model" / f"{sha256}.partial"  # a worker killed while writing it out
    (crashed / "model").mkdir(parents=True)
    (crashed / "model" / "weight.txt").write_text("half")

    folder = local._written_out(row, "model", path)

    assert folder == row.local_folder / "model" / sha256 and not crashed.exists()
    assert (folder / "model" / "weight.txt").read_text() == "2"
    inode = (folder / "model" / "weight.txt").stat().st_ino
    assert local._written_out(row, "model", path) == folder  # written once: the next start reuses it
    assert (folder / "model" / "weight.txt").stat().st_ino == inode

    settings.DOCKYARD_DEPLOYMENT_MODEL_MAX_BYTES = 0  # lowered since the deployment was made: it does not start
    local.delete_local(row)
    reconcile_deployment(row)
    row.refresh_from_db()
    assert row.provisioning_state == "Failed" and "DOCKYARD_DEPLOYMENT_MODEL_MAX_BYTES" in row.provisioning_errors[0]["message"]
