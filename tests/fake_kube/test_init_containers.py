"""Init containers, native sidecars and Secret volumes: validated as kube-apiserver 1.36 does, and run in the
kubelet's order (Secret volumes mounted first, init steps one by one, sidecars beside the main containers and stopped
after them)."""
import pytest
from kubernetes import client

from tests.fake_kube.helpers import job_manifest, status_of


@pytest.fixture
def core(kube_api):
    return client.CoreV1Api(kube_api)


@pytest.fixture
def batch(kube_api):
    return client.BatchV1Api(kube_api)


def with_steps(name: str, **pod_fields) -> dict:
    """A Job whose pod fetches (init), uploads (a sidecar) and reads the Secret `<name>-urls` from a volume."""
    job = job_manifest(name)
    pod = job["spec"]["template"]["spec"]
    mount = {"name": "urls", "mountPath": "/var/dockyard/urls", "readOnly": True}
    pod["initContainers"] = [
        {"name": "fetch", "image": "busybox:1.37.0", "command": ["sh", "-c", "cat /var/dockyard/urls/code"],
         "volumeMounts": [dict(mount)]},
        {"name": "upload", "image": "busybox:1.37.0", "restartPolicy": "Always", "command": ["sh", "-c", "sleep 1d"],
         "volumeMounts": [dict(mount)], "resources": {"requests": {"cpu": "1"}}},
    ]
    pod["volumes"] = [{"name": "urls", "secret": {"secretName": f"{name}-urls"}}]
    pod.update(pod_fields)
    return job


def secret(core, name: str, value: str) -> None:
    body = {"metadata": {"name": f"{name}-urls"}, "stringData": {"code": value}}
    try:
        core.create_namespaced_secret("default", body)
    except client.ApiException:
        core.replace_namespaced_secret(f"{name}-urls", "default", body)


def pod_of(core, job: str):
    return core.list_namespaced_pod("default", label_selector=f"batch.kubernetes.io/job-name={job}").items[0]


def states(statuses) -> dict:
    return {s.name: next(key for key in ("waiting", "running", "terminated") if getattr(s.state, key)) for s in statuses}


# --- validation ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("change", "field", "reason"), [
    (lambda pod: pod["initContainers"][1].update(restartPolicy="OnFailure"), "initContainers[1].restartPolicy",
     "FieldValueNotSupported"),
    (lambda pod: pod["containers"][0].update(restartPolicy="Always"), "containers[0].restartPolicy", "FieldValueForbidden"),
    (lambda pod: pod["initContainers"][0].update(readinessProbe={"exec": {"command": ["true"]}}),
     "initContainers[0].readinessProbe", "FieldValueForbidden"),
    (lambda pod: pod["volumes"][0]["secret"].pop("secretName"), "volumes[0].secret.secretName", "FieldValueRequired"),
    (lambda pod: pod["volumes"][0]["secret"].update(defaultMode=0o1000), "volumes[0].secret.defaultMode",
     "FieldValueInvalid"),
    (lambda pod: pod["initContainers"][0]["volumeMounts"][0].update(subPath="../up"),
     "initContainers[0].volumeMounts[0].subPath", "FieldValueInvalid"),
    (lambda pod: pod["initContainers"][0]["volumeMounts"].append({"name": "urls", "mountPath": "/var/dockyard/urls"}),
     "initContainers[0].volumeMounts[1].mountPath", "FieldValueInvalid"),
], ids=["init-restart-policy", "main-restart-policy", "init-probe", "secret-name", "default-mode", "sub-path",
        "duplicate-mount"])
def test_the_pod_fields_are_validated_as_the_api_server_does(batch, change, field, reason):
    job = with_steps("bad")
    change(job["spec"]["template"]["spec"])
    code, body = status_of(batch.create_namespaced_job, "default", job)
    assert code == 422
    assert [(cause["field"], cause["reason"]) for cause in body["details"]["causes"]] == [
        (f"spec.template.spec.{field}", reason)]


def test_a_sidecar_may_carry_a_probe(batch):
    job = with_steps("probed")
    job["spec"]["template"]["spec"]["initContainers"][1]["startupProbe"] = {"exec": {"command": ["true"]}}
    batch.create_namespaced_job("default", job)


# --- the kubelet's order -------------------------------------------------------------------------------

def test_a_pod_waits_for_its_secret_volume_then_runs_its_steps_in_order(fake_kube, core, batch):
    fake_kube.plan_pods(run_seconds=5)
    batch.create_namespaced_job("default", with_steps("train"))
    fake_kube.advance(5)
    pod = pod_of(core, "train")
    assert pod.status.phase == "Pending" and states(pod.status.init_container_statuses) == {"fetch": "waiting",
                                                                                            "upload": "waiting"}
    assert fake_kube.events("default", pod.metadata.name, "FailedMount")[0]["message"] == (
        'MountVolume.SetUp failed for volume "urls" : secret "train-urls" not found')

    secret(core, "train", "https://first")
    fake_kube.advance(2)  # the kubelet's next mount attempt
    pod = pod_of(core, "train")
    assert pod.status.phase == "Running"
    assert states(pod.status.init_container_statuses) == {"fetch": "terminated", "upload": "running"}
    assert fake_kube.secrets_read("default", pod.metadata.name, "fetch") == {"/var/dockyard/urls/code": "https://first"}
    assert core.read_namespaced_pod_log(pod.metadata.name, "default", container="fetch", _preload_content=False).data \
        .decode().startswith("fake-kube: no container runs here; this pod would run: sh -c 'cat /var/dockyard/urls/code'")

    secret(core, "train", "https://renewed")  # a mounted Secret is refreshed: the sidecar reads the new value
    fake_kube.advance(5)
    pod = pod_of(core, "train")
    assert pod.status.phase == "Succeeded"
    assert states(pod.status.init_container_statuses) == {"fetch": "terminated", "upload": "terminated"}
    assert fake_kube.secrets_read("default", pod.metadata.name, "upload") == {"/var/dockyard/urls/code": "https://renewed"}
    assert fake_kube.secrets_read("default", pod.metadata.name, "fetch") == {"/var/dockyard/urls/code": "https://first"}


def test_a_failing_init_step_fails_the_pod_and_the_main_container_never_starts(fake_kube, core, batch):
    fake_kube.plan_pods(run_seconds=5, init_exit_codes={"fetch": 1})
    secret(core, "broken", "https://expired")
    batch.create_namespaced_job("default", with_steps("broken"))
    fake_kube.advance(1)
    pod = pod_of(core, "broken")
    assert pod.status.phase == "Failed"
    assert pod.status.init_container_statuses[0].state.terminated.exit_code == 1
    assert states(pod.status.init_container_statuses)["upload"] == "waiting"
    assert pod.status.container_statuses[0].state.waiting.reason == "PodInitializing"
    fake_kube.advance(1)
    job = batch.read_namespaced_job("broken", "default")
    assert any(c.type == "Failed" and c.status == "True" for c in job.status.conditions)


def test_the_scheduler_counts_a_sidecars_requests_with_the_main_containers(fake_kube, core, batch):
    job = with_steps("full", nodeSelector={"kubernetes.io/hostname": "node-0"})
    job["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "7500m"}}
    secret(core, "full", "x")
    batch.create_namespaced_job("default", job)  # 7.5 cpu + the sidecar's 1 cpu: more than node-0's 8
    fake_kube.advance(1)
    assert pod_of(core, "full").status.phase == "Pending" and not pod_of(core, "full").spec.node_name


def test_indexed_pods_give_their_init_containers_the_completion_index(fake_kube, core, batch):
    job = with_steps("ranks")
    job["spec"].update(completionMode="Indexed", completions=2, parallelism=2)
    batch.create_namespaced_job("default", job)
    pod = pod_of(core, "ranks")
    assert [var.name for var in pod.spec.init_containers[1].env] == ["JOB_COMPLETION_INDEX"]
