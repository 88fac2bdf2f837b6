"""What a Kubernetes job's pod gets and gives back: code and inputs fetched by init containers, ./outputs uploaded by
a native sidecar, the signed URLs they use kept in one Secret per job (owned by its Job, renewed at half-life), and
the fake cluster running those steps in the kubelet's order (its Secret volumes mounted first)."""
import base64
import time

import kubernetes_validate
import pytest
from django.core import signing

from assets import delivery
from compute.models import ComputeTarget
from jobs import reconcile
from jobs.manifests import input_container_name, kube_job_name
from jobs.models import Job
from jobs.tests.test_kubernetes import (  # noqa: F401
    BASE,
    GROUP,
    attach,
    fresh_clients,
    load,
    observe,
    pods_of,
    run_reconcile,
    submit,
)
from jobs.tests.test_uploaded_code import fetch, upload

KUBERNETES = "1.36"
pytestmark = pytest.mark.usefixtures("k8s")
DATA_URL = "https://data.example.org/sets/iris.csv?sv=2024&sig=secret"


def kube_name(name: str) -> str:
    return kube_job_name("team-a", name)


def secret_of(fake, name: str) -> dict | None:
    return fake.get("secrets", kube_name(name) + "-urls", "default")


def urls_of(fake, name: str) -> dict[str, str]:
    return {key: base64.b64decode(value).decode() for key, value in secret_of(fake, name)["data"].items()}


def pod_spec(fake, name: str) -> dict:
    return fake.get("jobs", kube_name(name), "default", group=GROUP)["spec"]["template"]["spec"]


@pytest.fixture
def k8s(owner_api, workspace, fake_kube) -> ComputeTarget:
    return attach(owner_api, fake_kube)


@pytest.fixture
def api(owner_api):
    return owner_api


@pytest.fixture
def src(tmp_path):
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "main.py").write_text("print('hello')\n")
    return folder


@pytest.fixture
def clock(monkeypatch):
    """Dockyard's clock (time.time), moved by hand: URL expiry and renewal read it."""
    now = [time.time()]
    monkeypatch.setattr(time, "time", lambda: now[0])
    return now


@pytest.fixture
def with_inputs(api, src):
    """A job with code, a snapshot input (ro_mount) and a URL input (download), resolved as "io" records them."""
    code = upload(api, src)
    data = upload(api, src)  # the same folder serves as the data snapshot
    name = submit(api, code=code, command="python main.py --data ${{inputs.training_data}} --lookup ${{inputs.lookup}}",
                  inputs={"training_data": {"type": "uri_folder", "path": data},
                          "lookup": {"type": "uri_file", "path": DATA_URL, "mode": "download"}})
    Job.objects.filter(name=name).update(resolved_inputs={
        "training_data": {"snapshot": data.rsplit("/", 1)[1], "file": None},
        "lookup": {"url": DATA_URL, "file": "iris.csv"}})
    return name


def test_the_pod_fetches_code_and_inputs_from_its_secret_then_runs_and_uploads(fake_kube, k8s, with_inputs,
                                                                               client, settings):
    settings.DOCKYARD_EXTERNAL_URL = "https://dockyard.example.org"
    name = with_inputs
    fake_kube.plan_pods(run_seconds=5, logs={"fetch-code": "fetched 5 files into /var/dockyard/code"})

    job = run_reconcile(name)

    assert job.status == "Queued", job.status_reason
    spec = pod_spec(fake_kube, name)
    steps = spec["initContainers"]
    assert [step["name"] for step in steps] == ["fetch-code", "input-0-lookup", "input-1-training-data", "upload-outputs"]
    assert [step.get("restartPolicy") for step in steps] == [None, None, None, "Always"]  # the last: a native sidecar
    assert spec["terminationGracePeriodSeconds"] == 120
    main = spec["containers"][0]
    assert main["workingDir"] == "/var/dockyard/code"
    assert main["command"][2] == ("python main.py --data /var/dockyard/inputs/training_data "
                                  "--lookup /var/dockyard/inputs/lookup/iris.csv")
    assert {"name": "inputs", "mountPath": "/var/dockyard/inputs/training_data", "subPath": "training_data",
            "readOnly": True} in main["volumeMounts"]
    assert {"name": "inputs", "mountPath": "/var/dockyard/inputs/lookup", "subPath": "lookup",
            "readOnly": False} in main["volumeMounts"]
    assert {"name": "urls", "secret": {"secretName": kube_name(name) + "-urls", "defaultMode": 0o644}} in spec["volumes"]
    assert steps[1]["env"] == [{"name": "INPUT_URL", "value": DATA_URL}]  # the tenant's own URL, not renewed
    assert "sig=secret" not in steps[1]["command"][2]  # its query (a credential) stays out of the log
    for manifest in job.manifests:
        assert kubernetes_validate.validate(manifest, KUBERNETES, strict=True) == KUBERNETES

    secret = secret_of(fake_kube, name)
    live_uid = fake_kube.get("jobs", kube_name(name), "default", group=GROUP)["metadata"]["uid"]
    assert secret["metadata"]["ownerReferences"] == [{"apiVersion": "batch/v1", "kind": "Job", "name": kube_name(name),
                                                      "uid": live_uid}]
    assert secret["metadata"]["labels"]["dockyard.dev/job"] == kube_name(name)
    urls = urls_of(fake_kube, name)
    assert sorted(urls) == ["code", "input-training_data", "outputs"]
    assert urls["outputs"].startswith("https://dockyard.example.org/api/v1/artifacts/outputs/")
    assert fetch(client, urls["input-training_data"]).status_code == 200

    fake_kube.advance(1)  # the pod starts: its init steps run in order, each reading the Secret as it is now
    pod = pods_of(fake_kube, name)[0]
    statuses = {s["name"]: s["state"] for s in pod["status"]["initContainerStatuses"]}
    assert statuses["fetch-code"]["terminated"]["exitCode"] == 0 and "running" in statuses["upload-outputs"]
    assert fake_kube.secrets_read("default", pod["metadata"]["name"], "fetch-code") == {
        f"/var/dockyard/urls/{key}": value for key, value in urls.items()}
    observe(k8s)
    assert load(name).status == "Running"

    fake_kube.advance(5)  # the main container ends: the sidecar is sent SIGTERM and uploads
    pod = pods_of(fake_kube, name)[0]
    assert pod["status"]["phase"] == "Succeeded"
    sidecar = next(s for s in pod["status"]["initContainerStatuses"] if s["name"] == "upload-outputs")
    assert sidecar["state"]["terminated"]["exitCode"] == 0
    read = fake_kube.secrets_read("default", pod["metadata"]["name"], "upload-outputs")
    assert read["/var/dockyard/urls/outputs"] == urls["outputs"]
    observe(k8s)
    assert load(name).status == "Completed"


def test_an_oom_killed_main_container_still_has_its_outputs_uploaded(fake_kube, k8s, api):
    fake_kube.plan_pods(run_seconds=3, exit_code=137, reason="OOMKilled")
    name = submit(api)
    run_reconcile(name)
    fake_kube.advance(4)
    pod = pods_of(fake_kube, name)[0]
    assert pod["status"]["phase"] == "Failed"
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] == "OOMKilled"
    sidecar = next(s for s in pod["status"]["initContainerStatuses"] if s["name"] == "upload-outputs")
    assert "terminated" in sidecar["state"]  # sent SIGTERM once the main container was killed: it uploaded
    assert fake_kube.secrets_read("default", pod["metadata"]["name"], "upload-outputs")["/var/dockyard/urls/outputs"]
    observe(k8s)
    assert load(name).status == "Failed"


def test_a_job_without_code_still_runs_in_an_emptydir_with_outputs(fake_kube, k8s, api):
    name = submit(api, command="echo hi > outputs/hello.txt")
    run_reconcile(name)
    spec = pod_spec(fake_kube, name)
    assert [step["name"] for step in spec["initContainers"]] == ["make-outputs", "upload-outputs"]
    assert "mkdir -p /var/dockyard/code/outputs" in spec["initContainers"][0]["command"][2]
    assert spec["containers"][0]["workingDir"] == "/var/dockyard/code"
    assert sorted(urls_of(fake_kube, name)) == ["outputs"]


def test_declared_folder_outputs_exist_before_the_command_writes_into_them(fake_kube, k8s, api):
    name = submit(api, command="echo hi > ${{outputs.greeting}}/hello.txt",
                  outputs={"greeting": {"type": "uri_folder"}, "score": {"type": "uri_file"}})
    run_reconcile(name)
    make = pod_spec(fake_kube, name)["initContainers"][0]["command"][2]
    assert make.startswith("mkdir -p /var/dockyard/code/outputs /var/dockyard/code/outputs/greeting && ")
    assert "outputs/score" not in make  # a uri_file output names a file the command writes, not a folder


def test_a_distributed_jobs_sidecar_knows_its_rank(fake_kube, k8s, api):
    name = submit(api, resources={"instance_count": 2}, distribution={"type": "pytorch", "process_count_per_instance": 1})
    run_reconcile(name)
    sidecar = pod_spec(fake_kube, name)["initContainers"][-1]
    assert sidecar["env"] == [{"name": "RANK", "valueFrom": {"fieldRef": {
        "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']", "apiVersion": "v1"}}}]
    assert '"$(cat /var/dockyard/urls/outputs)$RANK/"' in sidecar["command"][2]
    fake_kube.advance(1)
    assert sorted(pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
                  for pod in pods_of(fake_kube, name)) == ["0", "1"]


@pytest.mark.parametrize(("index", "name", "expected"), [
    (0, "training_data", "input-0-training-data"), (3, "My_Input__2", "input-3-my-input-2"), (1, "_x_", "input-1-x"),
    (12, "a" * 80, "input-12-" + "a" * 54),
])
def test_input_steps_are_named_by_dns_labels_whatever_the_input_is_called(index, name, expected):
    assert input_container_name(index, name) == expected


# --- the URL Secret: renewal, lifetime, crash, deletion --------------------------------------------

def test_the_urls_are_renewed_at_half_life_and_not_before(fake_kube, k8s, api, src, settings, clock):
    settings.DOCKYARD_ARTIFACT_URL_SECONDS = 600
    fake_kube.plan_pods(run_seconds=None)
    name = submit(api, code=upload(api, src))
    run_reconcile(name)
    first = urls_of(fake_kube, name)
    writes = lambda: [r for r in fake_kube.requests.writes() if r.resource == "secrets"]  # noqa: E731
    assert len(writes()) == 1

    clock[0] += 299
    observe(k8s)
    assert len(writes()) == 1 and urls_of(fake_kube, name) == first  # more than half of the lifetime is left

    clock[0] += 2
    observe(k8s)
    renewed = urls_of(fake_kube, name)
    assert len(writes()) == 2 and renewed["code"] != first["code"] and renewed["outputs"] != first["outputs"]
    expires = int(secret_of(fake_kube, name)["metadata"]["annotations"]["dockyard.dev/url-expires"])
    assert expires == int(clock[0]) + 600 and load(name).runner["urls_expire"] == expires
    observe(k8s)
    assert len(writes()) == 2


def test_a_job_queued_longer_than_the_url_lifetime_still_fetches(fake_kube, k8s, api, src, client, settings, clock):
    settings.DOCKYARD_ARTIFACT_URL_SECONDS = 60
    name = submit(api, code=upload(api, src), resources={"instance_type": "defaultinstancetype"})
    for node in ("node-0", "node-1", "gpu-node-0"):  # no node takes it: the job waits in the queue
        fake_kube.taint_node(node, "busy", "yes", "NoSchedule")
    run_reconcile(name)
    issued = urls_of(fake_kube, name)["code"]
    for _ in range(10):  # ten minutes in the queue, the loop looking every 20 s
        clock[0] += 20
        observe(k8s)
    assert load(name).status == "Queued"
    assert fetch(client, issued).status_code == 403  # the URL of the submit has long expired

    fake_kube.untaint_node("node-0", "busy")
    fake_kube.advance(1)
    pod = pods_of(fake_kube, name)[0]["metadata"]["name"]
    read = fake_kube.secrets_read("default", pod, "fetch-code")["/var/dockyard/urls/code"]
    assert read != issued and fetch(client, read).status_code == 200  # what the init step read when it ran works


def test_renewal_stops_once_the_job_has_ended(fake_kube, k8s, api, settings, clock):
    settings.DOCKYARD_ARTIFACT_URL_SECONDS = 60
    fake_kube.plan_pods(run_seconds=1)
    name = submit(api)
    run_reconcile(name)
    fake_kube.advance(2)
    observe(k8s)
    assert load(name).status == "Completed"
    clock[0] += 3600
    observe(k8s)
    assert len([r for r in fake_kube.requests.writes() if r.resource == "secrets"]) == 1


def test_a_crash_between_the_job_and_its_secret_converges(fake_kube, k8s, api, src):
    from controlplane.kube import client as kube

    fake_kube.plan_pods(run_seconds=2)
    name = submit(api, code=upload(api, src))
    fake_kube.faults.add(kinds="500", verb="patch", resource="secrets", times=1)
    with pytest.raises(kube.KubeTransient):  # as a worker that died after applying the Job
        run_reconcile(name)
    assert fake_kube.get("jobs", kube_name(name), "default", group=GROUP) is not None and secret_of(fake_kube, name) is None
    assert not load(name).runner.get("submitted")

    fake_kube.advance(5)  # the pod waits for its Secret volume, as a kubelet does
    pod = pods_of(fake_kube, name)[0]
    assert pod["status"]["phase"] == "Pending" and "initContainerStatuses" in pod["status"]
    mounts = fake_kube.events("default", pod["metadata"]["name"], "FailedMount")
    assert mounts and mounts[0]["message"] == (f'MountVolume.SetUp failed for volume "urls" : secret '
                                               f'"{kube_name(name)}-urls" not found')

    assert run_reconcile(name).status == "Queued"  # the task's retry: the same Job, then the Secret
    assert len(fake_kube.list("jobs", "default", group=GROUP)) == 1 and secret_of(fake_kube, name) is not None
    fake_kube.advance(5)
    observe(k8s)
    assert load(name).status == "Completed"


def test_the_secret_goes_with_the_job_on_cancel(fake_kube, k8s, api):
    fake_kube.plan_pods(run_seconds=None)
    name = submit(api)
    run_reconcile(name)
    fake_kube.advance(1)
    assert api.post(f"{BASE}/jobs/{name}/cancel").status_code == 202
    reconcile.reconcile_job(load(name))
    assert secret_of(fake_kube, name) is not None  # the pods' last uploads still read it while they stop
    fake_kube.advance(1)
    assert run_reconcile(name).status == "Canceled"
    assert secret_of(fake_kube, name) is None
    deletes = [r for r in fake_kube.requests.find(verb="delete") if r.resource == "secrets"]
    assert deletes  # deleted by the stop path once the Job was gone (the garbage collector would have too)


def test_the_garbage_collector_removes_the_secret_when_the_job_goes_another_way(fake_kube, k8s, api):
    fake_kube.plan_pods(run_seconds=None)
    name = submit(api)
    run_reconcile(name)
    fake_kube.delete("jobs", kube_name(name), "default", group=GROUP)  # an admin's kubectl delete job
    fake_kube.advance(1)
    assert secret_of(fake_kube, name) is None and not [r for r in fake_kube.requests.find(verb="delete")
                                                       if r.resource == "secrets"]


def test_a_job_whose_code_snapshot_is_gone_fails_before_anything_is_applied(fake_kube, k8s, api, src):
    name = submit(api, code=upload(api, src))
    Job.objects.filter(name=name).update(resolved_inputs={"data": {"snapshot": "0" * 64, "file": None}})
    job = run_reconcile(name)
    assert job.status == "Failed" and "Input 'data'" in job.status_reason
    assert fake_kube.get("jobs", kube_name(name), "default", group=GROUP) is None


def test_the_upload_token_names_one_job_and_its_own_purpose(fake_kube, k8s, api):
    name = submit(api)
    run_reconcile(name)
    token = urls_of(fake_kube, name)["outputs"].rstrip("/").rsplit("/", 1)[1]
    job = load(name)
    claim = signing.loads(token, salt=delivery.UPLOAD_SALT)
    assert (claim["w"], claim["j"]) == (job.workspace_id, job.pk)
    with pytest.raises(signing.BadSignature):
        signing.loads(token, salt=delivery.FETCH_SALT)  # not a fetch token
