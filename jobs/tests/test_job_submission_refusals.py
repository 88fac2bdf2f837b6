"""A job body that cannot run as written is a 400 naming the field, and nothing is written or enqueued."""
import pytest

from compute.models import ComputeTarget
from compute.tests.factories import create_compute
from controlplane.reconciling import ProvisioningState
from jobs.tests.support import IMAGE, URL, counts
from tests.support import assert_error
from workspaces.services import workspace_create

pytestmark = pytest.mark.usefixtures("local_compute")  # off by default: enabled as staff would


# bad input: 400 naming the field, and nothing is written


@pytest.fixture
def computes(workspace, owner, k8s):
    for compute_type in ("databricks", "amlcompute", "virtualmachine", "computeinstance", "hdinsight"):
        create_compute(workspace, owner, compute_type)
    going = create_compute(workspace, owner, "amlcompute", name="going-away")
    ComputeTarget.objects.filter(pk=going.pk).update(provisioning_state=ProvisioningState.DELETING)
    bob_ws = workspace_create(user=owner, name="team-b")
    create_compute(bob_ws, owner, "kubernetes", name="theirs")


def bad(label: str, target: str, code: str = "InvalidJob", settings: dict | None = None, **fields):
    """A body: a valid local job with fields replaced (None removes one)."""
    data = {key: value for key, value in {"command": "echo hi", "compute": "local", **fields}.items() if value is not None}
    return pytest.param(data, code, target, settings or {}, id=label)


K8S = {"compute": "azureml:k8s", "environment": {"image": IMAGE}}
SERVERLESS = {"compute": None, "environment": {"image": IMAGE}}
VM = {"compute": "azureml:vm"}

BAD_BODIES = [
    # where it runs
    bad("unknown-compute", "compute", compute="azureml:nope"),
    bad("unknown-compute-bare-name", "compute", compute="nope"),
    bad("compute-of-another-workspace", "compute", **{**K8S, "compute": "azureml:theirs"}),
    bad("compute-being-deleted", "compute", **{**K8S, "compute": "going-away"}),
    bad("databricks-cannot-run-command-jobs", "compute", **{**K8S, "compute": "azureml:dbx"}),
    bad("hdinsight-cannot-run-command-jobs", "compute", **{**K8S, "compute": "hdi"}),
    bad("compute-cluster-runs-its-own-size", "resources.instance_type", **{**K8S, "compute": "azureml:cpu-cluster"},
        resources={"instance_type": "Standard_NC6s_v3"}),
    bad("compute-cluster-never-has-that-many-nodes", "resources.instance_count",
        **{**K8S, "compute": "azureml:cpu-cluster"}, resources={"instance_count": 5}),
    # attached VMs: one process (or one docker run) over SSH
    bad("vm-instance-count-above-1", "resources.instance_count", **VM, resources={"instance_count": 2}),
    bad("vm-distribution", "distribution", **VM, distribution={"type": "pytorch"}),
    bad("vm-venv", "environment.venv", **VM, environment={"venv": "/opt/venv"}),
    bad("vm-conda-file", "environment.conda_file", **VM,
        environment={"image": IMAGE, "conda_file": {"dependencies": ["python=3.11"]}}),
    bad("vm-shm-size-without-image", "resources.shm_size", **VM, resources={"shm_size": "8g"}),
    bad("vm-instance-type-not-a-vm-size", "resources.instance_type", **VM, resources={"instance_type": "gpu-small"}),
    bad("vm-input-folder-on-the-dockyard-host", "inputs.data", **VM,
        inputs={"data": {"type": "uri_folder", "path": "/srv/data"}}),
    bad("computeinstance-has-no-backend", "compute", **{**K8S, "compute": "notebook"}),
    bad("compute-not-a-reference", "compute", compute="azureml:k8s:2"),
    bad("local-turned-off", "compute", settings={"DOCKYARD_LOCAL_COMPUTE": False}),
    bad("unknown-instance-type-on-kubernetes", "resources.instance_type", **K8S, resources={"instance_type": "huge"}),
    # local
    bad("local-instance-count-above-1", "resources.instance_count", resources={"instance_count": 2}),
    bad("local-distribution", "distribution", distribution={"type": "pytorch"}),
    bad("local-image", "environment.image", environment={"image": IMAGE}),
    bad("local-instance-type", "resources.instance_type", resources={"instance_type": "gpu-small"}),
    bad("local-shm-size", "resources.shm_size", resources={"shm_size": "8g"}),
    # container jobs
    bad("kubernetes-without-image", "environment.image", compute="azureml:k8s"),
    bad("kubernetes-venv-only", "environment.image", compute="azureml:k8s", environment={"venv": "/opt/venv"}),
    bad("kubernetes-venv", "environment.venv", **{**K8S, "environment": {"image": IMAGE, "venv": "/opt/venv"}}),
    bad("serverless-without-image", "environment.image", compute=None),
    bad("tensorflow-parameter-servers", "distribution.parameter_server_count", **K8S, resources={"instance_count": 2},
        distribution={"type": "tensorflow", "worker_count": 2, "parameter_server_count": 1}),
    bad("tensorflow-workers-not-one-per-pod", "distribution.worker_count", **SERVERLESS, resources={"instance_count": 2},
        distribution={"type": "tensorflow", "worker_count": 4}),
    # the spec
    bad("missing-command", "command", command=None),
    bad("empty-command", "command", command="  "),
    bad("bad-name", "name", name="-nope"),
    bad("bad-shm-size", "resources.shm_size", resources={"shm_size": "2gb"}),
    bad("zero-instances", "resources.instance_count", **K8S, resources={"instance_count": 0}),
    bad("negative-timeout", "limits.timeout", limits={"timeout": -1}),
    bad("zero-timeout", "limits.timeout", limits={"timeout": 0}),
    bad("boolean-timeout", "limits.timeout", limits={"timeout": True}),
    bad("unknown-top-level-field", "colour", colour="blue"),
    bad("unknown-resources-field", "resources.gpus", resources={"gpus": 1}),
    bad("unknown-input-reference", "command", command="echo ${{inputs.missing}}", inputs={"present": 1}),
    bad("unknown-output-reference", "command", command="echo hi > ${{outputs.result}}/x"),
    bad("unknown-registered-environment", "environment", **{**K8S, "environment": "azureml:no-such-env:1"}),
    bad("ray-distribution", "distribution.type", **K8S, distribution={"type": "ray"}),
    bad("not-a-command-job", "type", type="sweep"),
    bad("bad-environment-variable-name", "environment_variables.MY-VAR", environment_variables={"MY-VAR": "1"}),
]


@pytest.mark.parametrize("data, code, target, overrides", BAD_BODIES)
def test_bad_bodies_are_refused_and_nothing_is_created(data, code, target, overrides, owner_api, computes, settings,
                                                       django_capture_on_commit_callbacks):
    for key, value in overrides.items():
        setattr(settings, key, value)
    before = counts()
    with django_capture_on_commit_callbacks() as callbacks:
        response = owner_api.post(URL, data, format="json")
    error = assert_error(response, 400, code, target)
    assert error["message"].startswith(f"{target}: ") or not target
    assert counts() == before
    assert not callbacks


@pytest.mark.parametrize("where, folder, reason", [
    ({}, "src", "absolute path"),
    ({}, "/etc", "DOCKYARD_LOCAL_PATHS"),
    ({}, "/nonexistent/src", "does not exist"),
    (K8S, "/srv/code/src", "not shipped to Kubernetes"),
    (SERVERLESS, "/srv/code/src", "not shipped to Kubernetes"),
    (VM, "/srv/code/src", "not shipped to an attached VM"),
])
def test_code_is_refused_where_it_cannot_be_honoured(where, folder, reason, owner_api, computes, settings):
    """Local jobs take a folder the server shares (copied in before the command starts); others cannot receive it yet."""
    settings.DOCKYARD_LOCAL_PATHS = ["/nonexistent"]
    before = counts()
    data = {"command": "sh run.sh", "compute": "local", **where, "code": folder}
    error = assert_error(owner_api.post(URL, {key: value for key, value in data.items() if value is not None}, format="json"),
                         400, "InvalidJob", "code")
    assert reason in error["message"] and counts() == before


@pytest.mark.parametrize(
    "text, content_type",
    [
        ('["command", "echo hi"]', "application/json"),
        ('"echo hi"', "application/json"),
        ("42", "application/json"),
        ("null", "application/json"),
    ],
)
def test_a_json_body_that_is_not_a_mapping(text, content_type, owner_api, workspace):
    before = counts()
    assert_error(owner_api.post(URL, text, content_type=content_type), 400, "InvalidJob", "")
    assert counts() == before


@pytest.mark.parametrize(
    "text",
    [
        "command: echo hi\ncompute: [local\n",  # does not parse
        "command: 'unterminated\n",
        "\tcommand: echo\n",
        "- command: echo hi\n",  # parses, but a list
        "just a sentence\n",
    ],
)
def test_yaml_that_is_not_a_job_mapping(text, owner_api, workspace):
    before = counts()
    assert_error(owner_api.post(URL, text, content_type="application/yaml"), 400, "ValidationError", "")
    assert counts() == before


def test_every_problem_is_reported_at_once(owner_api, workspace):
    response = owner_api.post(URL, {"name": "-x", "compute": "local", "limits": {"timeout": 0}, "colour": 1}, format="json")
    error = assert_error(response, 400, "InvalidJob")
    assert sorted(detail["target"] for detail in error["details"]) == ["colour", "command", "limits.timeout", "name"]


def test_yaml_dates_in_fields_kept_as_given_are_stored_as_their_text(owner_api, workspace):
    # YAML reads an unquoted 2024-05-01 as a date; the stored spec is JSON.
    text = "command: echo hi\ncompute: local\nproperties:\n  since: 2024-05-01\n  at: 2024-05-01T10:30:00Z\n"
    response = owner_api.post(URL, text, content_type="application/yaml")
    assert response.status_code == 201, response.content
    assert response.json()["properties"] == {"since": "2024-05-01", "at": "2024-05-01T10:30:00+00:00"}


@pytest.mark.parametrize("text, target", [
    ("command: echo ${{inputs.lr}}\ncompute: local\ninputs:\n  lr: .nan\n", "inputs.lr"),
    ("command: echo hi\ncompute: local\nproperties:\n  weight: -.inf\n", "properties.weight"),
    ("command: echo hi\ncompute: local\nproperties:\n  blob: !!binary aGVsbG8=\n", "properties.blob"),
    ("command: echo hi\ncompute: local\nqueue_settings: !!set {spot: null}\n", "queue_settings"),
])
def test_yaml_values_json_cannot_store_are_refused(text, target, owner_api, workspace):
    before = counts()
    assert_error(owner_api.post(URL, text, content_type="application/yaml"), 400, "InvalidJob", target)
    assert counts() == before
