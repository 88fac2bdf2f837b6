"""The pod's own shell steps, run with a real shell against a live Dockyard: the fake API server runs no container, so
the scripts the manifests carry are proven here — fetching code and inputs with the URL read from the mounted
Secret's file, and the outputs sidecar packing ./outputs and uploading it when it is sent SIGTERM."""
import os
import shutil
import signal
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from assets import delivery
from assets.models import Snapshot
from assets.specs import pods
from controlplane.kube.resources import Shape
from jobs.manifests import UPLOAD_CONTAINER, Delivery, job_manifest
from jobs.models import Job
from jobs.tests.support import IMAGE, URL
from jobs.tests.test_uploaded_code import upload

pytestmark = [pytest.mark.usefixtures("k8s"),
              pytest.mark.skipif(not all(shutil.which(tool) for tool in ("wget", "tar", "gzip", "find", "head")),
                                 reason="the pod's tools (wget, tar, gzip, find, head) are not on this machine")]
PATH = {"PATH": "/usr/bin:/bin"}


@pytest.fixture
def folder(tmp_path) -> Path:
    src = tmp_path / "src"
    (src / "lib").mkdir(parents=True)
    (src / "main.py").write_text("print('hi')\n")
    (src / "lib" / "util.py").write_text("X = 1\n")
    return src


def local(live_server, url: str) -> str:
    return live_server.url + urlsplit(url).path


def host_paths(script: str, tmp_path: Path) -> str:
    """The script with its fixed pod paths moved under tmp_path (never the host's /tmp)."""
    for fixed in (pods.ARCHIVE, pods.UPLOAD_ARCHIVE, pods.UPLOAD_LIST):
        script = script.replace(fixed, str(tmp_path / Path(fixed).name))
    return script


def urls_dir(tmp_path: Path, urls: dict[str, str]) -> Path:
    """The mounted Secret as the kubelet lays it out: one file per key."""
    folder = tmp_path / "urls"
    folder.mkdir(exist_ok=True)
    for key, value in urls.items():
        (folder / key).write_text(value)
    return folder


def test_a_snapshot_input_is_fetched_with_the_url_read_from_the_secrets_file(live_server, owner_api, folder, tmp_path):
    snapshot = Snapshot.objects.get(sha256=upload(owner_api, folder).rsplit("/", 1)[1])
    secret = urls_dir(tmp_path, {"input-data": local(live_server, delivery.fetch_url(snapshot, seconds=60))})
    target = tmp_path / "inputs" / "data"
    script = host_paths(pods.fetch_script(str(target), str(secret / "input-data")), tmp_path)

    done = subprocess.run(["/bin/sh", "-c", script], env=PATH, capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"fetched 2 files into {target}"
    assert (target / "lib" / "util.py").read_text() == "X = 1\n"
    (secret / "input-data").write_text(live_server.url + "/api/v1/artifacts/fetch/forged:token:here/")
    failed = subprocess.run(["/bin/sh", "-c", script], env=PATH, capture_output=True, text=True, timeout=60)
    assert failed.returncode != 0  # a refused URL fails the init step: the main container never starts without it


def test_a_url_input_is_saved_under_its_file_name_and_the_log_names_it_without_its_query(live_server, owner_api, folder,
                                                                                          tmp_path):
    snapshot = Snapshot.objects.get(sha256=upload(owner_api, folder).rsplit("/", 1)[1])
    url = local(live_server, delivery.fetch_url(snapshot, seconds=60)) + "?sig=secret"
    target = tmp_path / "inputs" / "lookup"
    script = pods.file_fetch_script(str(target), "data.tar.gz", url.split("?", 1)[0])

    done = subprocess.run(["/bin/sh", "-c", script], env={**PATH, "INPUT_URL": url}, capture_output=True, text=True,
                          timeout=60)

    assert done.returncode == 0, done.stderr
    size = (target / "data.tar.gz").stat().st_size
    assert done.stdout.strip() == f"fetched {url.split('?')[0]} ({size} bytes) into {target}/data.tar.gz"
    assert "secret" not in done.stdout


def sidecar_script(tmp_path: Path) -> tuple[str, Path]:
    """The upload sidecar's script from the Job manifest, its paths moved under tmp_path."""
    spec = {"name": "train", "command": "python train.py", "environment": {"image": IMAGE},
            "resources": {"instance_count": 1, "shm_size": "2g"}}
    manifest = job_manifest(spec=spec, job_name="train", namespace="ml", workspace="team-a", shape=Shape("default"),
                            delivery=Delivery(image="busybox:1.37.0"))
    sidecar = next(c for c in manifest["spec"]["template"]["spec"]["initContainers"] if c["name"] == UPLOAD_CONTAINER)
    workdir = tmp_path / "code"
    script = host_paths(sidecar["command"][2], tmp_path).replace(pods.URLS_DIR, str(tmp_path / "urls"))
    return script.replace("/var/dockyard/code", str(workdir)), workdir


def run_sidecar(script: str, rank: str) -> subprocess.CompletedProcess:
    """Start the sidecar, wait for its first line (it is waiting), send SIGTERM as the kubelet does, collect it."""
    process = subprocess.Popen(["/bin/sh", "-c", script], env={**PATH, "RANK": rank}, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    first = process.stdout.readline()
    assert first.startswith("waiting for the main container to end"), first
    os.kill(process.pid, signal.SIGTERM)
    try:
        out, err = process.communicate(timeout=60)
    finally:
        try:  # the whole group: a `sleep` the shell started just as SIGTERM came would outlive it (a pod's would not)
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return subprocess.CompletedProcess(process.args, process.returncode, first + out, err)


def test_the_sidecar_uploads_the_outputs_on_sigterm_and_the_job_records_them(live_server, owner_api, tmp_path):
    response = owner_api.post(URL, {"name": "train", "command": "python train.py", "compute": "k8s",
                                    "environment": {"image": IMAGE}}, format="json")
    assert response.status_code == 201, response.json()
    job = Job.objects.get(name="train")
    script, workdir = sidecar_script(tmp_path)
    outputs = workdir / "outputs"
    (outputs / "model").mkdir(parents=True)
    (outputs / "model" / "weights.bin").write_bytes(b"\0\1\2")
    (outputs / "metrics.json").write_text("{}")
    (outputs / "leak").symlink_to("/etc/passwd")  # a link is left out, not followed, and does not sink the upload
    urls_dir(tmp_path, {"outputs": local(live_server, delivery.upload_url(job.workspace_id, job.pk, 60))})

    done = run_sidecar(script, "0")

    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "uploaded 2 files" in done.stdout and "left out 1 links or special files" in done.stdout
    job.refresh_from_db()
    assert sorted(path for path, _, _ in job.outputs_snapshot.files) == ["metrics.json", "model/weights.bin"]


def test_the_sidecar_uploads_an_empty_outputs_folder_and_says_when_the_upload_fails(live_server, owner_api, tmp_path):
    owner_api.post(URL, {"name": "train", "command": "true", "compute": "k8s", "environment": {"image": IMAGE}},
                   format="json")
    job = Job.objects.get(name="train")
    script, workdir = sidecar_script(tmp_path)
    (workdir / "outputs").mkdir(parents=True)
    urls_dir(tmp_path, {"outputs": local(live_server, delivery.upload_url(job.workspace_id, job.pk, 60))})

    assert run_sidecar(script, "0").returncode == 0
    job.refresh_from_db()
    assert job.outputs_snapshot.file_count == 0

    urls_dir(tmp_path, {"outputs": live_server.url + "/api/v1/artifacts/outputs/forged:token:here/"})
    failed = run_sidecar(script.replace("sleep 2", "sleep 0"), "0")
    assert failed.returncode == 1 and failed.stdout.count("upload attempt") == pods.UPLOAD_ATTEMPTS
