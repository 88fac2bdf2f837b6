"""`dockyard online-endpoint …`, `online-deployment …` and their documents in `apply`, against a live Dockyard server.

Nothing reconciles the records (`quiet_broker`) except in `test_blue_green_on_a_real_worker`, which runs a Celery
worker: the local deployments there run the inference server for endpoints/tests/data/adder/score.py.
"""
import json
import threading
import time
from pathlib import Path

import pytest
import yaml
from celery.contrib.testing.worker import start_worker
from django.db import connections

from cli.client import ApiClient
from cli.tests.support import write_yaml
from controlplane.celery import app
from endpoints import keys as endpoint_keys
from endpoints import reconcile, tasks
from endpoints.models import OnlineDeployment, OnlineEndpoint
from endpoints.services import deployment_create, endpoint_create

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("local_compute")]  # local: as staff would

ADDER = Path(__file__).resolve().parents[2] / "endpoints" / "tests" / "data" / "adder"
ENDPOINT = {"$schema": "https://azuremlschemas.azureedge.net/latest/kubernetesOnlineEndpoint.schema.json",
            "name": "adder", "compute": "local", "auth_mode": "key", "description": "adds numbers"}


def deployment(name: str = "blue", **fields) -> dict:
    """Azure ML's deployment YAML for the adder script on the local endpoint `adder`."""
    return {"$schema": "https://azuremlschemas.azureedge.net/latest/kubernetesOnlineDeployment.schema.json",
            "name": name, "endpoint_name": "adder", "type": "kubernetes",
            "code_configuration": {"code": str(ADDER), "scoring_script": "score.py"},
            "environment_variables": {"DEPLOYMENT_NAME": name}, "instance_count": 1, **fields}


@pytest.fixture(autouse=True)
def quiet_broker(request, monkeypatch, settings, tmp_path):
    """Records stay as the test leaves them (no reconcile is enqueued), unless the test runs a worker."""
    settings.DOCKYARD_DEPLOYMENT_DIR = tmp_path / "deployments"
    settings.DOCKYARD_LOCAL_COMPUTE = True
    for name in ("DOCKYARD_ENDPOINT_KEY",):
        monkeypatch.delenv(name, raising=False)
    if "worker" not in request.fixturenames:
        monkeypatch.setattr(tasks.reconcile_endpoint, "delay", lambda *args, **kwargs: None)
        monkeypatch.setattr(tasks.reconcile_deployment, "delay", lambda *args, **kwargs: None)


@pytest.fixture
def worker(transactional_db):
    app.control.purge()
    with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
        yield
    for row in OnlineDeployment.objects.select_related("endpoint", "endpoint__workspace"):
        reconcile.local.stop_local(row)  # whatever the test left running


def make_endpoint(owner, workspace, name: str = "adder", **fields) -> dict:
    """An endpoint made through the service; returns its keys."""
    return endpoint_create(user=owner, workspace=workspace, data={"name": name, "compute": "local", **fields})[1]


def make_deployment(owner, name: str = "blue", endpoint: str = "adder", **fields) -> OnlineDeployment:
    body = {key: value for key, value in deployment(name, **fields).items() if key != "$schema"}
    return deployment_create(user=owner, endpoint=OnlineEndpoint.objects.get(name=endpoint), data={**body, "endpoint_name": endpoint})


def without_uploads(stderr: str) -> str:
    """stderr without the lines that say how a code folder was uploaded (or that it was known already)."""
    return "".join(line for line in stderr.splitlines(keepends=True)
                   if not line.startswith("/") or ("uploaded" not in line and "not uploaded" not in line))


def sent_yaml(monkeypatch) -> list[str]:
    texts: list[str] = []
    post_yaml = ApiClient.post_yaml
    monkeypatch.setattr(ApiClient, "post_yaml", lambda self, path, text: (texts.append(text), post_yaml(self, path, text))[1])
    return texts


def key_lines(stdout: str) -> dict[str, str]:
    return dict(line.split() for line in stdout.splitlines() if line.startswith(("primaryKey", "secondaryKey")))


# online-endpoint create, show, list


def test_create_prints_the_keys_once_and_they_work(dockyard, workspace, tmp_path, monkeypatch):
    text = "# Azure ML's endpoint YAML, unchanged\n" + yaml.safe_dump(ENDPOINT, sort_keys=False)
    path = tmp_path / "endpoint.yml"
    path.write_text(text)
    sent = sent_yaml(monkeypatch)

    result = dockyard("online-endpoint", "create", "-f", str(path))

    assert result.exit_code == 0, result.stderr
    assert sent == [text]
    lines = result.stdout.splitlines()
    assert lines[0] == "online-endpoint/adder created" and len(lines) == 3
    keys = key_lines(result.stdout)
    endpoint = OnlineEndpoint.objects.get(workspace=workspace, name="adder")
    assert endpoint_keys.hash_key(keys["primaryKey"]) == endpoint.primary_key_hash
    assert endpoint_keys.hash_key(keys["secondaryKey"]) == endpoint.secondary_key_hash
    assert result.stderr == ("Warning: keep these keys now: Dockyard shows a key once, when it is made, and never again "
                             "(`dockyard online-endpoint regenerate-keys adder` makes a new one).\n")
    shown = dockyard("online-endpoint", "show", "adder")
    assert keys["primaryKey"] not in shown.stdout and ["auth_mode", "key"] in [line.split(None, 1) for line in shown.stdout.splitlines()]
    assert keys["primaryKey"] not in dockyard("online-endpoint", "list", "-o", "json").stdout


def test_create_with_name_and_set_and_json_output(dockyard, workspace, tmp_path, monkeypatch):
    path = write_yaml(tmp_path / "endpoint.yml", ENDPOINT)
    sent = sent_yaml(monkeypatch)

    created = dockyard("online-endpoint", "create", "-f", str(path), "--name", "tokens", "--set", "auth_mode=aml_token",
                       "--set", "tags.team=vision", "-o", "json")
    keyed = dockyard("online-endpoint", "create", "-f", "-", "-o", "yaml", input=path.read_text())

    assert created.exit_code == 0, created.stderr
    body = json.loads(created.stdout)
    assert (body["name"], body["auth_mode"], body["tags"], body["keys"]) == ("tokens", "aml_token", {"team": "vision"}, {})
    assert created.stderr == ""  # no keys, no warning
    assert yaml.safe_load(sent[0])["name"] == "tokens"
    assert set(yaml.safe_load(keyed.stdout)["keys"]) == {"primaryKey", "secondaryKey"}
    assert keyed.stderr.startswith("Warning: keep these keys now")


def test_create_reports_the_apis_errors_and_refuses_a_deployment_file(dockyard, workspace, tmp_path):
    bad = write_yaml(tmp_path / "bad.yml", {**ENDPOINT, "auth_mode": "aad_token", "colour": "red"})
    result = dockyard("online-endpoint", "create", "-f", str(bad))
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.splitlines() == [
        "Error (InvalidEndpoint): colour: 'colour' is not an online endpoint field.",
        "  auth_mode: auth_mode must be key or aml_token (aad_token needs Microsoft Entra ID), not 'aad_token'.",
    ]
    good = write_yaml(tmp_path / "endpoint.yml", ENDPOINT)
    assert dockyard("online-endpoint", "create", "-f", str(good)).exit_code == 0
    taken = dockyard("online-endpoint", "create", "-f", str(good))
    assert taken.exit_code == 1 and taken.stderr.startswith("Error (Conflict): An online endpoint named 'adder' already exists")
    wrong = dockyard("online-endpoint", "create", "-f", str(write_yaml(tmp_path / "blue.yml", deployment())))
    assert wrong.exit_code == 2
    assert wrong.stderr.startswith(f"Error (WrongDocument): {tmp_path / 'blue.yml'} describes an online deployment: use `dockyard online-deployment")
    nowhere = dockyard("online-endpoint", "create", "-f", str(good), "-w", "nowhere")
    assert nowhere.stderr == "Error (NotFound): Workspace 'nowhere' was not found, or you are not a member of it.\n"


def test_list_and_show(dockyard, owner, workspace):
    make_endpoint(owner, workspace)
    make_endpoint(owner, workspace, "tokens", auth_mode="aml_token")
    make_deployment(owner, "blue")
    make_deployment(owner, "green")
    OnlineEndpoint.objects.filter(name="adder").update(traffic={"blue": 90, "green": 10})

    table = dockyard("online-endpoint", "list").stdout.splitlines()
    assert table[0].split() == ["NAME", "COMPUTE", "AUTH", "STATE", "TRAFFIC", "DEPLOYMENTS", "CREATED"]
    assert [line.split()[:6] for line in table[1:]] == [
        ["adder", "local", "key", "Creating", "blue=90,green=10", "blue,green"],
        ["tokens", "local", "aml_token", "Creating", "-", "-"],
    ]
    shown = dockyard.json("online-endpoint", "show", "adder")
    assert shown["scoring_uri"].endswith("/api/v1/workspaces/team-a/online-endpoints/adder/score") and "keys" not in shown
    missing = dockyard("online-endpoint", "show", "nope")
    assert (missing.exit_code, missing.stderr) == (1, "Error (NotFound): Online endpoint 'nope' was not found in workspace 'team-a'.\n")
    assert dockyard("online-endpoint", "list", "-w", "nowhere").stderr.startswith("Error (NotFound): Workspace 'nowhere'")
    OnlineEndpoint.objects.all().delete()
    empty = dockyard("online-endpoint", "list")
    assert (empty.stdout, empty.stderr) == ("", "No online endpoints in workspace 'team-a'.\n")


# online-endpoint update


def test_update_traffic_mirror_and_fields(dockyard, owner, workspace, tmp_path):
    make_endpoint(owner, workspace, tags={"owner": "olivia"})
    for name in ("blue", "green", "red"):
        make_deployment(owner, name)

    def endpoint():
        return OnlineEndpoint.objects.get(name="adder")

    result = dockyard("online-endpoint", "update", "adder", "--traffic", "blue=90,green=10")
    assert (result.exit_code, result.stdout) == (0, "online-endpoint/adder updated (traffic)\n")
    assert endpoint().traffic == {"blue": 90, "green": 10}
    assert dockyard("online-endpoint", "update", "adder", "--traffic", "blue=90 green=10").stdout == "online-endpoint/adder unchanged\n"
    assert dockyard("online-endpoint", "update", "adder", "--traffic", "blue:90,green:10,red=0").stdout == "online-endpoint/adder unchanged\n"

    mirrored = dockyard("online-endpoint", "update", "adder", "--mirror-traffic", "red=20", "--set", "tags.team=vision",
                        "--set", "description=Adds numbers")
    assert mirrored.stdout == "online-endpoint/adder updated (description, tags, mirror_traffic)\n"
    assert (endpoint().mirror_traffic, endpoint().tags) == ({"red": 20}, {"owner": "olivia", "team": "vision"})

    over = dockyard("online-endpoint", "update", "adder", "--traffic", "blue=90,green=20")
    assert over.exit_code == 1
    assert over.stderr.splitlines()[0] == "Error (InvalidTraffic): traffic: The traffic shares must total 0 or 100 (they total 110)."
    unknown = dockyard("online-endpoint", "update", "adder", "--traffic", "blue=50,purple=50")
    assert unknown.stderr.splitlines()[0] == "Error (InvalidTraffic): traffic.purple: There is no deployment 'purple' on this endpoint."
    syntax = dockyard("online-endpoint", "update", "adder", "--traffic", "blue=ninety")
    assert syntax.exit_code == 2
    assert syntax.stderr.splitlines()[0] == "Error (InvalidOption): 'blue=ninety' is not DEPLOYMENT=PERCENT (e.g. --traffic \"blue=90,green=10\")."
    assert endpoint().traffic == {"blue": 90, "green": 10}

    cleared = dockyard.json("online-endpoint", "update", "adder", "--traffic", "", "--mirror-traffic", "")
    assert (cleared["traffic"], cleared["mirror_traffic"]) == ({}, {})

    document = write_yaml(tmp_path / "endpoint.yml", {**ENDPOINT, "traffic": {"green": 100}, "tags": {"team": "x"}})
    from_file = dockyard("online-endpoint", "update", "-f", str(document))
    assert from_file.stdout == "online-endpoint/adder updated (description, tags, traffic)\n"
    assert (endpoint().traffic, endpoint().tags, endpoint().description) == ({"green": 100}, {"team": "x"}, "adds numbers")
    moved = write_yaml(tmp_path / "moved.yml", {**ENDPOINT, "compute": "azureml:k8s"})
    immutable = dockyard("online-endpoint", "update", "adder", "-f", str(moved))
    assert immutable.exit_code == 1
    assert immutable.stderr.startswith("Error (ImmutableField): The compute of an online endpoint cannot be changed (it is local).")
    typo = dockyard("online-endpoint", "update", "adder", "--set", "trafic.blue=100")
    assert typo.exit_code == 1 and typo.stderr.startswith("Error (InvalidEndpoint): trafic: 'trafic' is not an online endpoint field.")
    other = dockyard("online-endpoint", "update", "other", "-f", str(document))
    assert other.exit_code == 2 and other.stderr.startswith(f"Error (InvalidOption): {document} is endpoint 'adder', not 'other'.")
    assert dockyard("online-endpoint", "update", "nope", "--traffic", "").stderr == (
        "Error (NotFound): Online endpoint 'nope' was not found in workspace 'team-a'.\n")


def test_switching_to_key_auth_prints_the_new_keys_once(dockyard, owner, workspace):
    make_endpoint(owner, workspace, auth_mode="aml_token")

    result = dockyard("online-endpoint", "update", "adder", "--set", "auth_mode=key")

    assert result.stdout.splitlines()[0] == "online-endpoint/adder updated (auth_mode)"
    keys = key_lines(result.stdout)
    assert endpoint_keys.hash_key(keys["secondaryKey"]) == OnlineEndpoint.objects.get(name="adder").secondary_key_hash
    assert result.stderr.startswith("Warning: keep these keys now")


def test_delete_asks_naming_the_deployments_unless_yes(dockyard, owner, workspace):
    make_endpoint(owner, workspace)
    make_deployment(owner, "blue")

    declined = dockyard("online-endpoint", "delete", "adder", input="n\n")
    assert declined.exit_code == 1 and OnlineEndpoint.objects.get(name="adder").provisioning_state == "Creating"
    assert "Delete online endpoint 'adder' and its deployments (blue) from workspace 'team-a'?" in declined.stderr

    deleted = dockyard("online-endpoint", "delete", "adder", "-y")
    assert (deleted.exit_code, deleted.stdout) == (0, "online-endpoint/adder deleting\n")
    assert OnlineEndpoint.objects.get(name="adder").provisioning_state == "Deleting"
    assert OnlineDeployment.objects.get(name="blue").provisioning_state == "Deleting"
    assert dockyard("online-endpoint", "delete", "nope").stderr.endswith(
        "Error (NotFound): Online endpoint 'nope' was not found in workspace 'team-a'.\n")


# keys


def test_get_credentials_shows_prefixes_and_regenerate_prints_the_new_key_once(dockyard, owner, workspace):
    keys = make_endpoint(owner, workspace)
    make_endpoint(owner, workspace, "tokens", auth_mode="aml_token")

    table = dockyard("online-endpoint", "get-credentials", "adder")
    assert [line.split()[:2] for line in table.stdout.splitlines()] == [
        ["KEY", "PREFIX"], ["primary", keys["primaryKey"][:6] + "…"], ["secondary", keys["secondaryKey"][:6] + "…"],
    ]
    assert keys["primaryKey"] not in table.stdout
    assert table.stderr == "Keys are shown once, when they are made; these are their first characters.\n"
    assert dockyard.json("online-endpoint", "get-credentials", "adder")["keys"]["primary"]["prefix"] == keys["primaryKey"][:6]

    declined = dockyard("online-endpoint", "regenerate-keys", "adder", "--key-type", "secondary", input="n\n")
    assert declined.exit_code == 1 and "Replace the secondary key of online endpoint 'adder'?" in declined.stderr
    result = dockyard("online-endpoint", "regenerate-keys", "adder", "--key-type", "secondary", "-y")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0] == "online-endpoint/adder secondary key regenerated"
    new = key_lines(result.stdout)["secondaryKey"]
    endpoint = OnlineEndpoint.objects.get(name="adder")
    assert endpoint_keys.matches(new, [endpoint.secondary_key_hash])
    assert not endpoint_keys.matches(keys["secondaryKey"], [endpoint.primary_key_hash, endpoint.secondary_key_hash])
    assert endpoint_keys.matches(keys["primaryKey"], [endpoint.primary_key_hash])
    assert result.stderr.startswith("Warning: keep this key now")
    as_json = dockyard.json("online-endpoint", "regenerate-keys", "adder", "-y")
    assert set(as_json) == {"auth_mode", "primaryKey"}

    tokens = dockyard("online-endpoint", "get-credentials", "tokens")
    assert tokens.stdout == "" and "uses aml_token: it is scored with a workspace member's Dockyard token" in tokens.stderr
    refused = dockyard("online-endpoint", "regenerate-keys", "tokens", "-y")
    assert refused.exit_code == 1
    assert refused.stderr.startswith("Error (NoKeys): Endpoint 'tokens' uses aml_token authentication: it has no keys.")


# invoke: what the API answers when no deployment can


def test_invoke_reports_the_apis_answers_without_a_serving_deployment(dockyard, owner, workspace, tmp_path, monkeypatch):
    keys = make_endpoint(owner, workspace)
    make_endpoint(owner, workspace, "tokens", auth_mode="aml_token")
    make_deployment(owner, "blue")
    request = tmp_path / "request.json"
    request.write_text('{"numbers": [1, 2]}')

    def invoke(*options: str):
        return dockyard("online-endpoint", "invoke", *options, "--request-file", str(request))

    no_key = invoke("adder")
    assert no_key.exit_code == 2
    assert no_key.stderr.startswith("Error (NoEndpointKey): Online endpoint 'adder' takes one of its keys: pass --key KEY or set "
                                    "DOCKYARD_ENDPOINT_KEY")
    wrong = invoke("adder", "--key", "not-a-key")
    refused = "Error (Unauthorized): Scoring needs one of the endpoint's keys (or, for aml_token, a member's token) as 'Authorization: Bearer ...'.\n"
    assert (wrong.exit_code, wrong.stderr) == (4, refused)
    no_traffic = invoke("adder", "--key", keys["primaryKey"])
    assert no_traffic.exit_code == 1
    assert no_traffic.stderr.startswith("Error (NoTraffic): Endpoint 'adder' sends no traffic to any deployment")
    monkeypatch.setenv("DOCKYARD_ENDPOINT_KEY", keys["secondaryKey"])
    not_ready = invoke("adder", "--deployment-name", "blue")
    assert (not_ready.exit_code, not_ready.stdout) == (1, "")
    assert not_ready.stderr == "Error (DeploymentNotReady): Deployment 'blue' is not serving yet (starting).\n"
    assert invoke("adder", "-d", "purple").stderr == "Error (DeploymentNotFound): Endpoint 'adder' has no deployment 'purple'.\n"
    # an aml_token endpoint takes the CLI's own token (never printed: the Cli wrapper checks)
    assert invoke("tokens").stderr.startswith("Error (NoTraffic): Endpoint 'tokens' sends no traffic")
    # with a key in hand the CLI scores as asked: an unknown endpoint looks like a wrong key (names don't leak) ...
    assert invoke("nope").stderr == refused  # the same as a wrong key's: names don't leak
    monkeypatch.delenv("DOCKYARD_ENDPOINT_KEY")
    # ... without one, the CLI reads the endpoint first, as a member, and says it is not there
    assert invoke("nope").stderr == "Error (NotFound): Online endpoint 'nope' was not found in workspace 'team-a'.\n"
    missing = dockyard("online-endpoint", "invoke", "adder", "--request-file", str(tmp_path / "none.json"))
    assert missing.exit_code == 1 and missing.stderr.startswith("Error (InvalidFile): Cannot read")


# online-deployment


def test_deployment_create_update_show_list_delete(dockyard, owner, workspace, tmp_path, monkeypatch):
    make_endpoint(owner, workspace)
    blue = write_yaml(tmp_path / "blue.yml", deployment("blue"))
    green = write_yaml(tmp_path / "green.yml", {**deployment("green"), "endpoint_name": "elsewhere"})
    sent = sent_yaml(monkeypatch)

    created = dockyard("online-deployment", "create", "-f", str(blue), "--no-wait", "--all-traffic")
    assert created.exit_code == 0, created.stderr
    assert created.stdout == "online-deployment/adder/blue created\nonline-endpoint/adder traffic blue=100\n"
    uploaded = deployment("blue")  # the code folder is sent as its upload (cli/tests/test_code_packing.py)
    uploaded["code_configuration"]["code"] = OnlineDeployment.objects.get(name="blue").spec["code_configuration"]["code"]
    assert uploaded["code_configuration"]["code"].startswith("azureml://uploads/")
    assert [yaml.safe_load(text) for text in sent] == [uploaded]
    assert OnlineEndpoint.objects.get(name="adder").traffic == {"blue": 100}
    as_json = dockyard("online-deployment", "create", "-f", str(green), "-e", "adder", "--no-wait", "-o", "json",
                       "--set", "environment_variables.OFFSET=5")
    assert as_json.exit_code == 0, as_json.stderr
    assert json.loads(as_json.stdout)["environment_variables"] == {"DEPLOYMENT_NAME": "green", "OFFSET": "5"}
    assert yaml.safe_load(sent[1])["endpoint_name"] == "adder"

    table = dockyard("online-deployment", "list", "-e", "adder").stdout.splitlines()
    assert table[0].split() == ["NAME", "STATE", "INSTANCE", "TYPE", "COUNT", "READY", "TRAFFIC", "CREATED"]
    # a local deployment has no instance type: said as the studio says it, not as defaultinstancetype
    assert [line.split()[:6] for line in table[1:]] == [
        ["blue", "Creating", "none", "(local)", "1", "-"], ["green", "Creating", "none", "(local)", "1", "-"],
    ]
    assert [line.split()[6] for line in table[1:]] == ["100%", "0%"]
    shown = dockyard.json("online-deployment", "show", "green", "--endpoint-name", "adder")
    assert shown["request_settings"]["request_timeout_ms"] == 5000 and shown["endpoint_name"] == "adder"

    updated = dockyard("online-deployment", "update", "green", "-e", "adder", "--set", "environment_variables.OFFSET=7",
                       "--set", "request_settings.request_timeout_ms=9000", "--no-wait")
    assert updated.stdout == "online-deployment/adder/green updated (environment_variables, request_settings)\n"
    spec = OnlineDeployment.objects.get(name="green").spec
    assert (spec["environment_variables"]["OFFSET"], spec["request_settings"]["request_timeout_ms"]) == ("7", 9000)
    assert spec["request_settings"]["max_concurrent_requests_per_instance"] == 1  # the rest of the mapping is kept
    same = dockyard("online-deployment", "update", "-f", str(green), "-e", "adder", "--no-wait", "--set", "environment_variables.OFFSET=7")
    assert same.stdout == "online-deployment/adder/green unchanged\n"
    mixed = dockyard("online-deployment", "update", "blue", "-f", str(green), "-e", "adder")
    assert mixed.exit_code == 2 and mixed.stderr.startswith(f"Error (InvalidOption): {green} is deployment 'green', not 'blue'.")
    refused = dockyard("online-deployment", "update", "green", "-e", "adder", "--set", "instance_count=2", "--no-wait")
    assert refused.exit_code == 1
    assert refused.stderr.splitlines()[0] == ("Error (InvalidDeployment): instance_count: A local deployment is one server process: "
                                              "instance_count must be 1.")

    has_traffic = dockyard("online-deployment", "delete", "blue", "-e", "adder", "-y")
    assert has_traffic.exit_code == 1
    assert has_traffic.stderr.startswith("Error (DeploymentHasTraffic): Deployment 'blue' takes 100% of the traffic")
    declined = dockyard("online-deployment", "delete", "green", "-e", "adder", input="n\n")
    assert declined.exit_code == 1 and "Delete deployment 'green' of online endpoint 'adder' (workspace 'team-a')?" in declined.stderr
    deleted = dockyard("online-deployment", "delete", "green", "-e", "adder", "-y")
    assert (deleted.exit_code, deleted.stdout) == (0, "online-deployment/adder/green deleting\n")
    assert OnlineDeployment.objects.get(name="green").provisioning_state == "Deleting"


def test_deployment_commands_say_what_is_missing(dockyard, owner, workspace, tmp_path):
    make_endpoint(owner, workspace)
    make_deployment(owner, "blue")
    orphan = write_yaml(tmp_path / "orphan.yml", {key: value for key, value in deployment().items() if key != "endpoint_name"})

    assert dockyard("online-deployment", "show", "green", "-e", "adder").stderr == (
        "Error (NotFound): Online endpoint 'adder' has no deployment 'green'.\n")
    assert dockyard("online-deployment", "list", "-e", "nope").stderr == (
        "Error (NotFound): Online endpoint 'nope' was not found in workspace 'team-a'.\n")
    assert dockyard("online-deployment", "get-logs", "blue", "-e", "adder", "-w", "nowhere").stderr == (
        "Error (NotFound): Workspace 'nowhere' was not found, or you are not a member of it.\n")
    no_endpoint = dockyard("online-deployment", "create", "-f", str(orphan))
    assert no_endpoint.exit_code == 2
    assert no_endpoint.stderr.startswith("Error (InvalidOption): Name the endpoint: --endpoint-name EP, or endpoint_name in the file.")
    elsewhere = dockyard("online-deployment", "create", "-f", str(orphan), "-e", "nope", "--no-wait")
    assert without_uploads(elsewhere.stderr) == "Error (NotFound): Online endpoint 'nope' was not found in workspace 'team-a'.\n"
    wrong = dockyard("online-deployment", "create", "-f", str(write_yaml(tmp_path / "ep.yml", ENDPOINT)))
    assert wrong.exit_code == 2 and "describes an online endpoint: use `dockyard online-endpoint" in wrong.stderr
    logs = dockyard("online-deployment", "get-logs", "blue", "-e", "adder")
    assert (logs.exit_code, logs.stdout, logs.stderr) == (0, "", "online-deployment/adder/blue has written nothing yet.\n")
    bad_lines = dockyard("online-deployment", "logs", "blue", "-e", "adder", "--lines", "9999")
    assert bad_lines.exit_code == 1 and bad_lines.stderr.startswith("Error (InvalidLines): lines must be a whole number from 1 to 5000.")


def background(name: str, action) -> threading.Thread:
    """Run `action(deployment)` beside the CLI once deployment `name` exists, as a worker would."""
    def run():
        try:
            deadline = time.monotonic() + 20
            while not OnlineDeployment.objects.filter(name=name).exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            action(OnlineDeployment.objects.get(name=name))
        finally:
            connections.close_all()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_create_waits_and_a_failed_deployment_gets_no_traffic(dockyard, owner, workspace, tmp_path):
    make_endpoint(owner, workspace)
    make_deployment(owner, "blue")
    OnlineEndpoint.objects.filter(name="adder").update(traffic={"blue": 100})
    green = write_yaml(tmp_path / "green.yml", deployment("green"))

    def crash(row):
        time.sleep(1.5)
        OnlineDeployment.objects.filter(pk=row.pk).update(provisioning_state="Failed", provisioning_errors=[
            {"code": "CrashLoop", "message": "The server exited with code 1 and is restarted (restart 5)."}])

    thread = background("green", crash)
    result = dockyard("online-deployment", "create", "-f", str(green), "--all-traffic")
    thread.join()

    assert result.exit_code == 1
    assert result.stdout == ("online-deployment/adder/green created\nonline-deployment/adder/green Creating\n"
                             "online-deployment/adder/green Failed\n")
    assert without_uploads(result.stderr).splitlines() == [
        "Error (ProvisioningFailed): online-deployment/adder/green could not be provisioned.",
        "  CrashLoop: The server exited with code 1 and is restarted (restart 5).",
    ]
    assert OnlineEndpoint.objects.get(name="adder").traffic == {"blue": 100}

    timed_out = dockyard("online-deployment", "update", "blue", "-e", "adder", "--set", "environment_variables.X=1", "--timeout", "0")
    assert timed_out.exit_code == 1
    assert timed_out.stderr == ("Error (WaitTimedOut): online-deployment/adder/blue is still Updating after 0 s; it goes on in "
                                "the background (see `dockyard online-deployment show blue -e adder`).\n")


# apply


def test_apply_creates_an_endpoint_its_deployments_then_its_traffic(dockyard, workspace, tmp_path):
    path = write_yaml(tmp_path / "all.yml", {**ENDPOINT, "traffic": {"blue": 90, "green": 10}}, deployment("blue"), deployment("green"))

    first = dockyard("apply", "-f", str(path))

    assert first.exit_code == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0] == "online-endpoint/adder created (traffic once its deployments are applied)"
    assert [line.split()[0] for line in lines[1:3]] == ["primaryKey", "secondaryKey"]
    assert lines[3:] == ["online-deployment/adder/blue created", "online-deployment/adder/green created",
                         "online-endpoint/adder configured (traffic blue=90,green=10)"]
    assert first.stderr.startswith("Warning: keep these keys now")
    assert OnlineEndpoint.objects.get(name="adder").traffic == {"blue": 90, "green": 10}

    again = dockyard("apply", "-f", str(path))
    assert again.stdout.splitlines() == ["online-endpoint/adder unchanged", "online-deployment/adder/blue unchanged",
                                         "online-deployment/adder/green unchanged"]
    assert without_uploads(again.stderr) == "" and "code unchanged, not uploaded" in again.stderr

    changed = write_yaml(tmp_path / "changed.yml", {**ENDPOINT, "traffic": {"blue": 0, "green": 100}, "tags": {"stage": "prod"}},
                         deployment("green", environment_variables={"DEPLOYMENT_NAME": "green", "OFFSET": 1}))
    assert dockyard("apply", "-f", str(changed), "--dry-run").stdout.splitlines() == [
        "online-endpoint/adder configured (dry run: tags, traffic)",
        "online-deployment/adder/green configured (dry run: environment_variables)",
    ]
    assert dockyard("apply", "-f", str(changed)).stdout.splitlines() == [
        "online-endpoint/adder configured", "online-deployment/adder/green configured",
    ]
    endpoint = OnlineEndpoint.objects.get(name="adder")
    assert (endpoint.traffic, endpoint.tags) == ({"blue": 0, "green": 100}, {"stage": "prod"})
    assert OnlineDeployment.objects.get(name="green").spec["environment_variables"]["OFFSET"] == "1"


def test_apply_dry_run_and_documents_it_cannot_apply(dockyard, workspace, tmp_path):
    no_endpoint = {key: value for key, value in deployment("red").items() if key != "endpoint_name"}
    path = write_yaml(tmp_path / "all.yml", {**ENDPOINT, "traffic": {"blue": 100}}, deployment("blue"), no_endpoint,
                      deployment("gray", endpoint_name="nope"))

    result = dockyard("apply", "-f", str(path), "--dry-run", "-o", "json")

    assert result.exit_code == 1
    outcomes = json.loads(result.stdout)
    assert [(row["resource"], row["action"]) for row in outcomes] == [
        ("online-endpoint/adder", "created"), ("online-deployment/adder/blue", "created"),
        (f"{path}, document 3", "failed"), ("online-deployment/nope/gray", "failed"),
    ]
    assert outcomes[2]["error"]["code"] == "InvalidDocument"
    assert outcomes[3]["error"]["message"] == "Online endpoint 'nope' was not found in workspace 'team-a'."
    assert not OnlineEndpoint.objects.exists()


def test_apply_sets_traffic_after_a_failed_deployment_and_says_so(dockyard, owner, workspace, tmp_path):
    make_endpoint(owner, workspace, description="adds numbers")
    make_deployment(owner, "blue")
    broken = deployment("green", code_configuration={"code": str(ADDER), "scoring_script": "missing.py"})
    path = write_yaml(tmp_path / "all.yml", {**ENDPOINT, "traffic": {"blue": 50, "green": 50}}, broken)

    result = dockyard("apply", "-f", str(path))

    assert result.exit_code == 1
    assert result.stdout == "online-endpoint/adder unchanged (traffic once its deployments are applied)\n"
    errors = without_uploads(result.stderr).splitlines()
    assert errors[0] == "online-deployment/adder/green failed"
    assert errors[1].startswith("Error (InvalidDeployment): code_configuration.scoring_script: There is no missing.py")
    assert errors[2:4] == ["online-endpoint/adder failed",
                           "Error (InvalidTraffic): traffic.green: There is no deployment 'green' on this endpoint."]
    assert errors[-1] == "Error (ApplyFailed): 2 of 2 documents failed."
    assert OnlineEndpoint.objects.get(name="adder").traffic == {}


# end to end


def test_blue_green_on_a_real_worker(worker, dockyard, workspace, tmp_path, monkeypatch):
    endpoint = write_yaml(tmp_path / "endpoint.yml", ENDPOINT)
    blue = write_yaml(tmp_path / "blue.yml", deployment("blue"))
    green = write_yaml(tmp_path / "green.yml", deployment("green", environment_variables={"DEPLOYMENT_NAME": "green", "OFFSET": 100}))
    request = tmp_path / "request.json"
    request.write_text('{"numbers": [1, 2]}')

    created = dockyard("online-endpoint", "create", "-f", str(endpoint))
    key = key_lines(created.stdout)["primaryKey"]
    first = dockyard("online-deployment", "create", "-f", str(blue), "--all-traffic")
    assert first.exit_code == 0, first.stderr
    assert first.stdout.splitlines()[0] == "online-deployment/adder/blue created"
    assert first.stdout.splitlines()[-2:] == ["online-deployment/adder/blue Succeeded", "online-endpoint/adder traffic blue=100"]

    answer = dockyard("online-endpoint", "invoke", "adder", "--request-file", str(request), "--key", key)
    assert answer.exit_code == 0, answer.stderr
    assert json.loads(answer.stdout) == {"sum": 3, "deployment": "blue"}
    assert answer.stderr == "Answered by deployment 'blue'.\n"

    second = dockyard("online-deployment", "create", "-f", str(green))
    assert second.exit_code == 0, second.stderr
    monkeypatch.setenv("DOCKYARD_ENDPOINT_KEY", key)
    header = dockyard("online-endpoint", "invoke", "adder", "--request-file", str(request), "--deployment-name", "green", "-o", "yaml")
    assert (yaml.safe_load(header.stdout), header.stderr) == ({"sum": 103, "deployment": "green"}, "Answered by deployment 'green'.\n")
    assert dockyard("online-endpoint", "update", "adder", "--traffic", "green=100").exit_code == 0
    assert json.loads(dockyard("online-endpoint", "invoke", "adder", "-r", str(request)).stdout)["deployment"] == "green"

    bad = tmp_path / "bad.json"
    bad.write_text('{"words": ["one"]}')
    failed = dockyard("online-endpoint", "invoke", "adder", "--request-file", str(bad))
    assert failed.exit_code == 1 and failed.stdout == ""
    assert failed.stderr.startswith("Error (ScoringFailed): Deployment 'green' answered 500")

    logs = dockyard("online-deployment", "get-logs", "green", "-e", "adder", "--lines", "50")
    assert logs.exit_code == 0 and "POST /score" in logs.stdout
    assert len(dockyard.json("online-deployment", "logs", "green", "-e", "adder", "--lines", "3")) == 3

    assert dockyard("online-endpoint", "delete", "adder", "-y").exit_code == 0
    deadline = time.monotonic() + 30
    while OnlineEndpoint.objects.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not OnlineEndpoint.objects.exists() and not OnlineDeployment.objects.exists()
