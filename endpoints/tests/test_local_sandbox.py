"""Local deployments in their sandbox (issue 9, finding 1): the scoring script sees only what it was given, the server
has no TCP port, and a tenant's job cannot reach it. Real inference servers, driven by reconcile (no worker).
"""
import json
import os
import shutil
import time
from pathlib import Path

import pytest
from django.conf import settings

from compute.runners import local as runner
from endpoints import reconcile
from endpoints.models import OnlineDeployment, OnlineEndpoint
from jobs import reconcile as job_reconcile
from jobs.models import Job
from tests.support import assert_error, stop_leftover_runs

pytestmark = pytest.mark.usefixtures("local_compute")  # off by default: enabled as staff would


BASE = "/api/v1/workspaces/team-a/online-endpoints"
ADDER = Path(__file__).parent / "data" / "adder"
KEYS: dict[str, str] = {}  # the endpoint's primary key, shown once at its creation
# A scoring script that goes looking: it answers with what it could read and where it runs.
SNOOP = '''
import json, os, socket

def init():
    pass

def run(raw_data):
    paths = json.loads(raw_data)["paths"]
    seen = {}
    for path in paths:
        try:
            seen[path] = open(path).read() if os.path.isfile(path) else sorted(os.listdir(path))
        except OSError as exc:
            seen[path] = type(exc).__name__
    try:
        socket.create_connection(("127.0.0.1", 5432), timeout=2).close()
        network = "open"
    except OSError:
        network = "refused"
    return {"seen": seen, "uid": os.getuid(), "network": network, "environ": dict(os.environ)}
'''


@pytest.fixture(autouse=True)
def folders(settings, tmp_path):
    settings.DOCKYARD_DEPLOYMENT_DIR = tmp_path / "deployments"
    settings.DOCKYARD_JOB_DIR = tmp_path / "jobs"
    KEYS.clear()
    shared = tmp_path / "shared"
    settings.DOCKYARD_LOCAL_PATHS = [shared]
    shutil.copytree(ADDER, shared / "adder")
    (shared / "snoop").mkdir()
    (shared / "snoop" / "score.py").write_text(SNOOP)
    (shared / "model").mkdir()
    (shared / "model" / "weights.txt").write_text("w\n")
    yield shared
    stop_leftover_runs([*Path(settings.DOCKYARD_DEPLOYMENT_DIR).glob(f"*/*/*/{runner.PID_FILE}"),
                        *Path(settings.DOCKYARD_JOB_DIR).glob(f"*/*/{runner.PID_FILE}")])


def deployment(name: str) -> OnlineDeployment:
    return OnlineDeployment.objects.select_related("endpoint", "endpoint__workspace").get(name=name)


def settle(name: str, seconds: float = 60, state: str = "Succeeded") -> OnlineDeployment:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        reconcile.reconcile_deployment(deployment(name))
        row = deployment(name)
        if row.provisioning_state == state:
            return row
        time.sleep(0.3)
    raise AssertionError(f"{name}: {row.provisioning_state} {row.provisioning_errors} {row.status}")


def deploy(api, code: Path | str, name: str = "blue", **extra) -> dict:
    """An endpoint `ep` with one deployment taking all traffic; returns the endpoint's keys."""
    if not OnlineEndpoint.objects.filter(name="probe").exists():
        response = api.post(f"{BASE}/", {"name": "probe", "compute": "local"}, format="json")
        assert response.status_code == 201, response.json()
        KEYS["probe"] = response.json()["keys"]["primaryKey"]
        reconcile.reconcile_endpoint(OnlineEndpoint.objects.select_related("workspace").get(name="probe"))
    body = {"name": name, "code_configuration": {"code": str(code), "scoring_script": "score.py"},
            **extra}
    response = api.post(f"{BASE}/probe/deployments/", body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def score(client, key: str, body: dict, name: str = "blue"):
    return client.post(f"{BASE}/probe/score", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}",
                       HTTP_AZUREML_MODEL_DEPLOYMENT=name)


def key_of(api) -> str:
    return KEYS["probe"]


def listening_tcp(pid: int) -> list[str]:
    """TCP sockets in LISTEN state that the process holds (in its own network namespace)."""
    held = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            held.add(target[8:-1])
    rows = []
    for table in ("tcp", "tcp6"):
        lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        rows += [line for line in lines if line.split()[3] == "0A" and line.split()[9] in held]
    return rows


def group_pids(pgid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                raw = (entry / "stat").read_text()
            except OSError:
                continue
            if int(raw[raw.rindex(")") + 2:].split()[2]) == pgid:
                pids.append(int(entry.name))
    return pids


def test_the_scoring_script_sees_only_what_it_was_given(owner_api, client, folders, planted):
    path, secret = planted
    deploy(owner_api, folders / "snoop", model={"path": str(folders / "model")},
           environment_variables={"MINE": "yes"})
    row = settle("blue")
    model_dir = str(reconcile.local.MODEL_DIR / "model")  # Azure ML's layout: AZUREML_MODEL_DIR/<the model's own name>
    paths = [str(path), str(settings.VAR_DIR), str(settings.BASE_DIR), str(settings.DOCKYARD_DEPLOYMENT_DIR),
             str(Path(row.runner["folder"]) / runner.LOG_FILE), f"{model_dir}/weights.txt", "/root"]
    answer = score(client, key_of(owner_api), {"paths": paths})
    assert answer.status_code == 200, answer.content
    result = answer.json()
    seen = result["seen"]
    assert secret not in json.dumps(result)
    assert seen[str(path)] == seen[str(settings.VAR_DIR)] == "FileNotFoundError"
    assert seen[str(settings.BASE_DIR)] == [".venv-inference"]  # the inference venv alone, not the tree around it
    assert seen[str(Path(row.runner["folder"]) / runner.LOG_FILE)] == "FileNotFoundError"  # nor its own run folder
    assert seen[f"{model_dir}/weights.txt"] == "w\n"  # what it was given, read-only
    assert seen["/root"] in ([".pyenv"], "PermissionError")  # only the base interpreter the venv was made from
    assert result["uid"] != 0 and result["network"] == "refused"
    assert result["environ"]["MINE"] == "yes" and "DATABASE_URL" not in result["environ"]
    assert "SECRET_KEY" not in result["environ"] and "CELERY_BROKER_URL" not in result["environ"]
    assert result["environ"]["AZUREML_MODEL_DIR"] == str(reconcile.local.MODEL_DIR)
    # the server reads that layout as Azure ML's (<name>/<version>): no NotADirectoryError at start any more
    log = (Path(row.runner["folder"]) / runner.LOG_FILE).read_text()
    assert "NotADirectoryError" not in log and "Error while fetching model IDs" not in log, log
    reconcile.local.stop_local(deployment("blue"))


def test_the_server_has_no_tcp_port_and_a_job_cannot_reach_its_socket(owner_api, client, workspace):
    """Even with the network allowed, a job finds nothing to call: the server listens on a socket in its folder."""
    workspace.local_network_enabled = True  # the server and the job each get a network of their own (slirp4netns)
    workspace.save()
    deploy(owner_api, Path(settings.DOCKYARD_LOCAL_PATHS[0]) / "adder", environment_variables={"DEPLOYMENT_NAME": "blue"})
    row = settle("blue")
    sock = Path(row.runner["socket"])
    assert sock.is_socket() and oct(sock.stat().st_mode & 0o777) == "0o600", oct(sock.stat().st_mode)
    assert score(client, key_of(owner_api), {"numbers": [1, 2]}).json()["sum"] == 3  # Dockyard reaches it
    pids = group_pids(row.runner["pid"])
    assert pids and not [pid for pid in pids if listening_tcp(pid)], "a server process listens on TCP"
    names = [Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].rsplit(b"/", 1)[-1] for pid in pids]
    assert names.count(b"slirp4netns") == 1, names  # the server was given its network (and served all the same)
    command = (f"ls {sock.parent} {Path(row.runner['folder'])}; "
               "python3 - <<'EOF'\n"
               "import os, socket\n"
               "s = socket.socket(socket.AF_UNIX)\n"
               "try:\n"
               f"    folder = os.open({str(sock.parent)!r}, os.O_PATH)  # (the path is longer than an address holds)\n"
               f"    s.connect(f'/proc/self/fd/{{folder}}/{sock.name}'); print('connected')\n"
               "except OSError as exc:\n"
               "    print('blocked', type(exc).__name__)\n"
               "EOF")
    response = owner_api.post("/api/v1/workspaces/team-a/jobs/", {"compute": "local", "command": command}, format="json")
    assert response.status_code == 201, response.json()
    name = response.json()["name"]
    deadline = time.monotonic() + 30
    while job_reconcile.reconcile_job(Job.objects.select_related("workspace", "compute").get(name=name)) is not None:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    job = Job.objects.get(name=name)
    log = "\n".join(line.text for line in job.log_lines.all())
    assert job.status == "Completed", (job.status_reason, log)
    assert "connected" not in log and "blocked FileNotFoundError" in log and log.count("No such file") == 2, log
    reconcile.local.stop_local(deployment("blue"))


@pytest.mark.parametrize("where", ["source-tree", "var", "outside-the-shared-folders", "symlink-out"])
def test_code_or_model_outside_the_shared_folders_is_refused(owner_api, where, tmp_path, settings, folders):
    other = tmp_path / "elsewhere"
    shutil.copytree(ADDER, other)
    (folders / "link").symlink_to(Path(settings.BASE_DIR) / "controlplane")  # inside a shared folder, pointing out
    code, model = {"source-tree": (Path(settings.BASE_DIR) / "endpoints" / "tests" / "data" / "adder", None),
                   "var": (folders / "adder", settings.VAR_DIR), "outside-the-shared-folders": (other, None),
                   "symlink-out": (folders / "adder", folders / "link")}[where]
    deploy(owner_api, folders / "adder")  # (the endpoint, and a deployment that is fine)
    body = {"name": "bad", "code_configuration": {"code": str(code), "scoring_script": "score.py"},
            **({"model": {"path": str(model)}} if model else {})}
    response = owner_api.post(f"{BASE}/probe/deployments/", body, format="json")
    error = assert_error(response, 400, "InvalidDeployment", "model.path" if model else "code_configuration.code")
    assert "DOCKYARD_LOCAL_PATHS" in error["message"], error
    assert not OnlineDeployment.objects.filter(name="bad").exists()


def test_a_path_no_longer_shared_when_the_server_starts_is_refused_then(owner_api, settings, folders):
    deploy(owner_api, folders / "adder")
    settings.DOCKYARD_LOCAL_PATHS = []  # the server stopped sharing it after the deployment was created
    row = settle("blue", state="Failed")
    (error,) = row.provisioning_errors
    assert error["code"] == "StartFailed" and "DOCKYARD_LOCAL_PATHS" in error["message"], error
    assert not row.runner.get("pid") and not (row.local_folder / runner.PID_FILE).exists()


def test_a_shared_root_holding_dockyards_files_is_ignored(settings, tmp_path):
    from compute.runners import sandbox

    settings.DOCKYARD_LOCAL_PATHS = [settings.BASE_DIR, settings.BASE_DIR.parent, settings.VAR_DIR, Path("/"),
                                     settings.DOCKYARD_JOB_DIR, tmp_path / "ok"]
    assert sandbox.local_path_roots() == [Path(os.path.realpath(tmp_path / "ok"))]


def test_a_deployment_made_before_local_compute_was_turned_off_is_not_started(owner_api, folders, workspace):
    deploy(owner_api, folders / "adder")
    workspace.local_compute_enabled = False  # staff turned it off before the worker got to it
    workspace.save()
    reconcile.reconcile_deployment(deployment("blue"))
    row = deployment("blue")
    assert row.provisioning_state == "Failed"
    assert row.provisioning_errors[0]["code"] == "LocalComputeOff"
    assert "not enabled for workspace 'team-a'" in row.provisioning_errors[0]["message"]
    assert not row.runner.get("pid") and not list(Path(settings.DOCKYARD_DEPLOYMENT_DIR).glob(f"**/{runner.PID_FILE}"))


def test_a_job_made_before_local_compute_was_turned_off_is_not_started(owner_api, workspace):
    response = owner_api.post("/api/v1/workspaces/team-a/jobs/", {"compute": "local", "command": "echo hi"}, format="json")
    assert response.status_code == 201, response.json()
    workspace.local_compute_enabled = False
    workspace.save()
    job_reconcile.reconcile_job(Job.objects.select_related("workspace").get(name=response.json()["name"]))
    job = Job.objects.get(name=response.json()["name"])
    assert job.status == "Failed" and "not enabled for workspace 'team-a'" in job.status_reason
    assert not job.runner.get("pid") and not list(Path(settings.DOCKYARD_JOB_DIR).glob(f"**/{runner.PID_FILE}"))
