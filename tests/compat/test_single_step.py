"""Azure ML's single-step job files (tests/compat/single_step), run end to end through the CLI as a user runs them:
on `local` (the sandbox, a real worker) and on a Kubernetes compute (the fake API server; the pod's own fetch steps,
the command and the outputs upload are then run with a real shell against the live server). Every output is listed
and downloaded.

Kubernetes gets the files unchanged: the compute is attached under the name they use (`cpu-cluster`). What `local`
needs changed is said where it is changed (`for_local`), and so is what the pod's shell run changes (`pod_env`,
`in_this_shell`). This machine has no internet: a file the examples fetch from the web is served on loopback, and pip
installs the conda file's one stand-in package from a wheel the test builds.
"""
import base64
import json
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from assets.specs import pods, realise
from assets.tests.wheels import make_wheel
from cli.tests.conftest import config_file, dockyard, token  # noqa: F401 (fixtures)
from jobs.manifests import CODE_DIR, INPUTS_DIR, UPLOAD_CONTAINER, kube_job_name, urls_secret_name
from jobs.tests.support import serve_files, tls_server  # noqa: F401 (tls_server: a fixture)
from jobs.tests.test_kubernetes import (  # noqa: F401 (fresh_clients: a fixture)
    attach,
    fresh_clients,
    live_job,
    load,
    observe,
    pods_of,
    run_reconcile,
)
from jobs.tests.test_local_jobs import job_dir, worker  # noqa: F401 (fixtures)
from jobs.tests.test_pod_scripts import host_paths, run_sidecar, urls_dir

pytestmark = pytest.mark.django_db(transaction=True)
SINGLE_STEP = Path(__file__).parent / "single_step"
JOBS = "/api/v1/workspaces/team-a/jobs/"
KUBERNETES = "1.36"
IRIS = (SINGLE_STEP / "data" / "iris.csv").read_bytes()
IRIS_PATH = "/datasets/iris.csv"  # where both examples' URLs put it (wasbs://datasets@<account>/iris.csv is this too)
WEB_IRIS = "https://azuremlexamples.blob.core.windows.net" + IRIS_PATH
TRAINED = "trained on 3 rows: setosa, versicolor, virginica"
SH = "/bin/sh"


@dataclass(frozen=True)
class Case:
    """One example file: what its command prints, the outputs it leaves (path → the declared output, None for
    ./outputs), and on Kubernetes the image it runs, its rendered command and the inputs its pod fetches."""

    file: str
    log: tuple[str, ...]
    outputs: dict = field(default_factory=dict)
    image: str = ""
    command: str = ""
    inputs: tuple[str, ...] = ()
    assets: bool = False  # refers to iris-csv:1 and team-python:1, registered first
    conda: bool = False  # its conda file is realised before the command (the stand-in wheel, pip offline)


SKLEARN_COMMAND = ("python main.py --iris-csv /var/dockyard/inputs/iris_csv/iris.csv --C {C} --kernel {kernel} "
                   "--coef0 {coef0}")
CASES = [
    Case("hello-world.yml", ("hello world",), image="library/python:latest", command='echo "hello world"'),
    Case("hello-world-input.yml", ("hello world", "42"), image="library/python:latest",
         command="echo hello world\necho 42\n"),
    Case("hello-world-output.yml", (), {"hello_output/helloworld.txt": "hello_output"}, image="python",
         command='echo "hello world" > outputs/hello_output/helloworld.txt'),
    Case("hello-code.yml", ("hello-iris.py", "main.py"), image="library/python:latest", command="ls"),
    Case("hello-iris-file.yml", ("iris rows: 3",), image="library/python:latest", inputs=("iris_file",),
         command=('echo "--iris-file: /var/dockyard/inputs/iris_file/iris.csv"\n'
                  "python hello-iris.py --iris-file /var/dockyard/inputs/iris_file/iris.csv\n")),
    Case("sklearn-iris.yml", (TRAINED,), {"metrics.json": None, "model/model.json": None},
         image="mcr.microsoft.com/azureml/curated/sklearn-1.5:latest", inputs=("iris_csv",),
         command=SKLEARN_COMMAND.format(C=0.8, kernel="rbf", coef0=0.1)),
    Case("registered-data-and-environment.yml", (TRAINED,), {"metrics.json": None, "model/model.json": "model"},
         image="python:3.11-slim", inputs=("iris_csv",), assets=True,
         command=SKLEARN_COMMAND.format(C=0.5, kernel="poly", coef0=0.2) + " --model-dir outputs/model"),
    Case("conda-environment.yml", (TRAINED,), {"metrics.json": None, "model/model.json": None},
         image="mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu20.04:latest", inputs=("iris_csv",),
         command=SKLEARN_COMMAND.format(C=1.0, kernel="linear", coef0=0.0), conda=True),
]
PARAMS = [pytest.param(case, id=case.file.removesuffix(".yml")) for case in CASES]


# what both runs share


@pytest.fixture
def tls_files() -> dict[str, bytes]:
    return {IRIS_PATH: IRIS}  # what tls_server (jobs/tests/support.py) serves


def created(result) -> str:
    """The job's name from `job create`'s first line (`job/<name> created`)."""
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return re.match(r"job/(\S+) created", result.stdout).group(1)


def is_web(item: object) -> bool:
    """An input whose file is on the web (Azure ML's https:// and wasbs:// examples)."""
    return isinstance(item, dict) and bool(re.match(r"(https|wasbs)://", str(item.get("path"))))


def register_assets(dockyard, folder: Path) -> None:  # noqa: F811
    """`az ml data create -f` and `az ml environment create -f` with the example's asset files."""
    for kind, file in (("data", "data-iris-csv.yml"), ("environment", "environment-team-python.yml")):
        result = dockyard(kind, "create", "-f", str(folder / file))
        assert result.exit_code == 0, result.stderr


def outputs_listed_and_downloaded(dockyard, api, name: str, case: Case, target: Path) -> dict[str, bytes]:  # noqa: F811
    """Every output listed on the job (by path and declared output) and saved by `job download --all` as served."""
    listed = api.get(f"{JOBS}{name}/outputs/").json()
    assert {row["path"]: row["output"] for row in listed} == case.outputs
    result = dockyard("job", "download", "-n", name, "--all", "--download-path", str(target))
    assert result.exit_code == 0, result.stderr
    assert (target / f"{name}.log").exists()
    saved = {row["path"]: (target / "outputs" / row["path"]).read_bytes() for row in listed}
    for path, content in saved.items():
        assert b"".join(api.get(f"{JOBS}{name}/outputs/", {"path": path}).streaming_content) == content
    return saved


def check_contents(saved: dict[str, bytes], case: Case) -> None:
    """What the stand-in commands write: the hello file, the model's parameters, the rows counted."""
    if "hello_output/helloworld.txt" in saved:
        assert saved["hello_output/helloworld.txt"] == b"hello world\n"
    if "model/model.json" in saved:
        model = json.loads(saved["model/model.json"])
        assert model["classes"] == ["setosa", "versicolor", "virginica"] and f"--kernel {model['kernel']}" in case.command
        assert json.loads(saved["metrics.json"]) == {"rows": 3}


# local: the sandbox on the worker's host


def for_local(case: Case, folder: Path, url: str) -> Path:
    """The example's copy (beside its src/ and data/) with only the changes local compute needs; its path."""
    path = folder / case.file
    body = yaml.safe_load(path.read_text())
    body["compute"] = "local"  # the worker's sandbox instead of Azure ML's cluster
    if "conda_file" not in body["environment"]:
        # An image (written, curated or registered) is a pod's; a local job runs in the sandbox on the host's Python
        # (`python` there even on a host with only python3: compute/runners/sandbox.py's shim).
        del body["environment"]
    else:
        body["environment"].pop("image")  # the conda file is realised in the sandbox, on the host's python3
    for item in (body.get("inputs") or {}).values():
        if is_web(item):
            item["path"] = url  # no internet here: the same file from a loopback server the test trusts
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


@pytest.fixture
def wheels(tmp_path) -> Path:
    """A folder holding the conda file's one stand-in package: pip installs from it offline (there is no index here)."""
    make_wheel(tmp_path / "wheels", "standin_sklearn", "1.5.0", "VALUE = 'stand-in'\n")
    return tmp_path / "wheels"


@pytest.fixture
def local_environments(settings, tmp_path, wheels):
    """Local realisations cached in the test's folder, pip offline against the wheel folder."""
    settings.DOCKYARD_ENVIRONMENT_DIR = tmp_path / "environments"
    settings.DOCKYARD_ENVIRONMENT_PIP = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels)}
    settings.DOCKYARD_ENVIRONMENT_NETWORK = False


@pytest.mark.parametrize("case", PARAMS)
@pytest.mark.usefixtures("local_compute", "worker", "local_environments")
def test_on_local(case, dockyard, owner_api, tls_server, tmp_path):  # noqa: F811
    folder = Path(shutil.copytree(SINGLE_STEP, tmp_path / "single_step"))
    if case.assets:
        register_assets(dockyard, folder)
    path = for_local(case, folder, tls_server + IRIS_PATH)

    result = dockyard("job", "create", "-f", str(path), "--stream")

    name = created(result)
    log = result.stdout.splitlines()
    assert all(line in log for line in case.log), log
    assert case.conda == any(line.startswith("Environment realised in ") for line in log), log
    saved = outputs_listed_and_downloaded(dockyard, owner_api, name, case, tmp_path / "download")
    check_contents(saved, case)


# Kubernetes: the fake API server, then the pod's steps in a real shell


@pytest.fixture
def cpu_cluster(owner_api, workspace, fake_kube, live_server, settings):
    """The fake cluster attached as `cpu-cluster`, the name the examples use; pods reach the live server."""
    settings.DOCKYARD_EXTERNAL_URL = live_server.url
    return attach(owner_api, fake_kube, name="cpu-cluster")


@pytest.fixture
def iris_http():
    server = serve_files({IRIS_PATH: IRIS})
    yield f"http://127.0.0.1:{server.server_address[1]}{IRIS_PATH}"
    server.shutdown()


def check_pod(pod: dict, case: Case, code: bool, web: set[str], urls: dict[str, str]) -> None:
    """The pod as designed: code and inputs fetched first (from the Secret's URLs, a web file from its own), mounted
    read-only where the command reads them, the upload sidecar last, the resolved image, the rendered command."""
    steps = pod["initContainers"]
    inputs = [f"input-{index}-{name.replace('_', '-')}" for index, name in enumerate(sorted(case.inputs))]
    assert [step["name"] for step in steps] == ["fetch-code" if code else "make-outputs", *inputs, UPLOAD_CONTAINER]
    assert steps[-1]["restartPolicy"] == "Always"  # a native sidecar: it uploads once the main container ends
    main = pod["containers"][0]
    assert (main["image"], main["workingDir"], main["command"][:2]) == (case.image, CODE_DIR, [SH, "-c"])
    if case.conda:  # the conda file is realised into the pod's own emptyDir first, then the command runs
        assert main["command"][2].endswith("\n" + case.command) and "Realising the conda file" in main["command"][2]
        conda = yaml.safe_load((SINGLE_STEP / "environment" / "conda.yml").read_text())
        assert yaml.safe_load(env_of(main)["DOCKYARD_CONDA_FILE"]) == conda
        assert {"name": realise.VOLUME, "mountPath": realise.ROOT} in main["volumeMounts"]
    else:
        assert main["command"][2] == case.command
    for name in case.inputs:
        assert {"name": "inputs", "mountPath": f"{INPUTS_DIR}/{name}", "subPath": name,
                "readOnly": True} in main["volumeMounts"]
    expected = {"outputs", *(["code"] if code else []), *(f"input-{name}" for name in case.inputs if name not in web)}
    assert set(urls) == expected, urls  # a file on the web (https, wasbs) is fetched from its own address
    for step, name in zip(steps[1:-1], sorted(case.inputs), strict=True):
        assert step.get("env") == ([{"name": "INPUT_URL", "value": WEB_IRIS}] if name in web else None)


def env_of(container: dict) -> dict[str, str]:
    return {item["name"]: item["value"] for item in container.get("env", []) if "value" in item}


def pod_env(step: dict, iris_http: str, tmp_path: Path) -> dict[str, str]:
    """A step's environment in this shell. No internet here: an input fetched from the web is fetched from loopback,
    and pip installs the conda file's stand-in package from the test's wheel folder."""
    env = env_of(step) | {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(tmp_path / "wheels")}
    if "INPUT_URL" in env:
        assert env["INPUT_URL"] == WEB_IRIS
        env["INPUT_URL"] = iris_http
    bin_dir = tmp_path / "bin"  # the image's `python`: this host's python3
    bin_dir.mkdir(exist_ok=True)
    if not (bin_dir / "python").exists():
        (bin_dir / "python").symlink_to(shutil.which("python3", path="/usr/bin:/bin"))
    return {**env, "PATH": f"{bin_dir}:/usr/bin:/bin", "RANK": "0", "HOME": str(tmp_path)}


def in_this_shell(script: str, tmp_path: Path) -> str:
    """The pod's fixed paths moved under tmp_path (its emptyDirs and the mounted Secret)."""
    for fixed, here in ((pods.URLS_DIR, "urls"), (CODE_DIR, "code"), (INPUTS_DIR, "inputs"),
                        (realise.ROOT, "environment")):
        script = script.replace(fixed, str(tmp_path / here))
    return host_paths(script, tmp_path)


def run_pod(pod: dict, urls: dict[str, str], iris_http: str, tmp_path: Path) -> list[str]:
    """The init steps in order, then the main command in the working folder, then the sidecar's upload; the log."""
    urls_dir(tmp_path, urls)
    log = []
    for step in pod["initContainers"][:-1]:
        done = subprocess.run([SH, "-c", in_this_shell(step["command"][2], tmp_path)], capture_output=True, text=True,
                              env=pod_env(step, iris_http, tmp_path), timeout=60)
        assert done.returncode == 0, (step["name"], done.stdout, done.stderr)
        log += done.stdout.splitlines()
    main = pod["containers"][0]
    done = subprocess.run([SH, "-c", in_this_shell(main["command"][2], tmp_path)], cwd=tmp_path / "code",
                          env=pod_env(main, iris_http, tmp_path), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (done.stdout, done.stderr)
    log += done.stdout.splitlines()
    uploaded = run_sidecar(in_this_shell(pod["initContainers"][-1]["command"][2], tmp_path), "0")
    assert uploaded.returncode == 0, (uploaded.stdout, uploaded.stderr)
    return log + uploaded.stdout.splitlines()


def init_steps_ran_in_the_fake(fake_kube, name: str, code: bool, urls: dict[str, str]) -> None:
    """The fake starts the pod: its fetch steps end (0) in order, the code's reading the URL Secret as mounted."""
    fake_kube.advance(1)
    started = pods_of(fake_kube, name)[0]
    fetched = [s for s in started["status"]["initContainerStatuses"] if s["name"] != UPLOAD_CONTAINER]
    assert all(s["state"]["terminated"]["exitCode"] == 0 for s in fetched)
    if code:
        assert fake_kube.secrets_read("default", started["metadata"]["name"], "fetch-code") == {
            f"{pods.URLS_DIR}/{key}": value for key, value in urls.items()}


@pytest.mark.parametrize("case", PARAMS)
@pytest.mark.skipif(not all(shutil.which(tool) for tool in ("wget", "tar", "gzip", "find", "head")),
                    reason="the pod's tools (wget, tar, gzip, find, head) are not on this machine")
@pytest.mark.usefixtures("wheels")
def test_on_kubernetes(case, dockyard, owner_api, cpu_cluster, fake_kube, iris_http, tmp_path):  # noqa: F811
    if case.assets:
        register_assets(dockyard, SINGLE_STEP)
    written = yaml.safe_load((SINGLE_STEP / case.file).read_text())
    code = "code" in written
    web = {name for name, item in (written.get("inputs") or {}).items() if is_web(item)}

    name = created(dockyard("job", "create", "-f", str(SINGLE_STEP / case.file)))  # the file as written

    job = run_reconcile(name)
    assert job.status == "Queued", job.status_reason
    for manifest in job.manifests:
        assert kubernetes_validate.validate(manifest, KUBERNETES, strict=True) == KUBERNETES
    pod = live_job(fake_kube, name)["spec"]["template"]["spec"]
    secret = fake_kube.get("secrets", urls_secret_name(kube_job_name("team-a", name)), "default")
    urls = {key: base64.b64decode(value).decode() for key, value in secret["data"].items()}
    check_pod(pod, case, code, web, urls)

    init_steps_ran_in_the_fake(fake_kube, name, code, urls)
    log = run_pod(pod, urls, iris_http, tmp_path)  # what the fake does not run: the steps themselves, here

    assert all(line in log for line in case.log), log
    assert case.conda == any(line.startswith("Environment realised in ") for line in log), log
    if code:
        assert f"fetched 2 files into {tmp_path / 'code'}" in log  # src/: main.py, hello-iris.py
    for input_name in case.inputs:
        assert (tmp_path / "inputs" / input_name / "iris.csv").read_bytes() == IRIS
    fake_kube.advance(15)  # the fake's pod ends (its own plan); the job completes with what the sidecar uploaded
    observe(cpu_cluster)
    assert load(name).status == "Completed", load(name).status_reason
    saved = outputs_listed_and_downloaded(dockyard, owner_api, name, case, tmp_path / "download")
    assert saved == {path: (tmp_path / "code" / "outputs" / path).read_bytes() for path in case.outputs}
    check_contents(saved, case)
