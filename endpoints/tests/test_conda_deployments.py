"""A Kubernetes deployment with a conda file, against the fake API server: the pod realises it in an emptyDir, then
starts Azure ML's inference server in it; a startup probe keeps the liveness probe off meanwhile. A local deployment
realises it with the inference server's interpreter and serves with its packages."""
from pathlib import Path

import yaml

from assets.tests.wheels import make_wheel
from endpoints.models import OnlineDeployment
from endpoints.tests.test_kubernetes import (  # noqa: F401 (fixtures)
    BASE,
    fake,
    fresh_kube_clients,
    live,
    look,
    make_deployment,
    make_endpoint,
    name_of,
)
from endpoints.tests.test_local_endpoints import create_endpoint, local_worker, serving  # noqa: F401 (a fixture)
from tests.e2e_support import wait_for
from tests.support import assert_error

CONDA = {"channels": ["conda-forge"], "variables": {"MODEL_FLAVOUR": "adder"},
         "dependencies": ["python=3.10", {"pip": ["azureml-inference-server-http", "scikit-learn==1.5.1"]}]}


def test_the_pod_realises_the_conda_file_then_runs_the_server_in_it(owner_api, fake):  # noqa: F811
    make_endpoint(owner_api)
    make_deployment(owner_api, environment={"image": "python:3.10", "conda_file": CONDA})
    look()
    pod = live(fake, "deployments", name_of(), "apps")["spec"]["template"]["spec"]
    main = pod["containers"][0]
    assert main["command"][:2] == ["/bin/sh", "-c"] and "Realising the conda file" in main["command"][2]
    assert main["command"][2].endswith('exec azmlinfsrv ${AZUREML_ENTRY_SCRIPT:+--entry_script "$AZUREML_ENTRY_SCRIPT"} '
                                       '--port 5001')
    env = {item["name"]: item.get("value") for item in main["env"]}
    assert yaml.safe_load(env["DOCKYARD_CONDA_FILE"]) == CONDA and env["MODEL_FLAVOUR"] == "adder"
    assert env["DOCKYARD_PIP_REQUIREMENTS"].splitlines() == ["azureml-inference-server-http", "scikit-learn==1.5.1"]
    assert main["startupProbe"]["failureThreshold"] * main["startupProbe"]["periodSeconds"] == 3600
    assert main["startupProbe"]["httpGet"]["path"] == main["livenessProbe"]["httpGet"]["path"]
    assert {"name": "environment", "mountPath": "/opt/dockyard"} in main["volumeMounts"]
    assert {"name": "environment", "emptyDir": {}} in pod["volumes"]


def test_a_local_deployment_takes_a_conda_file_or_a_venv_not_both(owner_api, workspace, local_compute, tmp_path):
    response = owner_api.post(f"{BASE}/", {"name": "local-ep", "compute": "local"}, format="json")
    assert response.status_code == 201, response.json()
    response = owner_api.post(f"{BASE}/local-ep/deployments/", {
        "name": "blue", "environment": {"conda_file": CONDA, "venv": str(tmp_path)},
        "code_configuration": {"code": "/var/azureml-app/adder", "scoring_script": "score.py"}}, format="json")
    error = assert_error(response, 400, "InvalidDeployment")
    assert "environment.conda_file" in [row["target"] for row in error["details"]]


SCORE = """import dockyardtiny


def init():
    pass


def run(raw_data):
    return {"value": dockyardtiny.VALUE}
"""


def test_a_local_deployment_serves_with_its_conda_files_packages(local_worker, local_compute, owner_api, workspace, client,  # noqa: F811
                                                                 settings, tmp_path):
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "dockyardtiny", "1.0.4", "VALUE = 'tiny from the conda file'\n")
    settings.DOCKYARD_ENVIRONMENT_DIR = tmp_path / "environments"
    settings.DOCKYARD_ENVIRONMENT_PIP = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels)}
    settings.DOCKYARD_ENVIRONMENT_NETWORK = False
    code = Path(settings.DOCKYARD_LOCAL_PATHS[0]) / "tiny"
    code.mkdir(parents=True)
    (code / "score.py").write_text(SCORE)
    key = create_endpoint(owner_api, "tiny")["primaryKey"]
    response = owner_api.post(f"{BASE}/tiny/deployments/", {
        "name": "blue", "code_configuration": {"code": str(code), "scoring_script": "score.py"},
        "environment": {"conda_file": {"dependencies": ["python=3.11", "dockyardtiny=1.0"]}}}, format="json")
    assert response.status_code == 201, response.json()
    serving(owner_api, "tiny", "blue")
    answer = client.post(f"{BASE}/tiny/score", {}, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}",
                         HTTP_AZUREML_MODEL_DEPLOYMENT="blue")
    assert answer.status_code == 200, answer.content
    assert answer.json() == {"value": "tiny from the conda file"}
    log = (Path(OnlineDeployment.objects.get(name="blue").runner["folder"]) / "output.log").read_text()
    assert "Environment realised in" in log


def test_a_local_conda_file_that_cannot_be_realised_fails_with_pips_last_lines(local_worker, local_compute,  # noqa: F811
                                                                               owner_api, workspace, settings, tmp_path):
    settings.DOCKYARD_ENVIRONMENT_DIR = tmp_path / "environments"
    settings.DOCKYARD_ENVIRONMENT_PIP = {"PIP_NO_INDEX": "1"}
    settings.DOCKYARD_ENVIRONMENT_NETWORK = False
    create_endpoint(owner_api, "broken")
    response = owner_api.post(f"{BASE}/broken/deployments/", {
        "name": "blue", "code_configuration": {"code": str(Path(settings.DOCKYARD_LOCAL_PATHS[0]) / "adder"),
                                               "scoring_script": "score.py"},
        "environment": {"conda_file": {"dependencies": [{"pip": ["no-such-package-here==9"]}]}}}, format="json")
    assert response.status_code == 201, response.json()

    def failed():
        row = owner_api.get(f"{BASE}/broken/deployments/blue/").json()
        return row if row["provisioning_state"] == "Failed" else None

    row = wait_for(failed, 240, 0.5, "the deployment failing")
    assert "pip failed" in row["provisioning_errors"][0]["message"], row["provisioning_errors"]
    assert not list((tmp_path / "environments").glob("*/*/*/env"))  # nothing half-made is kept
