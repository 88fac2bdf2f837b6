"""Uploaded code (`azureml://uploads/<sha256>`) reaching where the job runs: a local job's working folder, a pod's
emptyDir through an init container fetching a signed, short-lived URL that names one snapshot."""
import gzip
import io
import os
import tarfile
import time
from urllib.parse import urlsplit

import kubernetes_validate
import pytest
from django.core import signing

from assets import delivery
from assets.models import Snapshot
from cli.resources import uploads
from cli.tests.conftest import config_file, dockyard, token  # noqa: F401 (fixtures)
from cli.tests.support import write_yaml
from jobs.models import Job
from jobs.reconcile import local
from jobs.tests.test_kubernetes import BASE, api, compute, fresh_clients, live_job, run_reconcile, submit  # noqa: F401
from jobs.tests.test_local_jobs import ended, job_dir, log_of, worker  # noqa: F401 (fixtures)
from workspaces.models import Workspace

KUBERNETES = "1.36"


@pytest.fixture
def src(tmp_path):
    folder = tmp_path / "project" / "src"
    (folder / "helpers").mkdir(parents=True)
    (folder / "main.py").write_text("from helpers.greet import greeting\nprint(greeting())\n"
                                    "open('outputs/done.txt', 'w').write('ok')\n")
    (folder / "helpers" / "__init__.py").write_text("")
    (folder / "helpers" / "greet.py").write_text("def greeting():\n    return 'hello from src'\n")
    (folder / "tool.sh").write_text("#!/bin/sh\necho tool\n")
    os.chmod(folder / "tool.sh", 0o755)
    (folder / ".amlignore").write_text("*.ckpt\n")
    (folder / "model.ckpt").write_text("left behind")
    return folder


def upload(client, folder, workspace: str = "team-a") -> str:
    packed = uploads.pack(folder)
    response = client.generic("POST", f"/api/v1/workspaces/{workspace}/uploads/", uploads.archive(packed),
                           content_type="application/gzip")
    assert response.status_code in (200, 201), response.json()
    return response.json()["path"]


def members(body: bytes) -> dict[str, tuple[int, bytes]]:
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(body))) as tar:
        return {member.name: (member.mode, tar.extractfile(member).read() if member.isfile() else b"")
                for member in tar.getmembers()}


def fetch(client, url: str):
    return client.get(urlsplit(url).path)


# local jobs


@pytest.mark.usefixtures("local_compute", "worker")
def test_a_local_job_from_a_yaml_file_runs_its_uploaded_code_through_the_cli(request, src, monkeypatch):
    cli = request.getfixturevalue("dockyard")  # the CLI's fixture (imported above), logged in to team-a
    if not os.access("/usr/bin/bwrap", os.X_OK):
        monkeypatch.setattr(local, "_sandbox", lambda job, workdir: None)
    path = write_yaml(src.parent / "job.yml", {"type": "command", "name": "greet", "compute": "local", "code": "./src",
                                               "command": "python3 main.py && ./tool.sh && ls"})

    result = cli("job", "create", "-f", str(path), "--stream")

    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert "uploaded 5 files" in result.stderr
    assert "hello from src\ntool\n" in result.stdout
    assert "model.ckpt" not in result.stdout  # .amlignore'd: never uploaded
    job = Job.objects.get(name="greet")
    assert job.spec["code"].startswith("azureml://uploads/")
    copied = [event.message for event in job.events.all() if event.reason == "CodeCopied"]
    assert copied and copied[0].startswith("Copied 5 files (") and job.spec["code"] in copied[0]


@pytest.mark.usefixtures("local_compute")
def test_uploaded_code_beyond_the_local_bounds_fails_the_job_saying_which(owner_api, workspace, src, settings, tmp_path):
    settings.DOCKYARD_JOB_CODE_MAX_FILES = 2
    settings.DOCKYARD_JOB_DIR = tmp_path / "jobs"
    reference = upload(owner_api, src)
    response = owner_api.post("/api/v1/workspaces/team-a/jobs/", {"command": "ls", "compute": "local", "code": reference},
                              format="json")
    job = Job.objects.select_related("workspace").get(name=response.json()["name"])

    local.reconcile_local(job)

    job.refresh_from_db()
    assert job.status == "Failed" and "DOCKYARD_JOB_CODE_MAX_FILES" in job.status_reason


def test_an_upload_of_another_workspace_is_refused_at_the_field_and_nothing_is_written(owner_api, workspace, make_user,
                                                                                        src, local_compute):
    from rest_framework.test import APIClient

    other_owner = make_user("other-owner")
    other = APIClient()
    other.force_authenticate(other_owner)
    assert other.post("/api/v1/workspaces/", {"name": "team-b"}, format="json").status_code == 201
    reference = upload(other, src, "team-b")

    response = owner_api.post("/api/v1/workspaces/team-a/jobs/", {"command": "ls", "compute": "local", "code": reference},
                              format="json")

    assert response.status_code == 400
    assert response.json()["error"]["details"][0]["target"] == "code"
    assert "not an upload of workspace 'team-a'" in response.json()["error"]["message"]
    assert not Job.objects.exists()


def test_a_malformed_upload_reference_is_refused_by_the_spec(owner_api, workspace, local_compute):
    response = owner_api.post("/api/v1/workspaces/team-a/jobs/", {"command": "ls", "compute": "local",
                                                                   "code": "azureml://uploads/../../etc"}, format="json")

    assert response.status_code == 400 and response.json()["error"]["details"][0]["target"] == "code"


# Kubernetes jobs


@pytest.mark.usefixtures("compute")
def test_a_kubernetes_job_fetches_its_code_in_an_init_container_into_its_working_folder(owner_api, fake_kube, src, client,
                                                                                         settings):
    kube_api_client = owner_api
    settings.DOCKYARD_EXTERNAL_URL = "https://dockyard.example.org"
    reference = upload(kube_api_client, src)
    name = submit(kube_api_client, code=reference, command="python main.py")

    job = run_reconcile(name)

    live = live_job(fake_kube, name)
    assert live is not None, job.status_reason
    pod = live["spec"]["template"]["spec"]
    init, main = pod["initContainers"][0], pod["containers"][0]
    assert init["image"] == settings.DOCKYARD_FETCH_IMAGE == "busybox:1.37.0"
    assert main["workingDir"] == "/var/dockyard/code"
    assert {"name": "code", "emptyDir": {}} in pod["volumes"]
    assert {"name": "code", "mountPath": "/var/dockyard/code"} in main["volumeMounts"]
    assert init["volumeMounts"] == [{"name": "code", "mountPath": "/var/dockyard/code"},
                                    {"name": "urls", "mountPath": "/var/dockyard/urls", "readOnly": True}]
    assert "tar -xzf" in init["command"][2] and "/var/dockyard/code" in init["command"][2]
    assert '"$(cat /var/dockyard/urls/code)"' in init["command"][2] and "env" not in init  # read when it fetches
    url = secret_urls(fake_kube, live)["code"]
    assert url.startswith("https://dockyard.example.org/api/v1/artifacts/fetch/")
    for manifest in job.manifests:
        assert kubernetes_validate.validate(manifest, KUBERNETES, strict=True) == KUBERNETES

    response = fetch(client, url)

    assert response.status_code == 200 and response["Content-Type"] == "application/gzip"
    files = members(b"".join(response.streaming_content))
    assert files["main.py"][1].startswith(b"from helpers.greet import greeting")
    assert files["tool.sh"][0] == 0o755 and files["helpers/greet.py"][0] == 0o644
    assert "model.ckpt" not in files and files["helpers"][0] == 0o755


def secret_urls(fake_kube, live_job: dict) -> dict[str, str]:
    """The URLs in the job's Secret, decoded."""
    import base64

    secret = fake_kube.get("secrets", live_job["metadata"]["name"] + "-urls", live_job["metadata"]["namespace"])
    return {key: base64.b64decode(value).decode() for key, value in secret["data"].items()}


@pytest.mark.usefixtures("compute")
def test_a_retried_submit_applies_the_same_job(owner_api, src):
    kube_api_client = owner_api
    name = submit(kube_api_client, code=upload(kube_api_client, src))
    first = run_reconcile(name).manifests
    from jobs.reconcile.kubernetes import render

    assert render(Job.objects.select_related("workspace", "compute").get(name=name)) == first  # no URL in the template


@pytest.mark.usefixtures("compute")
def test_a_host_folder_is_not_shipped_to_a_cluster(owner_api, tmp_path):
    response = owner_api.post(f"{BASE}/jobs/", {"command": "ls", "compute": "azureml:k8s", "environment": {"image": "python:3.11"},
                                          "code": str(tmp_path)}, format="json")

    assert response.status_code == 400 and "upload it" in response.json()["error"]["message"]


# the fetch URL's reach and lifetime


@pytest.fixture
def snapshot(owner_api, workspace, src) -> Snapshot:
    reference = upload(owner_api, src)
    return Snapshot.objects.get(workspace=workspace, sha256=reference.rsplit("/", 1)[1])


def refused(response) -> str:
    assert response.status_code == 403, response.content
    assert response.json()["error"]["code"] == "FetchRefused"
    return response.json()["error"]["message"]


def test_the_url_answers_until_it_expires(client, snapshot, monkeypatch):
    url = delivery.fetch_url(snapshot, seconds=60)
    assert fetch(client, url).status_code == 200
    now = time.time()
    monkeypatch.setattr(delivery.time, "time", lambda: now + 61)

    assert "expired" in refused(fetch(client, url))


def test_a_tampered_token_is_refused(client, snapshot):
    issued = delivery.fetch_token(snapshot)
    tampered = issued[:-2] + ("AA" if not issued.endswith("AA") else "BB")

    assert "not valid" in refused(client.get(f"/api/v1/artifacts/fetch/{tampered}/"))


def test_a_token_rewritten_to_name_another_snapshot_or_workspace_is_refused(client, snapshot, owner_api, tmp_path):
    issued = delivery.fetch_token(snapshot)
    _, rest = issued.split(":", 1)
    claim = signing.loads(issued, salt=delivery.FETCH_SALT)
    for changed in ({**claim, "s": "0" * 64}, {**claim, "w": claim["w"] + 1}):
        forged = signing.dumps(changed, salt="another purpose")  # signed, but not for fetching: the salt differs
        assert "not valid" in refused(client.get(f"/api/v1/artifacts/fetch/{forged}/"))
        unsigned = signing.dumps(changed, salt=delivery.FETCH_SALT).split(":", 1)[0] + ":" + rest
        assert "not valid" in refused(client.get(f"/api/v1/artifacts/fetch/{unsigned}/"))


def test_a_valid_token_for_a_snapshot_of_another_workspace_names_nothing_here(client, snapshot, make_user):
    other = Workspace.objects.create(name="team-b")
    forged = signing.dumps({"w": other.pk, "s": snapshot.sha256, "e": int(time.time()) + 60}, salt=delivery.FETCH_SALT)

    assert "no longer stored" in refused(client.get(f"/api/v1/artifacts/fetch/{forged}/"))


def test_issuing_and_using_a_url_are_logged(client, snapshot, caplog):
    with caplog.at_level("INFO", logger="dockyard.artifacts"):
        url = delivery.fetch_url(snapshot, purpose="job greet")
        fetch(client, url)
    messages = [record.getMessage() for record in caplog.records if record.name == "dockyard.artifacts"]
    assert any("Issued a fetch URL" in message and "job greet" in message for message in messages)
    assert any(message.startswith(f"Fetch of snapshot {snapshot.sha256}") for message in messages)


def test_the_init_containers_script_fetches_and_unpacks_the_code_and_fails_on_a_refused_url(live_server, owner_api,
                                                                                             workspace, src, tmp_path):
    """The fake API server runs no containers: the init step's own shell lines are run here, against a live Dockyard."""
    import subprocess

    from assets.specs.pods import ARCHIVE, fetch_script

    snapshot = Snapshot.objects.get(sha256=upload(owner_api, src).rsplit("/", 1)[1])
    folder = tmp_path / "code"
    folder.mkdir()
    script = fetch_script(str(folder)).replace(ARCHIVE, str(tmp_path / "code.tar.gz"))  # not the host's /tmp
    url = live_server.url + urlsplit(delivery.fetch_url(snapshot, seconds=60)).path

    done = subprocess.run(["/bin/sh", "-c", script], env={"CODE_URL": url, "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"fetched 5 files into {folder}"
    assert (folder / "helpers" / "greet.py").read_text().startswith("def greeting")
    assert os.access(folder / "tool.sh", os.X_OK) and not (folder / "model.ckpt").exists()
    refused_url = live_server.url + "/api/v1/artifacts/fetch/forged:token:here/"
    failed = subprocess.run(["/bin/sh", "-c", script], env={"CODE_URL": refused_url, "PATH": "/usr/bin:/bin"},
                            capture_output=True, text=True, timeout=60)
    assert failed.returncode != 0  # the pod's init step fails, so the main container never starts without its code


@pytest.mark.django_db(transaction=True)
def test_under_asgi_the_archive_is_streamed_chunk_by_chunk(snapshot):
    from asgiref.sync import async_to_sync
    from django.test import AsyncClient

    async def fetched(path: str):
        response = await AsyncClient().get(path)
        return response, b"".join([chunk async for chunk in response.streaming_content])

    response, body = async_to_sync(fetched)(f"/api/v1/artifacts/fetch/{delivery.fetch_token(snapshot)}/")

    assert response.status_code == 200 and response.is_async
    assert "helpers/greet.py" in members(body)
