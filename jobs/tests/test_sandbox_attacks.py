"""The attacks a contributor ran with `compute: local` (issue 9, finding 1), replayed against the sandbox: each must fail.

Real processes in real bubblewrap sandboxes, driven by reconcile (no worker), on this host. Every secret the job tries
to reach exists on the host and is readable by the test process, so a sandbox that let it through would fail the test.
"""
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from compute.runners import local as runner
from compute.runners import sandbox
from jobs import reconcile
from jobs.models import Job
from jobs.reconcile.local import run_folder
from tests.support import assert_error, stop_leftover_runs

pytestmark = pytest.mark.usefixtures("local_compute")  # off by default: enabled as staff would


BASE = "/api/v1/workspaces/team-a/jobs"


@pytest.fixture(autouse=True)
def job_dir(settings, tmp_path):
    settings.DOCKYARD_JOB_DIR = tmp_path / "jobs"
    yield
    stop_leftover_runs(Path(settings.DOCKYARD_JOB_DIR).glob(f"*/*/{runner.PID_FILE}"))


def submit(api, command: str, **body) -> str:
    response = api.post(f"{BASE}/", {"compute": "local", "command": command, **body}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()["name"]


def look(name: str) -> float | None:
    return reconcile.reconcile_job(Job.objects.select_related("workspace", "compute").get(name=name))


def run(api, command: str, seconds: float = 30, **body) -> tuple[Job, str]:
    """Submit, follow until the end; the job and its whole log."""
    name = submit(api, command, **body)
    deadline = time.monotonic() + seconds
    while look(name) is not None:
        assert time.monotonic() < deadline, "the job did not end"
        time.sleep(0.1)
    job = Job.objects.get(name=name)
    return job, "\n".join(line.text for line in job.log_lines.all())


def started(api, command: str) -> Job:
    name = submit(api, command)
    look(name)
    return Job.objects.get(name=name)


def test_an_ordinary_job_still_runs_writes_its_folder_and_logs(owner_api):
    job, log = run(owner_api, 'echo hello; python3 -c "print(6 * 7)"; echo kept > $HOME/out.txt; '
                              'echo scratch > /tmp/x && cat /tmp/x; echo err >&2; exit 0')
    assert job.status == "Completed", (job.status_reason, log)
    assert log.splitlines() == ["hello", "42", "scratch", "err"]
    assert (run_folder(job) / "workdir" / "out.txt").read_text() == "kept\n"


def test_a_job_does_not_run_as_root(owner_api):
    job, log = run(owner_api, "id -u; id -g; cat /proc/self/status | grep ^Cap")
    assert job.status == "Completed", log
    uid, gid, *caps = log.splitlines()
    assert uid == gid == str(sandbox.NOBODY) and uid != "0"
    assert caps and all(line.split()[1] == "0000000000000000" for line in caps), caps  # no capability at all


def test_a_job_cannot_read_the_admin_credentials_in_var(owner_api, planted):
    path, secret = planted
    assert path.read_text().strip() == secret  # there on the host, readable by the worker
    job, log = run(owner_api, f"cat {path}; ls -a {path.parent}; ls -a {settings.BASE_DIR}; "
                              f"grep -rs admin: {settings.VAR_DIR} /work /root; echo end")
    assert job.status == "Completed", log
    assert secret not in log and "No such file or directory" in log
    assert "secret-key" not in log and "manage.py" not in log  # neither var/ nor the source tree is there


def test_a_job_cannot_read_another_jobs_folder(owner_api):
    other_secret = uuid.uuid4().hex
    other = started(owner_api, f"echo {other_secret} > mine.txt; sleep 60")
    other_file = run_folder(other) / "workdir" / "mine.txt"
    deadline = time.monotonic() + 10
    while not other_file.exists():
        assert time.monotonic() < deadline, "the first job never wrote its file"
        time.sleep(0.05)
    assert other_file.read_text().strip() == other_secret
    jobs_dir = Path(settings.DOCKYARD_JOB_DIR) / "team-a"
    job, log = run(owner_api, f"ls {jobs_dir}; echo ---; cat {other_file} ../{other.pk}/workdir/mine.txt "
                              f"{run_folder(other) / runner.LOG_FILE}; echo end")
    assert job.status == "Completed", log
    listed, _, rest = log.partition("---")
    assert listed.split() == [str(job.pk)]  # its own folder (keyed by the record's id) only: the other job's is not there
    assert other_secret not in log and rest.count("No such file or directory") == 3, rest
    runner.kill_group(runner.Process.from_dict(Job.objects.get(pk=other.pk).runner), grace=0.2)


def test_a_job_sees_no_other_process_and_no_environment_in_proc(owner_api):
    """The attacker grepped DATABASE_URL out of /proc/*/environ: the worker's own, and another process's."""
    marker = f"postgres://dockyard:{uuid.uuid4().hex}@db/dockyard"
    other = subprocess.Popen(["sleep", "60"], env={"DATABASE_URL": marker})
    try:
        deadline = time.monotonic() + 10  # (until it has exec'd: a child just forked shows no environment yet)
        while marker not in Path(f"/proc/{other.pid}/environ").read_text(errors="replace"):
            assert time.monotonic() < deadline, "the host cannot read the other process's environment"
            time.sleep(0.02)
        database_url = os.environ["DATABASE_URL"]
        assert database_url in Path(f"/proc/{os.getpid()}/environ").read_text(errors="replace")
        job, log = run(owner_api, f"cat /proc/{os.getpid()}/environ /proc/{other.pid}/environ; "
                                  "grep -l -a DATABASE_URL /proc/*/environ; cat /proc/1/environ; "
                                  "ls /proc | grep -c '^[0-9]'")
    finally:
        other.kill()
        other.wait()
    assert job.status == "Completed", log
    assert marker not in log and database_url not in log and "DATABASE_URL" not in log
    count = int(log.splitlines()[-1])
    assert count < 10, f"{count} processes visible"  # its own pid namespace: only the job's few processes


def test_a_job_gets_none_of_the_worker_environment(owner_api, monkeypatch):
    secrets = {"SECRET_KEY": uuid.uuid4().hex, "FIELD_ENCRYPTION_KEYS": uuid.uuid4().hex}
    for key, value in secrets.items():
        monkeypatch.setenv(key, value)
    job, log = run(owner_api, "env; cat /proc/self/environ", environment_variables={"MINE": "yes"})
    assert job.status == "Completed", log
    assert not [value for value in secrets.values() if value in log]
    names = {line.split("=", 1)[0] for line in log.splitlines() if "=" in line}
    assert "MINE" in names and not names & {"DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE",
                                            *secrets}


def test_a_job_cannot_write_into_var_or_the_source_tree(owner_api):
    name = f"written-by-a-job-{uuid.uuid4().hex[:8]}"
    targets = [Path(settings.VAR_DIR) / name, Path(settings.BASE_DIR) / name, Path(settings.BASE_DIR) / "jobs" / name]
    command = "; ".join(f"mkdir -p {target.parent}; echo pwned > {target}" for target in targets) + "; ls -a /"
    try:
        job, log = run(owner_api, command)
        assert job.status == "Completed", log
        assert not [target for target in targets if target.exists()]
    finally:
        for target in targets:
            target.unlink(missing_ok=True)


def test_a_job_cannot_forge_its_pid_file_or_exit_code(owner_api):
    job, log = run(owner_api, "echo 0 > ../exit_code; echo 1 > ../run.pid; echo 0 > $DOCKYARD_JOB_DIR/../exit_code; exit 3")
    assert (job.status, job.exit_code) == ("Failed", 3), log
    assert (run_folder(job) / runner.EXIT_FILE).read_text().strip() == "3"


def open_port(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


CONNECT = ("import socket, sys\n"
           "for port in (5432, 6379):\n"
           "    try:\n"
           "        socket.create_connection(('127.0.0.1', port), timeout=3).close(); print(port, 'open')\n"
           "    except OSError as exc:\n"
           "        print(port, 'refused', exc.errno)\n")


def test_a_job_has_no_network_to_the_database_or_redis(owner_api):
    assert open_port(5432) and open_port(6379)  # PostgreSQL and Redis answer on the host's loopback
    job, log = run(owner_api, "python3 - <<'EOF'\n" + CONNECT + "EOF")
    assert job.status == "Completed", log
    assert "open" not in log and log.count("refused") == 2, log


# What the job's network looks like: its interfaces, its default route, and TCP connects to the database and Redis on
# the host's loopback and on the slirp gateway (the host's side of a network allowed). Nothing else is ever contacted.
NETWORK = ("import socket\n"
           "print('interfaces', *sorted(open('/proc/net/dev').read().split('\\n', 2)[2].replace(':', ' ').split()[::17]))\n"
           "routes = [line.split() for line in open('/proc/net/route').read().splitlines()[1:]]\n"
           "print('default', *[socket.inet_ntoa(bytes.fromhex(gw)[::-1]) for _, dest, gw, *_ in routes if dest == '00000000'])\n"
           # 'open' only when the host's own service answers (PostgreSQL's SSLRequest: N/S/E; Redis's PING: +/-):
           # a network that accepts any outbound connect (an egress proxy) is not the host's loopback
           "probes = {5432: (bytes.fromhex('0000000804d2162f'), b'NSE'), 6379: (b'PING\\r\\n', b'+-')}\n"
           "for address in ('127.0.0.1', '10.0.2.2'):\n"
           "    for port, (probe, answers) in probes.items():\n"
           "        try:\n"
           "            with socket.create_connection((address, port), timeout=3) as sock:\n"
           "                sock.sendall(probe); reply = sock.recv(64)\n"
           "            print(address, port, 'open' if reply[:1] and reply[:1] in answers else 'refused not-the-service')\n"
           "        except OSError as exc:\n"
           "            print(address, port, 'refused', exc.errno)\n")


def network_seen(log: str) -> tuple[list[str], list[str], list[str]]:
    """The job's interfaces, its default gateways, and the connects that succeeded."""
    lines = log.splitlines()
    interfaces = next(line.split()[1:] for line in lines if line.startswith("interfaces"))
    gateways = next(line.split()[1:] for line in lines if line.startswith("default"))
    assert sum(" refused " in line or line.endswith(" open") for line in lines) == 4, log
    return interfaces, gateways, [line for line in lines if line.endswith(" open")]


def test_without_the_network_a_job_has_only_loopback(owner_api):
    job, log = run(owner_api, "python3 - <<'EOF'\n" + NETWORK + "EOF")
    assert job.status == "Completed", log
    assert network_seen(log) == (["lo"], [], []), log


def test_a_workspace_allowed_the_network_gets_its_own_not_the_hosts(owner_api, workspace):
    """The flag gives the job a network of its own (slirp4netns): a route out, but not to the host's loopback services."""
    assert open_port(5432) and open_port(6379)
    workspace.local_network_enabled = True
    workspace.save()
    job, log = run(owner_api, "echo $(ls /proc/self/fd); python3 - <<'EOF'\n" + NETWORK + "EOF")
    assert job.status == "Completed", log
    interfaces, gateways, opened = network_seen(log)
    assert interfaces == ["lo", "tap0"] and gateways == ["10.0.2.2"], log
    assert opened == [], log  # not the host's 127.0.0.1, nor the host's loopback through the gateway
    assert log.splitlines()[0].split() == ["0", "1", "2", "3"], log  # (3: ls's own) no fd of the network's setup
    assert "slirp" not in log and "MTU" not in log  # slirp4netns's chatter stays out of the job's log


def test_the_network_setting_gives_every_sandbox_its_own_network(owner_api, settings):
    settings.DOCKYARD_SANDBOX_NETWORK = True
    job, log = run(owner_api, "python3 - <<'EOF'\n" + NETWORK + "EOF")
    assert job.status == "Completed", log
    assert network_seen(log) == (["lo", "tap0"], ["10.0.2.2"], []), log


def slirps() -> dict[int, tuple[int, list[str]]]:
    """Running slirp4netns processes: pid → (process group, arguments)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = [os.fsdecode(arg) for arg in (entry / "cmdline").read_bytes().split(b"\0")[:-1]]
            raw = (entry / "stat").read_text()
        except OSError:
            continue
        if args and Path(args[0]).name == "slirp4netns":
            found[int(entry.name)] = (int(raw[raw.rindex(")") + 2:].split()[2]), args)
    return found


def process_uid(pid: int) -> int:
    return next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                if line.startswith("Uid:"))


@pytest.mark.parametrize("how", ["cancel", "kill"])
def test_stopping_a_job_allowed_the_network_leaves_no_slirp4netns(owner_api, workspace, how):
    workspace.local_network_enabled = True
    workspace.save()
    job = started(owner_api, "ip route; sleep 300")
    process = runner.Process.from_dict(job.runner)
    deadline = time.monotonic() + 60  # (network.py's own bound for setting the network up)
    while not [pid for pid, (group, _) in slirps().items() if group == process.pid]:
        assert time.monotonic() < deadline, ("no slirp4netns for the job", slirps(), *[
            path.read_text() for path in Path(process.folder).glob("*.log")])
        time.sleep(0.05)
    (slirp, (_, args)), = [(pid, found) for pid, found in slirps().items() if found[0] == process.pid]
    target = args[-2]  # the pid whose network namespace it serves: a process of the job's group
    assert runner._stat(int(target))[2] == str(process.pid), args
    assert process_uid(slirp) == sandbox.NOBODY and "--disable-host-loopback" in args  # not root
    if how == "cancel":
        response = owner_api.post(f"{BASE}/{job.name}/cancel")
        assert response.status_code in (200, 202), response.content
        deadline = time.monotonic() + 30
        while look(job.name) is not None:
            assert time.monotonic() < deadline, "the job did not end"
            time.sleep(0.1)
        assert Job.objects.get(pk=job.pk).status == "Canceled"
    else:
        runner.kill_group(process, grace=0.2)
    assert not runner.group_alive(process.pid)
    left = [pid for pid, (group, found) in slirps().items() if group == process.pid or target in found]
    assert left == [], left
    deadline = time.monotonic() + 10  # a killed process is in /proc until its parent has reaped it (a loaded machine)
    while not exited(slirp):
        assert time.monotonic() < deadline, f"slirp4netns {slirp} outlived its job"
        time.sleep(0.05)


def exited(pid: int) -> bool:
    """Gone from /proc, or a zombie waiting for its parent's wait(): either way it runs no more."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def test_without_slirp4netns_a_job_allowed_the_network_is_refused(owner_api, workspace, monkeypatch, tmp_path):
    from compute.runners import network

    workspace.local_network_enabled = True
    workspace.save()
    monkeypatch.setattr(network, "SLIRP", str(tmp_path / "no-slirp4netns"))
    marker = tmp_path / "ran"
    job, _ = run(owner_api, f"touch {marker}")
    assert job.status == "Failed" and "Debian: slirp4netns" in job.status_reason, job.status_reason
    assert "never the host's" in job.status_reason and not marker.exists() and not job.runner.get("pid")


@pytest.fixture
def fake_venv(tmp_path):
    """A virtualenv made the ordinary way (outside Dockyard's tree)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    return venv


def test_a_venv_outside_dockyard_is_visible_read_only(owner_api, fake_venv):
    job, log = run(owner_api, 'python -c "import sys; print(sys.prefix)"; touch $VIRTUAL_ENV/x 2>&1 || echo read-only',
                   environment={"venv": str(fake_venv)})
    assert job.status == "Completed", log
    assert log.splitlines()[0] == str(fake_venv) and "read-only" in log and not (fake_venv / "x").exists()


def refused_at_create(api, venv) -> str:
    """The job is refused when it is posted (400 at environment.venv, nothing written); the reason."""
    response = api.post(f"{BASE}/", {"compute": "local", "command": "echo ran", "environment": {"venv": str(venv)}},
                        format="json")
    error = assert_error(response, 400, "InvalidJob", "environment.venv")
    assert not Job.objects.exists()
    return next(detail["message"] for detail in error["details"] if detail["target"] == "environment.venv")


@pytest.mark.parametrize("venv", ["own", "inference", "root", "var", "not-a-venv", "relative"])
def test_a_venv_that_would_show_dockyards_files_is_refused(owner_api, venv, tmp_path):
    paths = {"own": Path(settings.BASE_DIR) / ".venv", "inference": settings.DOCKYARD_INFERENCE_VENV, "root": Path("/"),
             "var": Path(settings.VAR_DIR), "not-a-venv": tmp_path, "relative": Path(".venv")}
    reason = refused_at_create(owner_api, paths[venv])
    assert "Dockyard's own files" in reason or "not a virtualenv" in reason or "absolute path" in reason, reason


def test_a_venv_symlinked_to_dockyards_venv_is_refused(owner_api, tmp_path):
    link = tmp_path / "innocent-venv"
    link.symlink_to(Path(settings.BASE_DIR) / ".venv")
    assert "Dockyard's own files" in refused_at_create(owner_api, link)


def test_a_venv_swapped_for_dockyards_after_the_post_is_refused_when_the_job_starts(owner_api, fake_venv, tmp_path):
    """The check at create is not the only one: the worker checks again, on what the path is when it starts."""
    link = tmp_path / "swapped-venv"
    link.symlink_to(fake_venv)
    marker = tmp_path / "ran"
    name = submit(owner_api, f"touch {marker}; cat {settings.BASE_DIR}/controlplane/settings.py",
                  environment={"venv": str(link)})
    link.unlink()
    link.symlink_to(Path(settings.BASE_DIR) / ".venv")
    while look(name) is not None:
        time.sleep(0.1)
    job = Job.objects.get(name=name)
    assert job.status == "Failed" and "could not be started" in job.status_reason, job.status_reason
    assert "Dockyard's own files" in job.status_reason
    assert not marker.exists() and not job.runner.get("pid") and not job.log_lines.filter(text__contains="SECRET_KEY")


def test_a_forged_venv_cannot_bind_dockyards_tree_as_its_interpreter(owner_api, tmp_path):
    """A venv whose pyvenv.cfg names Dockyard's tree as `home`: binding that "interpreter" would show the tree."""
    forged = tmp_path / "forged"
    (forged / "bin").mkdir(parents=True)
    (forged / "pyvenv.cfg").write_text(f"home = {settings.BASE_DIR}/bin\nversion = 3.11.7\n")
    assert "interpreter in Dockyard's own files" in refused_at_create(owner_api, forged)


def test_a_venv_made_by_another_job_is_refused(owner_api, fake_venv):
    """Job folders are written by tenants: a venv (or a forged pyvenv.cfg) there is never bound into another job."""
    first, _ = run(owner_api, f"mkdir venv && cp {fake_venv}/pyvenv.cfg venv/ && echo made", environment={"venv": str(fake_venv)})
    planted = run_folder(first) / "workdir" / "venv"
    assert (planted / "pyvenv.cfg").is_file()
    first.delete()  # (refused_at_create counts jobs)
    assert "Dockyard's own files" in refused_at_create(owner_api, planted)


NOT_ROOT = '''
import os, sys, time
sys.path.insert(0, {base!r})
os.environ["DJANGO_SETTINGS_MODULE"] = "controlplane.settings"
import django
django.setup()
from pathlib import Path
from compute.runners import local as runner, sandbox
folder = Path(sys.argv[1])
workdir = folder / "workdir"
box = sandbox.Sandbox((sandbox.Bind(workdir, writable=True),), sys.argv[3] == "network", {{"PATH": sandbox.DEFAULT_PATH, "HOME": str(workdir)}})
process = runner.spawn(sys.argv[2], folder, workdir, {{}}, box)
while runner.exit_code(process) is None:
    time.sleep(0.05)
print("exit", runner.exit_code(process))
'''


@pytest.mark.skipif(os.geteuid() != 0, reason="switches to another uid to play a worker that is not root")
@pytest.mark.parametrize("network", [False, True], ids=["no-network", "network-allowed"])
def test_a_worker_that_is_not_root_still_sandboxes_as_its_own_uid(network):
    """No uid switch without root: the command keeps the worker's uid, confined by the namespaces all the same.

    Allowed the network, it gets its own from slirp4netns all the same (run as the worker's uid, in its user namespace).
    """
    system_python = Path("/usr/bin/python3")
    version = subprocess.run([str(system_python), "-c", "import sys; print(sys.version_info[:2])"], capture_output=True,
                             text=True).stdout.strip() if system_python.exists() else ""
    if version != str(sys.version_info[:2]):
        pytest.skip("needs a system python3 of this version (uid 1000 cannot reach this venv's interpreter)")
    import tempfile

    from cryptography.fernet import Fernet

    top = Path(tempfile.mkdtemp(prefix="dy-not-root-"))
    try:
        top.chmod(0o777)
        (top / "main.py").write_text(NOT_ROOT.format(base=str(settings.BASE_DIR)))
        site = next(Path(settings.BASE_DIR, ".venv", "lib").glob("python3*/site-packages"))
        env = {"PATH": "/usr/bin:/bin", "HOME": str(top), "PYTHONPATH": str(site), "SECRET_KEY": "x",
               "FIELD_ENCRYPTION_KEYS": Fernet.generate_key().decode(), "DATABASE_URL": "postgres://x@127.0.0.1/x",
               "DOCKYARD_VAR_DIR": str(top / "var")}  # a fresh checkout has no var/ that uid 1000 may write
        command = ("id -u; ls /proc | grep -c '^[0-9]'; ls " + str(settings.BASE_DIR) + " 2>&1; "
                   "python3 - <<'EOF'\n" + NETWORK + "EOF\nunshare -U true 2>&1 || echo no-nested-namespace")
        done = subprocess.run(["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", str(system_python),
                               str(top / "main.py"), str(top / "run"), command, "network" * network], env=env,
                              capture_output=True, text=True, timeout=60)
        log = (top / "run" / runner.LOG_FILE).read_text() if (top / "run" / runner.LOG_FILE).exists() else ""
        assert done.stdout.strip().endswith("exit 0"), (done.stdout, done.stderr[-2000:], log)
        uid, count, listing, *rest = log.splitlines()
        assert uid == "1000" and int(count) < 10 and "No such file or directory" in listing, log
        assert "no-nested-namespace" in log, log
        expected = (["lo", "tap0"], ["10.0.2.2"], []) if network else (["lo"], [], [])
        assert network_seen(log) == expected, log
    finally:
        subprocess.run(["rm", "-rf", str(top)], check=False)
