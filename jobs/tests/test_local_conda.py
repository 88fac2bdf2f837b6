"""Local jobs with a conda file, end to end: realised in a sandbox before the command (pip offline from a wheel folder
the test builds), cached per workspace and hash, reused, shown read-only; a failure is the job's reason."""
import json
from pathlib import Path

import pytest

from assets.specs.conda import check_conda_file, conda_hash
from assets.tests.wheels import make_wheel
from compute.runners import environments
from jobs.models import Job
from jobs.tests.test_local_jobs import (  # noqa: F401 (fixtures)
    ended,
    events_of,
    job_dir,
    log_of,
    submit,
    worker,
)

pytestmark = pytest.mark.usefixtures("local_compute")
CONDA = {"channels": ["conda-forge"], "dependencies": ["python=3.11", "dockyardtiny=1.0", {"pip": ["dockyardother"]}]}
COMMAND = 'python -c "import dockyardtiny, dockyardother, sys; print(dockyardtiny.VALUE, dockyardother.VALUE, sys.prefix)"'


@pytest.fixture
def cache(settings, tmp_path) -> Path:
    """The environment cache in the test's folder; pip offline against a wheel folder (no index is reached)."""
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "dockyardtiny", "1.0.2", "VALUE = 'tiny-1.0.2'\n")
    make_wheel(wheels, "dockyardother", "2.0", "VALUE = 'other-2.0'\n")
    settings.DOCKYARD_ENVIRONMENT_DIR = tmp_path / "environments"
    settings.DOCKYARD_ENVIRONMENT_PIP = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels)}
    settings.DOCKYARD_ENVIRONMENT_NETWORK = False  # no index to reach: the realisation needs no network here
    return settings.DOCKYARD_ENVIRONMENT_DIR


def entry_of(workspace, conda=CONDA) -> environments.Entry:
    return environments.entry(environments.workspace_key(workspace), check_conda_file(conda))


@pytest.mark.parametrize("run_network, admin_switch, network", [
    (False, False, False), (True, False, True), (False, True, True)])
def test_the_realisation_has_a_network_only_where_the_run_may(settings, workspace, cache, run_network, admin_switch,
                                                              network):
    settings.DOCKYARD_ENVIRONMENT_NETWORK = admin_switch  # pip fetches URLs the tenant chose: no more reach than its job
    conda = check_conda_file(CONDA)
    box = environments._realisation(conda, entry_of(workspace), None, run_network)
    assert box.network is network


def test_a_conda_file_is_realised_then_reused_read_only(worker, owner_api, workspace, cache):  # noqa: F811
    first = submit(owner_api, command=COMMAND, environment={"conda_file": CONDA})
    job = ended(owner_api, first, timeout=180)
    log = log_of(owner_api, first)
    assert job["status"] == "Completed", (job["status_reason"], log)
    assert any(line.startswith("Environment realised in ") for line in log)
    assert log[-1] == "tiny-1.0.2 other-2.0 /opt/dockyard/env"
    realised = [event for event in events_of(owner_api, first) if event["reason"] == "EnvironmentRealised"]
    assert len(realised) == 1 and "cached for the workspace" in realised[0]["message"]
    entry = entry_of(workspace)
    assert (entry.final / "env" / ".dockyard-ready").read_text().strip() == conda_hash(check_conda_file(CONDA))
    assert not entry.partial.exists()

    second = submit(owner_api, command=f"{COMMAND}; touch /opt/dockyard/env/poison", environment={"conda_file": CONDA})
    job = ended(owner_api, second, timeout=120)
    log = log_of(owner_api, second)
    assert job["status"] == "Failed" and job["exit_code"] == 1, log  # touch: a read-only file system
    assert log[0].startswith("Environment reused") and not any("Realising" in line for line in log)
    assert "tiny-1.0.2 other-2.0 /opt/dockyard/env" in log and any("Read-only file system" in line for line in log)
    assert [event["reason"] for event in events_of(owner_api, second)].count("EnvironmentReused") == 1
    assert not (entry.final / "env" / "poison").exists()


def test_two_jobs_with_the_same_file_realise_it_once(worker, owner_api, workspace, cache, settings):  # noqa: F811
    settings.DOCKYARD_ENVIRONMENT_NETWORK = True  # the realisation's own network (slirp4netns); the job has none
    command = f"{COMMAND}; grep -q tap0 /proc/net/dev && echo tap0 || echo no tap0"
    names = [submit(owner_api, command=command, environment={"conda_file": CONDA}) for _ in range(2)]
    jobs = [ended(owner_api, name, timeout=240) for name in names]
    logs = [log_of(owner_api, name) for name in names]
    shown = "\n\n".join("\n".join(log) for log in logs)  # whole: a failure under load must say where it broke
    assert [job["status"] for job in jobs] == ["Completed", "Completed"], shown
    realised = [any(line.startswith("Environment realised in ") for line in log) for log in logs]
    reused = [any(line.startswith("Environment reused") for line in log) for log in logs]
    assert sorted(realised) == [False, True] and sorted(reused) == [False, True], logs
    assert [path.name for path in entry_of(workspace).folder.iterdir() if not path.name.endswith(".lock")] == [
        entry_of(workspace).runtime]
    for name in names:
        folder = Path(Job.objects.get(name=name).runner["folder"])
        plan = json.loads((folder / "environment" / "plan.json").read_text())
        assert "network.py" in plan["command"]  # the realisation ran with a network of its own
        assert log_of(owner_api, name)[-2:] == ["tiny-1.0.2 other-2.0 /opt/dockyard/env", "no tap0"]  # the job: none


def test_a_crashed_realisation_is_never_used(worker, owner_api, workspace, cache):  # noqa: F811
    entry = entry_of(workspace)
    (entry.partial / "env" / "bin").mkdir(parents=True)  # a worker host that died mid-realisation
    (entry.final / "env" / "bin").mkdir(parents=True)  # and a folder without its ready mark
    name = submit(owner_api, command=COMMAND, environment={"conda_file": CONDA})
    job = ended(owner_api, name, timeout=180)
    assert job["status"] == "Completed", (job["status_reason"], log_of(owner_api, name))
    assert any(line.startswith("Environment realised in ") for line in log_of(owner_api, name))
    assert not entry.partial.exists()


def test_a_failed_realisation_fails_the_job_with_pips_last_lines(worker, owner_api, workspace, cache):  # noqa: F811
    conda = {"dependencies": [{"pip": ["no-such-package-here==9"]}]}
    name = submit(owner_api, command="echo the command ran", environment={"conda_file": conda})
    job = ended(owner_api, name, timeout=180)
    assert job["status"] == "Failed" and job["exit_code"] == 97
    assert job["status_reason"].startswith("The environment could not be realised from the conda file")
    assert "no-such-package-here" in job["status_reason"] and "pip failed" in job["status_reason"]
    assert "the command ran" not in log_of(owner_api, name)
    assert [event["type"] for event in events_of(owner_api, name) if event["reason"] == "EnvironmentFailed"] == ["Warning"]
    entry = entry_of(workspace, conda)
    assert not entry.final.exists() and not entry.partial.exists()  # nothing half-made is left to be used
    stored = Job.objects.get(name=name).runner
    assert json.loads((Path(stored["folder"]) / "environment" / "result.json").read_text())["failed"] is True


def test_the_cache_is_keyed_by_workspace_and_hash(workspace, owner, settings, tmp_path):  # noqa: F811
    from workspaces.models import Workspace

    settings.DOCKYARD_ENVIRONMENT_DIR = tmp_path
    other = Workspace.objects.create(name="team-z", created_by=owner)
    mine, theirs = entry_of(workspace), entry_of(other)
    assert mine.final != theirs.final and mine.folder.name == theirs.folder.name == conda_hash(check_conda_file(CONDA))
    assert entry_of(workspace, {"dependencies": ["numpy"]}).folder != mine.folder
