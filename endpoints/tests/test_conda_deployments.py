"""A Kubernetes deployment with a conda file, against the fake API server: the pod realises it in an emptyDir, then
starts Azure ML's inference server in it; a startup probe keeps the liveness probe off meanwhile. Local deployments
refuse it with the reason."""
import yaml

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


def test_a_local_deployment_refuses_a_conda_file_with_the_reason(owner_api, workspace, local_compute):  # noqa: F811
    response = owner_api.post(f"{BASE}/", {"name": "local-ep", "compute": "local"}, format="json")
    assert response.status_code == 201, response.json()
    response = owner_api.post(f"{BASE}/local-ep/deployments/", {
        "name": "blue", "environment": {"conda_file": CONDA},
        "code_configuration": {"code": "/var/azureml-app/adder", "scoring_script": "score.py"}}, format="json")
    error = assert_error(response, 400, "InvalidDeployment")
    assert "environment.conda_file" in [row["target"] for row in error["details"]]
