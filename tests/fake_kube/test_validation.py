"""The fake rejects what kube-apiserver rejects, and accepts manifests the official schemas call valid."""
import kubernetes_validate
import pytest
from kubernetes import client
from kubernetes.dynamic import DynamicClient

from tests.fake_kube.helpers import deployment_manifest, job_manifest, status_of, valid_manifests

GPU_LIMIT_ONLY = {"limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": 1},
                  "requests": {"cpu": "1", "memory": "4Gi"}}


@pytest.fixture
def batch(kube_api):
    return client.BatchV1Api(kube_api)


@pytest.fixture
def core(kube_api):
    return client.CoreV1Api(kube_api)


def _invalid(code, body, field, message=None):
    assert code == 422 and body["reason"] == "Invalid", body
    fields = [c["field"] for c in body["details"]["causes"]]
    assert field in fields, fields
    if message:
        assert message in body["message"], body["message"]


@pytest.mark.parametrize("name", ["Train", "train_job", "-train", "train.", "a" * 254])
def test_object_names_must_be_lowercase_rfc1123_subdomains(batch, name):
    code, body = status_of(batch.create_namespaced_job, "default", job_manifest(name))
    _invalid(code, body, "metadata.name")
    assert body["details"]["kind"] == "Job" and body["details"]["group"] == "batch"
    assert body["message"].startswith(f'Job.batch "{name}" is invalid: ')


def test_name_error_message_matches_the_real_server(batch):
    code, body = status_of(batch.create_namespaced_job, "default", job_manifest("Train"))
    assert body["message"] == (
        'Job.batch "Train" is invalid: metadata.name: Invalid value: "Train": a lowercase RFC 1123 subdomain must '
        "consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'example.com', regex used for validation is "
        r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


def test_namespaces_and_services_need_dns_labels(core):
    code, body = status_of(core.create_namespace, {"metadata": {"name": "team.a"}})
    _invalid(code, body, "metadata.name", "RFC 1123 label")
    service = {"metadata": {"name": "1svc"}, "spec": {"ports": [{"port": 80}]}}
    code, body = status_of(core.create_namespaced_service, "default", service)
    _invalid(code, body, "metadata.name", "DNS-1035 label")


def test_label_keys_and_values_are_checked(core):
    code, body = status_of(core.create_namespaced_config_map, "default",
                           {"metadata": {"name": "x", "labels": {"bad key": "ok"}}})
    _invalid(code, body, "metadata.labels")
    code, body = status_of(core.create_namespaced_config_map, "default",
                           {"metadata": {"name": "x", "labels": {"ok": "v" * 64}}})
    _invalid(code, body, "metadata.labels", "must be no more than 63 characters")


@pytest.mark.parametrize("policy", ["Always", None])
def test_job_restart_policy_must_be_never_or_on_failure(batch, policy):
    job = job_manifest("train", restart=policy)
    if policy is None:  # the pod template defaults it to Always
        del job["spec"]["template"]["spec"]["restartPolicy"]
    code, body = status_of(batch.create_namespaced_job, "default", job)
    _invalid(code, body, "spec.template.spec.restartPolicy")
    assert body["details"]["causes"][0] == {
        "reason": "FieldValueNotSupported", "field": "spec.template.spec.restartPolicy",
        "message": 'Unsupported value: "Always": supported values: "OnFailure", "Never"'}


def test_gpu_request_must_equal_limit(batch):
    resources = {"limits": {"nvidia.com/gpu": 1}, "requests": {"nvidia.com/gpu": 2}}
    code, body = status_of(batch.create_namespaced_job, "default", job_manifest("gpu", resources=resources))
    _invalid(code, body, "spec.template.spec.containers[0].resources.requests",
             'Invalid value: "2": must be equal to nvidia.com/gpu limit of 1')


def test_gpu_request_without_limit_and_fractional_gpus_are_rejected(batch):
    code, body = status_of(batch.create_namespaced_job, "default",
                           job_manifest("gpu", resources={"requests": {"nvidia.com/gpu": 1}}))
    _invalid(code, body, "spec.template.spec.containers[0].resources.limits",
             "Limit must be set for non overcommitable resources")
    code, body = status_of(batch.create_namespaced_job, "default",
                           job_manifest("gpu", resources={"limits": {"nvidia.com/gpu": "500m"}}))
    _invalid(code, body, "spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]", "must be an integer")


def test_gpu_under_limits_only_is_copied_to_the_pod_requests(fake_kube, batch, core):
    batch.create_namespaced_job("default", job_manifest("gpu", resources=GPU_LIMIT_ONLY))
    pod = core.list_namespaced_pod("default", label_selector="job-name=gpu").items[0]
    requests = pod.spec.containers[0].resources.requests
    assert requests == {"cpu": "1", "memory": "4Gi", "nvidia.com/gpu": "1"}


def test_cpu_request_above_limit_is_rejected(batch):
    resources = {"limits": {"cpu": "1"}, "requests": {"cpu": "1500m"}}
    code, body = status_of(batch.create_namespaced_job, "default", job_manifest("cpu", resources=resources))
    _invalid(code, body, "spec.template.spec.containers[0].resources.requests",
             "must be less than or equal to cpu limit of 1")


@pytest.mark.parametrize("bad", ["abc", "1Kb", "1..5", ""])
def test_unparseable_quantities_are_400_like_the_decoder(batch, bad):
    code, body = status_of(batch.create_namespaced_job, "default",
                           job_manifest("q", resources={"limits": {"cpu": bad or " "}}))
    assert code == 400 and body["reason"] == "BadRequest"
    assert body["message"].startswith('Job in version "v1" cannot be handled as a Job: quantities must match')


def test_quantities_are_stored_canonically(batch):
    resources = {"limits": {"cpu": "1000m", "memory": "1024Mi"}, "requests": {"cpu": "0.5", "memory": "1Gi"}}
    job = batch.create_namespaced_job("default", job_manifest("canon", resources=resources, suspend=True))
    stored = job.spec.template.spec.containers[0].resources
    assert stored.limits == {"cpu": "1", "memory": "1Gi"} and stored.requests == {"cpu": "500m", "memory": "1Gi"}


def test_required_basics_of_jobs_deployments_and_services(kube_api, batch, core):
    job = job_manifest("empty")
    job["spec"]["template"]["spec"]["containers"] = []
    code, body = status_of(batch.create_namespaced_job, "default", job)
    _invalid(code, body, "spec.template.spec.containers", "Required value")
    job = job_manifest("noimage")
    del job["spec"]["template"]["spec"]["containers"][0]["image"]
    code, body = status_of(batch.create_namespaced_job, "default", job)
    _invalid(code, body, "spec.template.spec.containers[0].image")
    apps = client.AppsV1Api(kube_api)
    deploy = deployment_manifest("web")
    deploy["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    code, body = status_of(apps.create_namespaced_deployment, "default", deploy)
    _invalid(code, body, "spec.template.metadata.labels", "`selector` does not match template `labels`")
    deploy = deployment_manifest("web")
    deploy["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    code, body = status_of(apps.create_namespaced_deployment, "default", deploy)
    _invalid(code, body, "spec.template.spec.restartPolicy")
    service = {"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}, {"port": 81}]}}
    code, body = status_of(core.create_namespaced_service, "default", service)
    _invalid(code, body, "spec.ports[0].name")


def test_job_template_is_immutable(batch):
    batch.create_namespaced_job("default", job_manifest("imm", suspend=True))
    code, body = status_of(batch.patch_namespaced_job, "imm", "default",
                           {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "busybox:2"}]}}}})
    _invalid(code, body, "spec.template", "field is immutable")


def test_pod_spec_updates_are_forbidden(fake_kube, core):
    fake_kube.advance(1)
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    core.create_namespaced_pod("default", pod)
    code, body = status_of(core.patch_namespaced_pod, "p", "default", {"spec": {"restartPolicy": "Never"}})
    _invalid(code, body, "spec", "pod updates may not change fields")
    core.patch_namespaced_pod("p", "default", {"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}})


def test_unknown_fields_warn_by_default_and_fail_when_strict(kube_api, batch):
    job = job_manifest("extra", suspend=True)
    job["spec"]["bogus"] = 1
    response = batch.create_namespaced_job_with_http_info("default", job)
    assert response[2]["Warning"] == '299 - "unknown field \\"spec.bogus\\""'
    job["metadata"]["name"] = "strict"
    code, body = status_of(batch.create_namespaced_job, "default", job, field_validation="Strict")
    assert code == 400 and 'unknown field "spec.bogus"' in body["message"]


def test_wrong_types_are_400(batch):
    job = job_manifest("types")
    job["spec"]["backoffLimit"] = "zero"
    code, body = status_of(batch.create_namespaced_job, "default", job)
    assert code == 400 and "cannot be handled as a Job" in body["message"]


# --- the fake must not reject what the real server accepts ----------------------------------

def test_the_official_schemas_cover_recent_versions():
    versions = kubernetes_validate.utils.all_versions()
    assert "1.36.0" in versions or any(v.startswith("1.36") for v in versions), versions


@pytest.mark.parametrize("manifest", valid_manifests(), ids=lambda m: m["kind"])
def test_valid_manifests_are_accepted(kube_dynamic, manifest):
    kubernetes_validate.validate(manifest, "1.36", strict=True)
    resource = kube_dynamic.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
    created = resource.create(body=manifest, namespace="default")
    assert created.metadata.uid
    assert isinstance(kube_dynamic, DynamicClient)


INDEX_ENV = {"name": "RANK", "valueFrom": {"fieldRef": {
    "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}


@pytest.mark.parametrize("env", [
    INDEX_ENV,
    {"name": "NODE", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}},
    {"name": "INDEX", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}}},
    {"name": "my.setting-1", "value": "x"},  # relaxed names (GA in 1.34)
])
def test_env_sources_the_real_server_accepts(batch, env):
    job = job_manifest("env-ok", completionMode="Indexed", completions=2, parallelism=2)
    job["spec"]["template"]["spec"]["containers"][0]["env"] = [env]
    kubernetes_validate.validate(job, "1.36", strict=True)
    created = batch.create_namespaced_job("default", job)
    assert created.spec.template.spec.containers[0].env[0].name == env["name"]
    if "valueFrom" in env:
        assert created.spec.template.spec.containers[0].env[0].value_from.field_ref.api_version == "v1"


@pytest.mark.parametrize("env, field, words", [
    ({"name": "RANK", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels"}}},
     "spec.template.spec.containers[0].env[0].valueFrom.fieldRef.fieldPath", 'Unsupported value: "metadata.labels"'),
    ({"name": "RANK", "valueFrom": {"fieldRef": {"fieldPath": "status.phase"}}},
     "spec.template.spec.containers[0].env[0].valueFrom.fieldRef.fieldPath", 'Unsupported value: "status.phase"'),
    ({"name": "RANK", "valueFrom": {"fieldRef": {"fieldPath": "spec.hostname"}}},
     "spec.template.spec.containers[0].env[0].valueFrom.fieldRef.fieldPath", "field label not supported: spec.hostname"),
    ({"name": "RANK", "valueFrom": {"fieldRef": {"fieldPath": "spec.containers['main']"}}},
     "spec.template.spec.containers[0].env[0].valueFrom.fieldRef.fieldPath", "does not support subscript"),
    ({"name": "RANK", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['bad key']"}}},
     "spec.template.spec.containers[0].env[0].valueFrom.fieldRef", "must consist of alphanumeric characters"),
    ({"name": "RANK", "value": "0", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
     "spec.template.spec.containers[0].env[0].valueFrom", "may not be specified when `value` is not empty"),
    ({"name": "RANK", "valueFrom": {}},
     "spec.template.spec.containers[0].env[0].valueFrom", "must specify one of"),
    ({"name": "A=B", "value": "1"}, "spec.template.spec.containers[0].env[0].name", "other than '='"),
])
def test_env_sources_the_real_server_refuses(batch, env, field, words):
    job = job_manifest("env-bad")
    job["spec"]["template"]["spec"]["containers"][0]["env"] = [env]
    code, body = status_of(batch.create_namespaced_job, "default", job)
    _invalid(code, body, field, words)


def test_indexed_jobs_need_dns_label_hostnames_and_bounded_parallelism(batch):
    name = "j" * 61
    job = job_manifest(name, completionMode="Indexed", completions=11, parallelism=1)
    code, body = status_of(batch.create_namespaced_job, "default", job)
    _invalid(code, body, "metadata.name", f"will not able to create pod with invalid DNS label: {name}-10")
    ok = job_manifest(name, completionMode="Indexed", completions=10, parallelism=1)
    assert batch.create_namespaced_job("default", ok).metadata.name == name  # <name>-9 is 63 characters
    wide = job_manifest("wide", completionMode="Indexed", completions=100_001, parallelism=100_001)
    code, body = status_of(batch.create_namespaced_job, "default", wide)
    _invalid(code, body, "spec.parallelism", "must be less than or equal to 100000 when completion mode is Indexed")
