"""Kubernetes jobs with a conda file, against the fake API server: the pod realises it in an emptyDir
before its command. The live Job's own command is then run with a real shell (this host's python3 standing in for the
image's, pip offline against a wheel folder) to show the prelude does what it says."""
import subprocess

import yaml

from assets import registry
from assets.tests.wheels import make_wheel
from jobs.tests.test_kubernetes import (  # noqa: F401 (fixtures)
    api,
    compute,
    fresh_clients,
    live_job,
    run_reconcile,
    submit,
)

CONDA = {"name": "train", "channels": ["conda-forge"], "variables": {"OMP_NUM_THREADS": "2"},
         "dependencies": ["python=3.11", "dockyardtiny=1.0", "cudatoolkit=11.8", {"pip": ["dockyardother==2.0"]}]}
COMMAND = 'python -c "import dockyardtiny, dockyardother; print(dockyardtiny.VALUE, dockyardother.VALUE)"; echo $OMP_NUM_THREADS'


def pod_of(live: dict) -> dict:
    return live["spec"]["template"]["spec"]


def env_of(container: dict) -> dict:
    return {item["name"]: item["value"] for item in container["env"]}


def test_a_job_pod_realises_its_conda_file_before_the_command(api, fake_kube, compute, tmp_path):  # noqa: F811
    name = submit(api, command=COMMAND, environment={"image": "python:3.11", "conda_file": CONDA})
    assert run_reconcile(name).status == "Queued"
    pod = pod_of(live_job(fake_kube, name))
    main = pod["containers"][0]
    assert main["command"][:2] == ["/bin/sh", "-c"] and main["command"][2].endswith(COMMAND)
    env = env_of(main)
    assert yaml.safe_load(env["DOCKYARD_CONDA_FILE"]) == CONDA
    assert env["DOCKYARD_PIP_REQUIREMENTS"].splitlines() == ["dockyardtiny==1.0.*", "dockyardother==2.0"]
    assert "cudatoolkit=11.8" in env["DOCKYARD_CONDA_NOTES"] and env["OMP_NUM_THREADS"] == "2"
    assert {"name": "environment", "mountPath": "/opt/dockyard"} in main["volumeMounts"]
    assert {"name": "environment", "emptyDir": {}} in pod["volumes"]  # the pod's own: never a node's folder

    # The container's command, run here: /opt/dockyard is the emptyDir's path in the pod, a test folder here.
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "dockyardtiny", "1.0.1", "VALUE = 'tiny'\n")
    make_wheel(wheels, "dockyardother", "2.0", "VALUE = 'other'\n")
    script = main["command"][2].replace("/opt/dockyard", str(tmp_path / "emptydir"))
    shell_env = {**env, "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels)}
    for attempt in ("realised", "reused"):  # a restarted container finds the emptyDir's environment
        result = subprocess.run(["/bin/sh", "-c", script], env=shell_env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stdout.splitlines()[-2:] == ["tiny other", "2"]
        assert f"Environment {attempt}" in result.stdout


def test_a_registered_environment_brings_its_conda_file_to_the_pod(api, owner, workspace, fake_kube, compute):  # noqa: F811
    registry.environment_create(user=owner, workspace=workspace, data={
        "name": "conda-env", "version": "1", "image": "python:3.11", "conda_file": CONDA})
    name = submit(api, command="python -V", environment="azureml:conda-env:1")
    run_reconcile(name)
    main = pod_of(live_job(fake_kube, name))["containers"][0]
    assert main["image"] == "python:3.11" and "Realising the conda file" in main["command"][2]
    assert yaml.safe_load(env_of(main)["DOCKYARD_CONDA_FILE"]) == CONDA
    shown = api.get(f"/api/v1/workspaces/team-a/jobs/{name}/").json()
    assert shown["environment"]["reference"] == "azureml:conda-env:1" and shown["environment"]["conda_file"] == CONDA


def test_a_build_context_is_refused_naming_the_builder(api, compute):  # noqa: F811
    response = api.post("/api/v1/workspaces/team-a/jobs/", {
        "command": "python -V", "compute": "azureml:k8s", "environment": {"build": {"path": "./docker"}}}, format="json")
    assert response.status_code == 400
    assert "BuildKit or Kaniko" in response.json()["error"]["message"]

