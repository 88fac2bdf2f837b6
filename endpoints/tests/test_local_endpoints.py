"""Local online endpoints end to end: the API and a real Celery worker on Redis, real inference servers.

Nothing is reconciled by hand: every change goes through the API, and the worker (in a thread of the test process,
on the configured broker) starts, probes, restarts and stops the servers. The servers are Azure ML's inference server
under gunicorn, detached process groups in sandboxes, each on a Unix socket in its folder; the fixture stops any a
failed test leaves behind. Their code is copied under the test's folder, the one DOCKYARD_LOCAL_PATHS shares.
"""
import math
import os
import re
import shutil
import signal
import time
from pathlib import Path

import pytest
from django.conf import settings

from compute.runners import local as runner
from endpoints.models import OnlineDeployment, OnlineEndpoint
from endpoints.reconcile import local
from tests.e2e_support import in_process_worker, wait_for

pytestmark = pytest.mark.usefixtures("local_compute")  # off by default: enabled as staff would
BASE = "/api/v1/workspaces/team-a/online-endpoints"
ADDER = Path(__file__).parent / "data" / "adder"
START = 90.0  # seconds a server may take from create to Running (1–3 s alone; far more on a loaded 2-core host)
SIGMAS = 4.5  # binomial bounds: a correct split falls outside them about once in 150,000 runs
ACCESS_LINE = re.compile(r'gunicorn\.access .*"POST /score HTTP/1\.1" 200')


@pytest.fixture
def local_worker(transactional_db, settings, tmp_path):
    """A real worker for local deployments under this test's folder; afterwards no server of the test is left."""
    settings.DOCKYARD_DEPLOYMENT_DIR = tmp_path / "deployments"
    settings.DOCKYARD_LOCAL_COMPUTE = True
    settings.DOCKYARD_LOCAL_PATHS = [tmp_path / "shared"]  # code is read only from there (never Dockyard's own tree)
    shutil.copytree(ADDER, tmp_path / "shared" / "adder")
    try:
        with in_process_worker():
            yield
    finally:  # the worker is stopped first: nothing restarts what is stopped here
        for pid_file in Path(settings.DOCKYARD_DEPLOYMENT_DIR).glob(f"*/*/*/{runner.PID_FILE}"):
            process = runner.adopt(pid_file.parent)
            if process and runner.group_alive(process.pid):
                runner.kill_group(process, grace=0.5)


def create_endpoint(api, name: str) -> dict[str, str]:
    response = api.post(f"{BASE}/", {"name": name, "compute": "local"}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()["keys"]


def create_deployment(api, endpoint: str, name: str, code: Path | None = None, **env: str) -> None:
    code = code or Path(settings.DOCKYARD_LOCAL_PATHS[0]) / "adder"
    body = {"name": name, "code_configuration": {"code": str(code), "scoring_script": "score.py"},
            "environment_variables": {"DEPLOYMENT_NAME": name, **env}}
    response = api.post(f"{BASE}/{endpoint}/deployments/", body, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["provisioning_state"] == "Creating"


def shown(api, endpoint: str, name: str) -> dict | None:
    response = api.get(f"{BASE}/{endpoint}/deployments/{name}/")
    return response.json() if response.status_code == 200 else None


def serving(api, endpoint: str, name: str) -> dict:
    """Wait until the API shows the deployment Succeeded with its server Running; a Failed one fails at once."""
    def ready():
        row = shown(api, endpoint, name)
        assert row is not None and row["provisioning_state"] != "Failed", (row["provisioning_errors"], row["status"])
        return row if row["provisioning_state"] == "Succeeded" and row["status"].get("state") == "Running" else None

    return wait_for(ready, START, 0.2, f"{endpoint}/{name} serving")


def process_of(name: str) -> runner.Process:
    return runner.Process.from_dict(OnlineDeployment.objects.get(name=name).runner)


def gone(process: runner.Process) -> bool:
    return not runner.group_alive(process.pid)


def score(client, endpoint: str, key: str | None, numbers=(1, 2), deployment: str | None = None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"} if key is not None else {}
    if deployment:
        headers["HTTP_AZUREML_MODEL_DEPLOYMENT"] = deployment
    return client.post(f"{BASE}/{endpoint}/score", {"numbers": list(numbers)}, content_type="application/json", **headers)


def served_by(answer) -> str:
    """The deployment that answered, as Dockyard's header says; the body (the server's environment) must agree."""
    assert answer.status_code == 200, answer.content
    name = answer["azureml-model-deployment"]
    assert answer.json()["deployment"] == name, (answer.json(), name)
    return name


def binomial_bounds(trials: int, share: float) -> tuple[float, float]:
    mean, sigma = trials * share, math.sqrt(trials * share * (1 - share))
    return mean - SIGMAS * sigma, mean + SIGMAS * sigma


def scored_requests(api, endpoint: str, name: str) -> int:
    """How many scoring requests the deployment's server answered, counted in its log as the logs endpoint shows it."""
    response = api.get(f"{BASE}/{endpoint}/deployments/{name}/logs/", {"lines": 5000})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain"), response.content[:300]
    return len(ACCESS_LINE.findall(response.content.decode()))


def settled_count(read, quiet: float = 1.0, timeout: float = 30.0) -> int:
    """A count that stopped growing (work still in flight elsewhere, e.g. mirrored copies, lands first)."""
    readings = [read()]

    def still():
        readings.append(read())
        return len(readings) > 2 and readings[-1] == readings[-2] == readings[-3]

    wait_for(still, timeout, quiet / 2, "a steady count")
    return readings[-1]


def test_blue_green_traffic_header_keys_mirror_and_delete(local_worker, owner_api, workspace, client, settings):
    keys = create_endpoint(owner_api, "adder")
    create_deployment(owner_api, "adder", "blue")
    create_deployment(owner_api, "adder", "green", OFFSET="1000")
    serving(owner_api, "adder", "blue"), serving(owner_api, "adder", "green")
    sockets = [OnlineDeployment.objects.get(name=name).runner["socket"] for name in ("blue", "green")]
    assert sockets[0] != sockets[1] and all(Path(path).is_socket() for path in sockets)  # each its own, no TCP port
    processes = {name: process_of(name) for name in ("blue", "green")}
    primary, secondary = keys["primaryKey"], keys["secondaryKey"]

    # No traffic yet: only a request naming a deployment is answered.
    assert score(client, "adder", primary).status_code == 404
    answer = score(client, "adder", primary, (2, 3), deployment="green")
    assert served_by(answer) == "green" and answer.json()["sum"] == 1005  # green's OFFSET: its own environment

    response = owner_api.patch(f"{BASE}/adder/", {"traffic": {"blue": 90, "green": 10}}, format="json")
    assert response.status_code == 200 and response.json()["traffic"] == {"blue": 90, "green": 10}, response.json()

    # 1,000 calls: green's count is binomial(1000, 0.1).
    trials = 1000
    counts = {"blue": 0, "green": 0}
    for _ in range(trials):
        counts[served_by(score(client, "adder", primary))] += 1
    low, high = binomial_bounds(trials, 0.10)
    assert sum(counts.values()) == trials and low <= counts["green"] <= high, (counts, (low, high))

    # The header overrides the weights, every time; a name the endpoint does not have is a 404.
    assert {served_by(score(client, "adder", primary, deployment="green")) for _ in range(50)} == {"green"}
    assert score(client, "adder", primary, deployment="purple").status_code == 404

    # Keys: none or a wrong one is a 401; the secondary key works as well as the primary.
    for key in (None, "wrong-key", primary + "x"):
        answer = score(client, "adder", key)
        assert answer.status_code == 401 and answer["WWW-Authenticate"] == "Bearer", answer.content
    assert score(client, "adder", "").status_code == 401  # "Bearer " and nothing
    assert served_by(score(client, "adder", secondary, deployment="blue")) == "blue"
    # The Accept header is the model's business: Dockyard passes the answer on whatever it says.
    answer = client.post(f"{BASE}/adder/score", {"numbers": [1]}, content_type="application/json", HTTP_ACCEPT="text/plain",
                         HTTP_AUTHORIZATION=f"Bearer {primary}", HTTP_AZUREML_MODEL_DEPLOYMENT="blue")
    assert served_by(answer) == "blue" and answer.json()["sum"] == 1

    # Mirror 20 % to green while blue takes all the live traffic: every answer is blue's, green's server sees copies.
    response = owner_api.patch(f"{BASE}/adder/", {"traffic": {"blue": 100, "green": 0}, "mirror_traffic": {"green": 20}},
                               format="json")
    assert response.status_code == 200, response.json()
    before = settled_count(lambda: scored_requests(owner_api, "adder", "green"))
    mirrored_trials = 300
    answers = [score(client, "adder", primary, (1, 1)) for _ in range(mirrored_trials)]
    assert {served_by(answer) for answer in answers} == {"blue"} and {a.json()["sum"] for a in answers} == {2}
    mirrored = settled_count(lambda: scored_requests(owner_api, "adder", "green")) - before
    low, high = binomial_bounds(mirrored_trials, 0.20)
    assert low <= mirrored <= high, (mirrored, (low, high))

    # The logs endpoint returns the server's own output.
    response = owner_api.get(f"{BASE}/adder/deployments/blue/logs/", {"lines": 200})
    text = response.content.decode()
    assert response.status_code == 200 and len(text.splitlines()) == 200
    assert ACCESS_LINE.search(text) and "azmlinfsrv" in text
    head = owner_api.get(f"{BASE}/adder/deployments/blue/logs/", {"lines": 5000}).content.decode()
    assert f"Listening at: unix:{local.INSIDE / local.SOCKET}" in head and "init has completed successfully" in head
    assert owner_api.get(f"{BASE}/adder/deployments/blue/logs/", {"lines": 0}).status_code == 400

    # Deployments that take traffic, live or mirrored, cannot be deleted; deleting the endpoint takes them all.
    for name in ("blue", "green"):
        response = owner_api.delete(f"{BASE}/adder/deployments/{name}/")
        assert response.status_code == 400 and response.json()["error"]["code"] == "DeploymentHasTraffic", response.json()
    assert owner_api.delete(f"{BASE}/adder/").status_code == 202
    answer = score(client, "adder", primary)  # a deleting endpoint is gone for its key: the same 401 as a wrong key
    assert answer.status_code == 401 and answer.json()["error"]["code"] == "Unauthorized", answer.content
    wait_for(lambda: owner_api.get(f"{BASE}/adder/").status_code == 404, 60, 0.2, "the endpoint's removal")
    assert not OnlineEndpoint.objects.exists() and not OnlineDeployment.objects.exists()
    for name, process in processes.items():
        assert gone(process), f"{name}'s server is still running"
    assert not list((Path(settings.DOCKYARD_DEPLOYMENT_DIR) / "team-a" / "adder").glob("*"))  # folders gone too


def test_crash_restart_update_and_delete_of_a_deployment(local_worker, owner_api, workspace, client):
    primary = create_endpoint(owner_api, "solo")["primaryKey"]
    create_deployment(owner_api, "solo", "blue")
    first = serving(owner_api, "solo", "blue")
    assert first["status"]["restarts"] == 0
    assert served_by(score(client, "solo", primary, deployment="blue")) == "blue"

    # A crash (the whole group killed, as the OOM killer would) is noticed and the server started again.
    crashed = process_of("blue")
    os.killpg(crashed.pid, signal.SIGKILL)
    wait_for(lambda: gone(crashed), 10, 0.05, "the killed group's end")

    def restarted():
        row = shown(owner_api, "solo", "blue")
        return row if row["status"].get("restarts", 0) >= 1 and row["status"].get("state") == "Running" else None

    row = wait_for(restarted, START, 0.2, "the restart after the crash")
    assert row["provisioning_state"] == "Succeeded" and row["status"]["restarts"] == 1, row
    again = process_of("blue")
    assert again.pid != crashed.pid and runner.is_running(again)
    answer = score(client, "solo", primary, (4, 5), deployment="blue")
    assert served_by(answer) == "blue" and answer.json()["sum"] == 9  # on the new port, if it changed

    # A changed spec: the server is replaced by one with the new environment.
    body = {"environment_variables": {"DEPLOYMENT_NAME": "blue", "OFFSET": "100"}}
    response = owner_api.patch(f"{BASE}/solo/deployments/blue/", body, format="json")
    assert response.status_code == 200 and response.json()["provisioning_state"] == "Updating", response.json()
    updated = serving(owner_api, "solo", "blue")
    assert updated["environment_variables"] == body["environment_variables"]
    assert gone(again) and process_of("blue").pid != again.pid
    answer = score(client, "solo", primary, (4, 5), deployment="blue")
    assert served_by(answer) == "blue" and answer.json()["sum"] == 109

    # No traffic on it: it can be deleted; its process group ends and its row and folder go.
    replaced = process_of("blue")
    folder = Path(replaced.folder)
    assert owner_api.delete(f"{BASE}/solo/deployments/blue/").status_code == 202
    wait_for(lambda: shown(owner_api, "solo", "blue") is None, 60, 0.2, "the deployment's removal")
    assert gone(replaced) and not folder.exists()
    assert not OnlineDeployment.objects.exists()
    assert score(client, "solo", primary, deployment="blue").status_code == 404
    endpoint = owner_api.get(f"{BASE}/solo/").json()
    assert endpoint["deployments"] == [] and endpoint["provisioning_state"] == "Succeeded"

    assert owner_api.delete(f"{BASE}/solo/").status_code == 202
    wait_for(lambda: not OnlineEndpoint.objects.exists(), 30, 0.2, "the endpoint's removal")


def test_a_script_whose_init_raises_goes_failed_after_a_few_restarts(local_worker, owner_api, workspace, client, tmp_path,
                                                                     monkeypatch):
    monkeypatch.setattr(local, "CRASHES_BEFORE_FAILED", 3)  # backoff 1 s, 2 s: Failed within about 20 s
    code = tmp_path / "shared" / "broken"
    code.mkdir()
    (code / "score.py").write_text("def init():\n    raise RuntimeError('init failed on purpose')\n\n\n"
                                   "def run(raw_data):\n    return {}\n")
    primary = create_endpoint(owner_api, "broken")["primaryKey"]
    create_deployment(owner_api, "broken", "bad", code=code)

    def failed():
        row = shown(owner_api, "broken", "bad")
        return row if row["provisioning_state"] == "Failed" else None

    row = wait_for(failed, START * 2, 0.2, "the crash loop's Failed")
    (error,) = row["provisioning_errors"]
    assert error["code"] == "CrashLoop" and row["status"]["restarts"] >= local.CRASHES_BEFORE_FAILED, row
    # The error is the scoring script's exception and where it was raised, not gunicorn's shutdown lines.
    assert "exited with code 3" in error["message"] and "was stopped until the deployment changes" in error["message"], error
    assert (f"The scoring script failed: RuntimeError: init failed on purpose ({code / 'score.py'}, line 2, in init)"
            in error["message"]), error
    assert "Worker exiting" not in error["message"] and "Shutting down" not in error["message"], error
    answer = score(client, "broken", primary, deployment="bad")
    assert answer.status_code in (502, 503), answer.content  # not serving
    logs = owner_api.get(f"{BASE}/broken/deployments/bad/logs/", {"lines": 5000}).content.decode()
    assert "RuntimeError: init failed on purpose" in logs and "User's init function failed" in logs
    # Failed means stopped: no server is started again until the deployment changes
    stopped = OnlineDeployment.objects.get(name="bad")
    assert stopped.runner.get("stopped") and not stopped.runner.get("pid"), stopped.runner
    starts = logs.count("Booting worker")
    assert local.reconcile_local_deployment(stopped) is None and not OnlineDeployment.objects.get(name="bad").runner.get("pid")
    time.sleep(3)  # the worker's chain would have restarted it by now (backoff 4 s at most here)
    again = owner_api.get(f"{BASE}/broken/deployments/bad/logs/", {"lines": 5000}).content.decode()
    assert again.count("Booting worker") == starts and shown(owner_api, "broken", "bad")["provisioning_state"] == "Failed"
    # a change starts it again
    (code / "score.py").write_text("def init():\n    pass\n\n\ndef run(raw_data):\n    return {'fixed': True}\n")
    assert owner_api.patch(f"{BASE}/broken/deployments/bad/", {"description": "fixed"}, format="json").status_code == 200
    serving(owner_api, "broken", "bad")

    assert owner_api.delete(f"{BASE}/broken/").status_code == 202
    wait_for(lambda: not OnlineEndpoint.objects.exists(), 60, 0.2, "the endpoint's removal")
