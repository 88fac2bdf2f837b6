"""The dockyard CLI against a real Dockyard server (pytest-django's live_server), through click's CliRunner."""
import json
import os
import re
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.contrib.auth import get_user_model

from cli.tests.support import KUBE_SECRET, Cli, write_yaml
from compute.models import ComputeTarget
from compute.services import compute_create
from compute.tests.factories import host
from workspaces.services import token_create, workspace_create

pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(__file__).resolve().parents[2]
KUBECONFIG = f"""
apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev
  cluster: {{server: "https://k8s.example.com:6443"}}
contexts:
- name: dev
  context: {{cluster: dev, user: dev}}
users:
- name: dev
  user: {{token: {KUBE_SECRET}}}
"""
SSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAnever-printed\n-----END OPENSSH PRIVATE KEY-----\n"
CPU_CLUSTER = {"$schema": "https://azuremlschemas.azureedge.net/latest/amlCompute.schema.json",
               "name": "cpu-cluster", "type": "amlcompute", "size": "Standard_DS3_v2", "min_instances": 0, "max_instances": 2}
K8S = {"name": "k8s-dev", "type": "kubernetes", "namespace": "team-a", "kubeconfig_file": "kube/config.yaml"}


@pytest.fixture
def kube_dir(tmp_path) -> Path:
    """A folder holding kube/config.yaml, so documents can name it relative to themselves."""
    (tmp_path / "kube").mkdir()
    (tmp_path / "kube" / "config.yaml").write_text(KUBECONFIG)
    return tmp_path


@pytest.fixture
def hosted(workspace):
    """The kubernetes compute `k8s` a compute cluster of Azure ML's YAML (which names none) lives on."""
    return host(workspace)


def stored(workspace, name: str) -> ComputeTarget | None:
    return ComputeTarget.objects.filter(workspace=workspace, name=name).first()


# login, logout, configure


def test_login_checks_the_token_and_saves_it_readable_by_the_owner_only(live_server, workspace, token, config_file):
    result = Cli(token)("login", "--url", live_server.url + "/", "--token", token)

    assert result.exit_code == 0, result.stderr
    assert f"Logged in to {live_server.url} (1 workspace visible)" in result.stdout
    assert stat.S_IMODE(config_file.stat().st_mode) == 0o600
    assert yaml.safe_load(config_file.read_text()) == {"url": live_server.url, "token": token}
    assert Cli(token)("workspace", "list").exit_code == 0


def test_login_with_a_bad_token_saves_nothing_and_exits_4(live_server, config_file):
    result = Cli("dy_not-a-real-token")("login", "--url", live_server.url, "--token", "dy_not-a-real-token")

    assert result.exit_code == 4
    assert result.stderr.startswith("Error (Unauthorized): The token is unknown, revoked or expired.")
    assert not config_file.exists()


def test_logout_forgets_url_and_token_but_keeps_defaults(live_server, workspace, token, config_file):
    run = Cli(token)
    run("login", "--url", live_server.url, "--token", token)
    run("configure", "--defaults", "workspace=team-a")

    assert run("logout").stdout == f"Logged out of {live_server.url}.\n"
    assert yaml.safe_load(config_file.read_text()) == {"defaults": {"workspace": "team-a"}}
    result = run("workspace", "list")
    assert result.exit_code == 4
    assert "Error (NotLoggedIn)" in result.stderr and "dockyard login" in result.stderr


def test_configure_shows_settings_without_the_token(dockyard, config_file):
    result = dockyard("configure")

    assert result.exit_code == 0
    assert "token      set (from $DOCKYARD_TOKEN)" in result.stdout
    assert "workspace  team-a (from $DOCKYARD_WORKSPACE)" in result.stdout


def test_workspace_comes_from_flag_then_environment_then_default(dockyard, owner, monkeypatch):
    team_b = workspace_create(user=owner, name="team-b")
    compute_create(user=owner, workspace=team_b, data={"name": "only-in-b", "type": "databricks", "workspace_url": "https://adb-1.azuredatabricks.net",
                                                        "access_token": "dapi1"})
    monkeypatch.delenv("DOCKYARD_WORKSPACE")
    assert dockyard("configure", "--defaults", "workspace=team-b").exit_code == 0

    assert [row["name"] for row in dockyard.json("compute", "list")] == ["only-in-b"]
    monkeypatch.setenv("DOCKYARD_WORKSPACE", "team-a")
    assert dockyard.json("compute", "list") == []
    assert [row["name"] for row in dockyard.json("compute", "list", "-w", "team-b")] == ["only-in-b"]


def test_no_workspace_anywhere_is_a_clear_usage_error(dockyard, monkeypatch):
    monkeypatch.delenv("DOCKYARD_WORKSPACE")

    result = dockyard("compute", "list")

    assert result.exit_code == 2
    assert result.stderr.startswith("Error (NoWorkspace): No workspace given: pass -w/--workspace NAME")


def test_configure_rejects_unknown_defaults(dockyard):
    result = dockyard("configure", "--defaults", "colour=blue")

    assert result.exit_code == 2
    assert "Error (InvalidOption): 'colour=blue' is not one of: workspace=VALUE, compute=VALUE." in result.stderr


# workspaces


def test_workspace_create_list_show(dockyard):
    created = dockyard("workspace", "create", "team-b", "--display-name", "Team B", "--description", "GPU work")
    assert created.exit_code == 0, created.stderr
    assert created.stdout == "workspace/team-b created\n"

    table = dockyard("workspace", "list").stdout.splitlines()
    assert table[0].split() == ["NAME", "DISPLAY", "NAME", "ROLE", "CREATED", "BY", "CREATED"]
    assert [line.split()[0] for line in table[1:]] == ["team-a", "team-b"]
    assert table[2].split()[1:5] == ["Team", "B", "owner", "olivia"]

    shown = dockyard.json("workspace", "show", "team-b")
    assert (shown["name"], shown["display_name"], shown["description"], shown["role"]) == ("team-b", "Team B", "GPU work", "owner")
    assert yaml.safe_load(dockyard("workspace", "show", "team-b", "-o", "yaml").stdout)["name"] == "team-b"


def test_workspace_create_conflict_and_unknown_workspace(dockyard):
    taken = dockyard("workspace", "create", "team-a")
    assert taken.exit_code == 1
    assert taken.stderr.startswith("Error (")

    missing = dockyard("workspace", "show", "nope")
    assert missing.exit_code == 1
    assert missing.stderr == "Error (NotFound): Not found.\n"


# compute create / list / show / delete


def test_compute_create_amlcompute_with_set_overrides(dockyard, workspace, hosted, tmp_path):
    path = write_yaml(tmp_path / "cpu.yml", CPU_CLUSTER)

    result = dockyard("compute", "create", "-f", str(path), "--set", "max_instances=4", "--set", "tags.team=vision")

    assert result.exit_code == 0, result.stderr
    assert result.stdout == "compute/cpu-cluster created\n"
    record = stored(workspace, "cpu-cluster")
    assert (record.type, record.properties["max_instances"], record.tags) == ("amlcompute", 4, {"team": "vision"})
    assert record.properties["kubernetes_compute"] == "k8s"  # Azure ML's file names none: the workspace's only one


def test_compute_show_prints_a_clusters_node_counts(dockyard, owner, workspace, hosted):
    compute_create(user=owner, workspace=workspace, data={**CPU_CLUSTER})
    shown = dict(line.split(None, 1) for line in dockyard("compute", "show", "cpu-cluster").stdout.splitlines())
    assert shown["nodes"] == "not observed yet"
    ComputeTarget.objects.filter(name="cpu-cluster").update(status={
        "engine": "karpenter", "pool": "dy-team-a-cpu-cluster-1", "current_node_count": 1, "target_node_count": 2,
        "idle_node_count": 0, "max_node_count": 2, "scaling": "scaling_up",
        "autoscaler_errors": ["Node x was not launched (InsufficientCapacity): no capacity"], "nodes": []})

    shown = dict(line.split(None, 1) for line in dockyard("compute", "show", "cpu-cluster").stdout.splitlines())

    assert shown["nodes"] == "current 1, target 2, idle 0 (max 2; scaling up; karpenter pool dy-team-a-cpu-cluster-1)"
    assert shown["autoscaler_error[0]"] == "Node x was not launched (InsufficientCapacity): no capacity"
    assert dockyard("compute", "list").stdout.splitlines()[1].split()[4:6] == ["0-2", "(1"]
    assert dockyard.json("compute", "show", "cpu-cluster")["status"]["target_node_count"] == 2


def test_compute_create_kubernetes_reads_kubeconfig_file_and_never_shows_it(dockyard, workspace, kube_dir):
    path = write_yaml(kube_dir / "k8s.yml", K8S)

    created = dockyard.json("compute", "create", "-f", str(path))

    assert created["secrets_set"] == ["kubeconfig"] and created["server"] == "https://k8s.example.com:6443"
    assert stored(workspace, "k8s-dev").secrets["kubeconfig"] == KUBECONFIG
    shown = dockyard("compute", "show", "k8s-dev", "-o", "json")
    assert KUBE_SECRET not in shown.stdout and "kubeconfig" not in json.loads(shown.stdout)
    for fmt in ("table", "yaml"):
        assert dockyard("compute", "show", "k8s-dev", "-o", fmt).exit_code == 0  # Cli checks the secret is absent


def test_compute_list_and_show_in_every_format(dockyard, owner, workspace, kube_dir):
    compute_create(user=owner, workspace=workspace, data={"name": "k8s-dev", "type": "kubernetes", "namespace": "team-a", "kubeconfig": KUBECONFIG})
    compute_create(user=owner, workspace=workspace, data={**CPU_CLUSTER})

    table = dockyard("compute", "list").stdout.splitlines()
    assert table[0].split() == ["NAME", "TYPE", "STATE", "SIZE/NAMESPACE", "INSTANCES", "CREATED"]
    assert table[1].split()[:5] == ["cpu-cluster", "amlcompute", "Creating", "Standard_DS3_v2", "0-2"]
    assert table[2].split()[:4] == ["k8s-dev", "kubernetes", "Creating", "team-a"]
    assert table[1].index("amlcompute") == table[2].index("kubernetes") == table[0].index("TYPE")

    assert [row["name"] for row in dockyard.json("compute", "list")] == ["cpu-cluster", "k8s-dev"]
    assert [row["name"] for row in yaml.safe_load(dockyard("compute", "list", "-o", "yaml").stdout)] == ["cpu-cluster", "k8s-dev"]
    assert [row["name"] for row in dockyard.json("compute", "list", "--type", "kubernetes")] == ["k8s-dev"]
    assert dockyard("-o", "json", "compute", "list").stdout == dockyard("compute", "list", "-o", "json").stdout

    shown = dockyard("compute", "show", "cpu-cluster").stdout
    assert "max_instances" in shown and "Standard_DS3_v2" in shown
    assert yaml.safe_load(dockyard("compute", "show", "cpu-cluster", "-o", "yaml").stdout)["max_instances"] == 2
    assert dockyard.json("compute", "show", "cpu-cluster")["provisioning_state"] == "Creating"


def test_compute_list_follows_pagination(dockyard, workspace):
    ComputeTarget.objects.bulk_create(
        ComputeTarget(workspace=workspace, name=f"c{index:03}", type="amlcompute", properties={"size": "Standard_DS3_v2"})
        for index in range(57)
    )

    rows = dockyard.json("compute", "list")

    assert len(rows) == 57 and rows[-1]["name"] == "c056"


def test_empty_compute_list_says_so_on_stderr(dockyard):
    result = dockyard("compute", "list")

    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "No computes in workspace 'team-a'.\n")


def test_compute_delete_asks_unless_yes(dockyard, owner, workspace, hosted):
    compute_create(user=owner, workspace=workspace, data={**CPU_CLUSTER})

    declined = dockyard("compute", "delete", "cpu-cluster", input="n\n")
    assert declined.exit_code == 1 and stored(workspace, "cpu-cluster").provisioning_state == "Creating"

    deleted = dockyard("compute", "delete", "cpu-cluster", "--yes")
    assert deleted.exit_code == 0, deleted.stderr
    assert deleted.stdout == "compute/cpu-cluster deleting\n"
    assert stored(workspace, "cpu-cluster").provisioning_state == "Deleting"


# errors


def test_validation_errors_print_code_message_and_one_line_per_detail(dockyard, tmp_path):
    path = write_yaml(tmp_path / "bad.yml", {"name": "bad", "type": "amlcompute", "min_instances": 5, "max_instances": 2, "colour": "red"})

    result = dockyard("compute", "create", "-f", str(path))

    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "Error (ValidationError): colour: Unknown field for type 'amlcompute'.",
    ]
    path = write_yaml(tmp_path / "bad.yml", {"name": "bad", "type": "amlcompute", "min_instances": 5, "max_instances": 2})
    assert dockyard("compute", "create", "-f", str(path)).stderr.splitlines() == [
        "Error (ValidationError): min_instances: min_instances (5) must not exceed max_instances (2).",
    ]


def test_not_found_says_which_is_missing(dockyard):
    compute = dockyard("compute", "show", "nope")
    assert (compute.exit_code, compute.stderr) == (1, "Error (NotFound): Compute 'nope' was not found in workspace 'team-a'.\n")

    workspace = dockyard("compute", "list", "-w", "nowhere")
    assert (workspace.exit_code, workspace.stderr) == (1, "Error (NotFound): Workspace 'nowhere' was not found, or you are not a member of it.\n")


def test_a_reader_gets_the_apis_forbidden_message(dockyard, users, tmp_path, monkeypatch):
    reader_token = token_create(user=users["reader"], name="cli")[1]
    monkeypatch.setenv("DOCKYARD_TOKEN", reader_token)
    path = write_yaml(tmp_path / "cpu.yml", CPU_CLUSTER)

    result = Cli(reader_token)("compute", "create", "-f", str(path))

    assert (result.exit_code, result.stderr) == (1, "Error (Forbidden): This needs the owner role in workspace 'team-a'.\n")


def test_connection_refused_exits_3_and_names_the_url(dockyard, monkeypatch):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    monkeypatch.setenv("DOCKYARD_URL", closed_url)

    result = dockyard("compute", "list")

    assert result.exit_code == 3
    assert result.stderr.startswith(f"Error (ConnectionFailed): Cannot connect to {closed_url}:")


def test_bad_set_syntax_and_missing_file_are_reported(dockyard, tmp_path):
    path = write_yaml(tmp_path / "cpu.yml", CPU_CLUSTER)
    assert dockyard("compute", "create", "-f", str(path), "--set", "max_instances").exit_code == 2

    missing = dockyard("compute", "create", "-f", str(tmp_path / "none.yml"))
    assert missing.exit_code == 1 and missing.stderr.startswith("Error (InvalidFile): Cannot read")

    no_kubeconfig = write_yaml(tmp_path / "k8s.yml", K8S)
    result = dockyard("compute", "create", "-f", str(no_kubeconfig))
    assert result.exit_code == 1
    [said] = result.stderr.splitlines()  # once: not again as the detail of kubeconfig_file
    assert said.startswith(f"Error (InvalidFile): Cannot read {tmp_path / 'kube' / 'config.yaml'}")


# apply


def test_apply_creates_updates_and_reports_the_invalid_document(dockyard, owner, workspace, hosted, tmp_path):
    compute_create(user=owner, workspace=workspace, data={**CPU_CLUSTER})
    path = write_yaml(
        tmp_path / "computes.yml",
        {"name": "gpu-cluster", "type": "amlcompute", "size": "Standard_NC6s_v3", "max_instances": 4},
        {**CPU_CLUSTER, "max_instances": 8},
        {"name": "broken", "type": "amlcompute", "min_instances": 3, "max_instances": 1},
        {"name": "last-one", "type": "computeinstance", "size": "Standard_DS3_v2"},
    )

    result = dockyard("apply", "-f", str(path))

    assert result.exit_code == 1
    assert result.stdout.splitlines() == ["compute/gpu-cluster created", "compute/cpu-cluster configured", "compute/last-one created"]
    assert result.stderr.splitlines() == [
        "compute/broken failed",
        "Error (ValidationError): min_instances: min_instances (3) must not exceed max_instances (1).",
        "Error (ApplyFailed): 1 of 4 documents failed.",
    ]
    assert stored(workspace, "gpu-cluster").properties["max_instances"] == 4
    assert stored(workspace, "cpu-cluster").properties["max_instances"] == 8
    assert stored(workspace, "broken") is None and stored(workspace, "last-one") is not None


def test_apply_twice_leaves_everything_unchanged(dockyard, workspace, kube_dir):
    key = kube_dir / "keys" / "id_ed25519"
    key.parent.mkdir()
    key.write_text(SSH_KEY)
    vm = {"name": "gpu-box", "type": "virtualmachine", "address": "10.0.0.5",
          "ssh_settings": {"admin_username": "azureuser", "ssh_port": 2222, "ssh_private_key_file": "keys/id_ed25519"}}
    path = write_yaml(kube_dir / "all.yml", CPU_CLUSTER, vm, K8S)  # the cluster lives on k8s-dev, which goes first

    first = dockyard("apply", "-f", str(path))
    second = dockyard("apply", "-f", str(path))

    assert first.exit_code == 0, first.stderr
    assert first.stdout.splitlines() == ["compute/k8s-dev created", "compute/cpu-cluster created", "compute/gpu-box created"]
    assert second.exit_code == 0, second.stderr
    assert second.stdout.splitlines() == ["compute/k8s-dev unchanged", "compute/cpu-cluster unchanged", "compute/gpu-box unchanged"]
    box = stored(workspace, "gpu-box")
    assert box.secrets == {"ssh_private_key": SSH_KEY} and box.properties["ssh_port"] == 2222
    assert stored(workspace, "k8s-dev").generation == 1


def test_apply_dry_run_writes_nothing(dockyard, owner, workspace, hosted, tmp_path):
    compute_create(user=owner, workspace=workspace, data={**CPU_CLUSTER})
    path = write_yaml(
        tmp_path / "plan.yml",
        {"name": "team-c", "type": "workspace", "display_name": "Team C"},
        {"name": "new-cluster", "type": "amlcompute"},
        {**CPU_CLUSTER, "max_instances": 5, "tags": {"tier": "gold"}},
        CPU_CLUSTER,
    )

    result = dockyard("apply", "-f", str(path), "--dry-run")

    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [
        "workspace/team-c created (dry run)",
        "compute/new-cluster created (dry run)",
        "compute/cpu-cluster configured (dry run: max_instances, tags)",
        "compute/cpu-cluster unchanged (dry run)",
    ]
    assert list(ComputeTarget.objects.filter(type="amlcompute").values_list("name", "generation")) == [("cpu-cluster", 1)]
    assert stored(workspace, "cpu-cluster").properties["max_instances"] == 2
    assert dockyard("workspace", "show", "team-c").exit_code == 1


def test_apply_of_instance_types_without_a_compute_is_a_usage_error_before_anything_is_applied(dockyard, workspace, tmp_path):
    instance_type = {"apiVersion": "amlarc.azureml.com/v1alpha1", "kind": "InstanceType", "metadata": {"name": "gpu-small"},
                     "spec": {"resources": {"limits": {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": 1}}}}
    path = write_yaml(tmp_path / "mixed.yml", CPU_CLUSTER, instance_type)

    result = dockyard("apply", "-f", str(path))

    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        "Error (NoCompute): No compute given: instance types belong to a kubernetes compute; pass --compute NAME, "
        "set DOCKYARD_COMPUTE, or run `dockyard configure --defaults compute=NAME`.\n"
    )
    assert stored(workspace, "cpu-cluster") is None


def test_apply_dry_run_of_a_kubernetes_compute_says_the_kubeconfig_is_not_compared(dockyard, kube_dir):
    path = write_yaml(kube_dir / "k8s.yml", K8S)
    dockyard("apply", "-f", str(path))

    result = dockyard("apply", "-f", str(path), "--dry-run")

    assert result.stdout == "compute/k8s-dev unchanged (dry run; kubeconfig not compared: write-only)\n"


def test_apply_json_output_lists_every_outcome_including_failures(dockyard, owner, workspace, hosted, tmp_path):
    compute_create(user=owner, workspace=workspace, data={**CPU_CLUSTER})
    path = write_yaml(tmp_path / "two.yml", CPU_CLUSTER, {"name": "xy", "type": "amlcompute", "max_instances": 0})

    result = dockyard("apply", "-f", str(path), "-o", "json")

    assert result.exit_code == 1
    outcomes = json.loads(result.stdout)
    assert outcomes[0] == {"resource": "compute/cpu-cluster", "action": "unchanged", "dry_run": False, "changes": []}
    assert outcomes[1]["action"] == "failed" and outcomes[1]["error"]["details"][0]["target"] == "max_instances"


def test_apply_creates_and_updates_workspaces_and_reads_several_files(dockyard, tmp_path):
    first = write_yaml(tmp_path / "ws.yml", {"name": "team-c", "type": "workspace", "display_name": "Team C"})
    second = write_yaml(tmp_path / "ws2.yml", {"name": "team-a", "kind": "Workspace", "display_name": "Team A", "description": "Vision"})

    result = dockyard("apply", "-f", str(first), "-f", str(second))

    assert result.stdout.splitlines() == ["workspace/team-c created", "workspace/team-a configured"]
    assert dockyard.json("workspace", "show", "team-a")["description"] == "Vision"
    assert dockyard("apply", "-f", str(first), "-f", str(second)).stdout.splitlines() == [
        "workspace/team-c unchanged", "workspace/team-a unchanged",
    ]


def test_apply_names_the_place_of_documents_it_cannot_route(dockyard, hosted, tmp_path):
    job = {"$schema": "https://azuremlschemas.azureedge.net/latest/sweepJob.schema.json", "type": "sweep", "trial": {}}
    path = write_yaml(tmp_path / "odd.yml", CPU_CLUSTER, {"name": "what", "colour": "blue"}, job, ["not", "a", "mapping"])

    result = dockyard("apply", "-f", str(path))

    assert result.exit_code == 1
    assert result.stdout == "compute/cpu-cluster created\n"
    errors = result.stderr.splitlines()
    assert errors[0] == f"{path}, document 2 failed"
    assert errors[1].startswith("Error (UnknownDocument): Cannot tell what this document is: give `type`")
    assert errors[2:4] == [f"{path}, document 3 failed", "Error (NotSupported): This is a sweep job; Dockyard runs command jobs only (`type: command`)."]
    assert errors[4:6] == [f"{path}, document 4 failed", "Error (InvalidDocument): A document must be a YAML mapping."]
    assert errors[-1] == "Error (ApplyFailed): 3 of 4 documents failed."


def test_apply_stops_at_once_when_the_server_is_unreachable(dockyard, tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKYARD_URL", "http://127.0.0.1:9")
    path = write_yaml(tmp_path / "two.yml", CPU_CLUSTER, {**CPU_CLUSTER, "name": "other"})

    result = dockyard("apply", "-f", str(path))

    assert result.exit_code == 3 and result.stderr.count("Error (ConnectionFailed)") == 1


# the wrapper script


def test_bin_dockyard_runs_from_anywhere_and_through_a_symlink(tmp_path):
    link = tmp_path / "dockyard"
    link.symlink_to(REPO / "bin" / "dockyard")
    (tmp_path / "cli").mkdir()  # a folder named like our package must not shadow it
    env = {key: value for key, value in os.environ.items() if not key.startswith("DOCKYARD_")}

    for command in ([str(REPO / "bin" / "dockyard"), "--help"], [str(link), "compute", "--help"]):
        result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        assert "Usage: dockyard" in result.stdout


def test_python_dash_m_cli_without_login_exits_4(tmp_path):
    env = {**{key: value for key, value in os.environ.items() if not key.startswith("DOCKYARD_")},
           "DOCKYARD_CONFIG": str(tmp_path / "none.yaml")}
    result = subprocess.run([sys.executable, "-m", "cli", "workspace", "list"], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=60)

    assert result.returncode == 4
    assert "Error (NotLoggedIn)" in result.stderr


# users


def test_staff_create_a_user_and_get_the_one_time_link_an_owner_is_refused(dockyard, make_user, monkeypatch):
    refused = dockyard("user", "create", "alice")
    assert (refused.exit_code, refused.stderr) == (1, "Error (Forbidden): Only staff can create users.\n")

    staff_token = token_create(user=make_user("sam", staff=True), name="cli")[1]
    monkeypatch.setenv("DOCKYARD_TOKEN", staff_token)
    result = Cli(staff_token)("user", "create", "alice", "--email", "alice@example.com")

    assert result.exit_code == 0, result.stderr
    headline, link = result.stdout.splitlines()
    assert headline.startswith("user/alice created; the password is set at (once, until ")
    assert re.fullmatch(r"http://[^/]+/invitation/[\w-]{40,}/", link)
    assert get_user_model().objects.get(username="alice").email == "alice@example.com"


def test_compute_start_stop_restart_an_instance_and_show_its_state(dockyard, owner, workspace, hosted):
    from compute.models import ComputeInstance

    compute_create(user=owner, workspace=workspace, data={"name": "notebook", "type": "computeinstance"})
    shown = dict(line.split(None, 1) for line in dockyard("compute", "show", "notebook").stdout.splitlines())
    assert (shown["state"], shown["last_activity"], shown["desired_state"]) == ("Creating", "none seen yet", "running")

    stopped = dockyard("compute", "stop", "notebook")
    assert (stopped.exit_code, stopped.stdout) == (0, "compute/notebook stopping (now Creating)\n")
    again = dockyard("compute", "stop", "notebook")
    assert again.exit_code != 0 and "It is already creating (asked to stop)." in again.stderr

    ComputeInstance.objects.filter(compute__name="notebook").update(state="Stopped", desired_state="stopped")
    assert dockyard.json("compute", "start", "notebook")["desired_state"] == "running"
    ComputeInstance.objects.filter(compute__name="notebook").update(state="Running", state_reason="")
    assert dockyard("compute", "restart", "notebook").stdout == "compute/notebook restarting (now Running)\n"
    ComputeInstance.objects.filter(compute__name="notebook").update(
        state="Stopped", state_reason="idle for 30 min; last activity 14:02, kernel idle", desired_state="stopped",
        stop_cause="idle",
        last_activity="2026-01-05T14:02:00Z", last_activity_source="kernel idle")
    shown = dict(line.split(None, 1) for line in dockyard("compute", "show", "notebook").stdout.splitlines())
    assert shown["state"] == "Stopped: idle for 30 min; last activity 14:02, kernel idle"
    assert shown["last_activity"].endswith("(kernel idle)") and "2026-01-05" in shown["last_activity"]
    assert shown["desired_state"] == "stopped (idle)"


def test_compute_start_of_another_type_or_a_missing_one_says_so(dockyard, owner, workspace, hosted):
    compute_create(user=owner, workspace=workspace, data={**CPU_CLUSTER})
    refused = dockyard("compute", "start", "cpu-cluster")
    assert refused.exit_code != 0 and "only a compute instance can be started" in refused.stderr
    missing = dockyard("compute", "stop", "nope")
    assert missing.exit_code != 0 and "nope" in missing.stderr
