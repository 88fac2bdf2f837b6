"""Who may call what: every endpoint for anonymous, non-members, each role and staff.

No credentials -> 401; not a member -> 404 (names don't leak); a member without the role -> 403.
Reading needs `reader`; submitting and changing jobs needs `contributor`; every other write here (workspace
settings, members, compute) needs `owner`.
Online endpoints and deployments are used, not managed: their writes and keys need `contributor`.
Scoring checks the endpoint's own key, whoever calls (see the tests at the end).
Tokens and the catalogs belong to no workspace: any signed-in user. Staff alone create users. Who may create workspaces is a setting
(DOCKYARD_WORKSPACE_CREATORS: anyone signed in, or staff only). Staff alone enable local compute for a workspace
and attach a cluster `in_cluster` (with Dockyard's own service account).
The OpenAPI schema and its docs page are public: they describe the API, not anyone's data.
A pod's code fetch URL (`artifacts/fetch/<token>/`) is token-authorised: the signed token names one snapshot and its
expiry, and is the only thing checked, whoever calls (every role alike: 200 with a good token, 403 with a bad one).
So is a pod's outputs upload URL (`artifacts/outputs/<token>/<rank>/`), whose token names one job (201 / 403).
"""
import io
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from assets.specs import snapshots as spec
from assets.tests.support import sha, targz, zipped
from compute.services import compute_create, instance_types_create
from compute.tests.factories import body, create_compute
from conftest import ROLES
from jobs.services import job_create
from tests.support import assert_error
from workspaces.services import token_create

WS = "/api/v1/workspaces/team-a"

# The workspace runs local jobs and deployments, as a staff user would have enabled (it is off by default).
pytestmark = pytest.mark.usefixtures("local_compute")


def read(ok: int = 200) -> dict:
    return {"anonymous": 401, "outsider": 404, "reader": ok, "contributor": ok, "owner": ok, "staff": ok}


def manage(ok: int) -> dict:
    return {"anonymous": 401, "outsider": 404, "reader": 403, "contributor": 403, "owner": ok, "staff": ok}


def use(ok: int) -> dict:
    return {"anonymous": 401, "outsider": 404, "reader": 403, "contributor": ok, "owner": ok, "staff": ok}


def instance_user(ok: int) -> dict:
    """A compute instance's start/stop/restart: its assigned user (here the owner who made it), owners and staff; a
    contributor who is not its user is refused like a reader."""
    return {"anonymous": 401, "outsider": 404, "reader": 403, "contributor": 403, "owner": ok, "staff": ok}


def signed_in(ok: int) -> dict:
    return {role: 401 if role == "anonymous" else ok for role in ROLES}


def staff_only(ok: int, members: int = 403) -> dict:
    """Staff only, inside a workspace: outsiders still get 404, every member role `members`."""
    return {"anonymous": 401, "outsider": 404, "reader": members, "contributor": members, "owner": members, "staff": ok}


def signed_in_staff(ok: int) -> dict:
    return {role: 401 if role == "anonymous" else ok if role == "staff" else 403 for role in ROLES}


PUBLIC = {role: 200 for role in ROLES}
TOKEN_AUTHORISED, TOKEN_REFUSED = {role: 200 for role in ROLES}, {role: 403 for role in ROLES}
CODES = {401: "Unauthorized", 403: "Forbidden", 404: "NotFound"}
IN_CLUSTER = {"name": "here", "type": "kubernetes", "in_cluster": True}


JOB = {"name": "train", "command": "echo hi", "compute": "local"}
WAITING_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDmMHpRKkXoHIqRQ2e6G+tnDBUiEyTQj5aaRfDWbS5Xf"
WAITING_FINGERPRINT = "SHA256:xPpu6rT0xRS7GFTkiC1oDV4bxVI7UlGaFWYe/Sgh+vA"  # ssh-keygen -lf of WAITING_KEY
SHAPE = {"name": "small", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}
EP = f"{WS}/online-endpoints"
ADDER = Path(__file__).resolve().parent.parent / "endpoints" / "tests" / "data" / "adder"
DEPLOYMENT = {"code_configuration": {"code": str(ADDER), "scoring_script": "score.py"}}


HELLO, PENDING = sha(b"hello"), sha(b"pending bytes")
HELLO_SNAPSHOT = spec.snapshot_id([spec.Entry("hello.txt", HELLO, 0o644)])
HELLO_PATH = f"azureml://uploads/{HELLO_SNAPSHOT}"


def artifacts(owner, workspace) -> None:
    """Blob `hello` and snapshot `hello.txt` uploaded (as one .tar.gz), and an upload of PENDING (100 bytes) begun."""
    from assets import services

    services.upload_create(user=owner, workspace=workspace, body=io.BytesIO(targz({"hello.txt": b"hello"})),
                           content_type="application/gzip")
    services.blob_upload_start(user=owner, workspace=workspace, sha256=PENDING, size=100)


ENV = {"name": "env", "version": "1", "image": "python:3.11-slim"}


def assets(owner, workspace) -> None:
    """Environment env:1, model model:1 (an upload of `hello.txt`) and data data:1 (an https URL)."""
    from assets import registry

    artifacts(owner, workspace)
    registry.environment_create(user=owner, workspace=workspace, data=ENV)
    registry.model_create(user=owner, workspace=workspace, data={"name": "model", "version": 1, "path": HELLO_PATH})
    registry.data_create(user=owner, workspace=workspace, data={"name": "data", "version": "1",
                                                                "path": "https://example.org/iris.csv"})


def online_endpoint(owner, workspace) -> dict:
    """Local endpoint `adder` with deployment `blue` (no traffic); returns its keys."""
    from endpoints.services import deployment_create, endpoint_create

    endpoint, made = endpoint_create(user=owner, workspace=workspace, data={"name": "adder", "compute": "local"})
    deployment_create(user=owner, endpoint=endpoint, data={"name": "blue", **DEPLOYMENT})
    return made


@dataclass
class Endpoint:
    name: str
    method: str
    path: str
    expected: dict
    data: dict | None = None
    # "compute": a compute named cpu-cluster in team-a; "job": a local job named train; "kubernetes": an attached `k8s`;
    # "endpoint": local endpoint `adder`; "local-off": team-a without local compute; "pod": Dockyard runs in a pod;
    # "assets": environment, model and data `…:1` (and the artifacts); "vm-waiting": VM `vm` whose host key waits
    # for confirmation
    needs: tuple = field(default=())
    settings: dict = field(default_factory=dict)
    content_type: str | None = None  # a raw body (bytes) of this type instead of JSON
    error_code: str | None = None  # the error's code when it is not the status's usual one


ENDPOINTS = [
    Endpoint("workspaces-list", "get", "/api/v1/workspaces/", signed_in(200)),
    Endpoint("workspaces-create", "post", "/api/v1/workspaces/", signed_in(201), {"name": "new-team"}),
    Endpoint("workspaces-create-staff-only", "post", "/api/v1/workspaces/", signed_in_staff(201), {"name": "new-team"},
             settings={"DOCKYARD_WORKSPACE_CREATORS": "staff"}),
    Endpoint("workspace-retrieve", "get", f"{WS}/", read()),
    Endpoint("workspace-patch", "patch", f"{WS}/", manage(200), {"description": "changed"}),
    Endpoint("workspace-delete", "delete", f"{WS}/", manage(204)),
    Endpoint("workspace-enable-local-compute", "patch", f"{WS}/", staff_only(200), {"allow_local_compute": True},
             ("local-off",)),
    Endpoint("workspace-disable-local-compute", "patch", f"{WS}/", staff_only(200), {"allow_local_compute": False}),
    Endpoint("workspace-local-network", "patch", f"{WS}/", staff_only(200), {"allow_local_network": True}),
    Endpoint("members-list", "get", f"{WS}/members/", read()),
    Endpoint("member-retrieve", "get", f"{WS}/members/reader-user/", read()),
    Endpoint("members-create", "post", f"{WS}/members/", manage(201), {"user": "nina", "role": "reader"}),
    Endpoint("member-patch", "patch", f"{WS}/members/contributor-user/", manage(200), {"role": "reader"}),
    Endpoint("member-delete", "delete", f"{WS}/members/contributor-user/", manage(204)),
    Endpoint("events-list", "get", f"{WS}/events/", read()),
    Endpoint("computes-list", "get", f"{WS}/computes/", read()),
    Endpoint("computes-create", "post", f"{WS}/computes/", manage(201), body("computeinstance", name="new-instance")),
    # As if Dockyard ran in a pod ("pod"): the attachment would use Dockyard's own service account.
    Endpoint("computes-create-in-cluster", "post", f"{WS}/computes/", staff_only(201), IN_CLUSTER, ("pod",)),
    Endpoint("compute-retrieve", "get", f"{WS}/computes/cpu-cluster/", read(), needs=("compute",)),
    Endpoint("compute-patch", "patch", f"{WS}/computes/cpu-cluster/", manage(200), {"max_instances": 9}, ("compute",)),
    Endpoint("compute-delete", "delete", f"{WS}/computes/cpu-cluster/", manage(202), needs=("compute",)),
    Endpoint("compute-local-retrieve", "get", f"{WS}/computes/local/", read()),
    Endpoint("vm-confirm-host-key", "post", f"{WS}/computes/vm/confirm-host-key/", manage(202),
             {"fingerprint": WAITING_FINGERPRINT}, ("vm-waiting",)),
    # "instance": compute instance `notebook` (the owner's), Running; "instance-stopped": the same, Stopped
    Endpoint("instance-retrieve", "get", f"{WS}/computes/notebook/", read(), needs=("instance",)),
    Endpoint("instance-stop", "post", f"{WS}/computes/notebook/stop/", instance_user(202), needs=("instance",)),
    Endpoint("instance-restart", "post", f"{WS}/computes/notebook/restart/", instance_user(202), needs=("instance",)),
    Endpoint("instance-start", "post", f"{WS}/computes/notebook/start/", instance_user(202), needs=("instance-stopped",)),
    Endpoint("instancetypes-list", "get", f"{WS}/computes/k8s/instancetypes/", read(), needs=("kubernetes",)),
    Endpoint("instancetypes-create", "post", f"{WS}/computes/k8s/instancetypes/", manage(201), SHAPE, ("kubernetes",)),
    Endpoint("instancetype-retrieve", "get", f"{WS}/computes/k8s/instancetypes/small/", read(), needs=("kubernetes",)),
    Endpoint("instancetype-put", "put", f"{WS}/computes/k8s/instancetypes/small/", manage(200), SHAPE, ("kubernetes",)),
    Endpoint("instancetype-patch", "patch", f"{WS}/computes/k8s/instancetypes/small/", manage(200),
             {"nodeSelector": {"pool": "a"}}, ("kubernetes",)),
    Endpoint("instancetype-delete", "delete", f"{WS}/computes/k8s/instancetypes/small/", manage(202), needs=("kubernetes",)),
    Endpoint("nodes-list", "get", f"{WS}/computes/k8s/nodes/", read(), needs=("kubernetes",)),
    Endpoint("online-endpoints-list", "get", f"{EP}/", read()),
    Endpoint("online-endpoints-create", "post", f"{EP}/", use(201), {"name": "new-ep", "compute": "local"}),
    Endpoint("online-endpoint-retrieve", "get", f"{EP}/adder/", read(), needs=("endpoint",)),
    Endpoint("online-endpoint-patch", "patch", f"{EP}/adder/", use(200), {"description": "changed"}, ("endpoint",)),
    Endpoint("online-endpoint-delete", "delete", f"{EP}/adder/", use(202), needs=("endpoint",)),
    Endpoint("online-endpoint-keys", "get", f"{EP}/adder/keys", use(200), needs=("endpoint",)),
    Endpoint("online-endpoint-keys-post", "post", f"{EP}/adder/keys", use(200), {"key_type": "secondary"}, ("endpoint",)),
    Endpoint("online-endpoint-keys-regenerate", "post", f"{EP}/adder/keys/regenerate", use(200), {"key_type": "primary"}, ("endpoint",)),
    Endpoint("deployments-list", "get", f"{EP}/adder/deployments/", read(), needs=("endpoint",)),
    Endpoint("deployments-create", "post", f"{EP}/adder/deployments/", use(201), {"name": "green", **DEPLOYMENT}, ("endpoint",)),
    Endpoint("deployment-retrieve", "get", f"{EP}/adder/deployments/blue/", read(), needs=("endpoint",)),
    Endpoint("deployment-patch", "patch", f"{EP}/adder/deployments/blue/", use(200), {"description": "changed"}, ("endpoint",)),
    Endpoint("deployment-delete", "delete", f"{EP}/adder/deployments/blue/", use(202), needs=("endpoint",)),
    Endpoint("deployment-logs", "get", f"{EP}/adder/deployments/blue/logs/", read(), needs=("endpoint",)),
    Endpoint("jobs-list", "get", f"{WS}/jobs/", read()),
    Endpoint("jobs-create", "post", f"{WS}/jobs/", use(201), {"command": "echo hi", "compute": "local"}),
    Endpoint("job-retrieve", "get", f"{WS}/jobs/train/", read(), needs=("job",)),
    Endpoint("job-patch", "patch", f"{WS}/jobs/train/", use(200), {"display_name": "renamed"}, ("job",)),
    Endpoint("job-delete", "delete", f"{WS}/jobs/train/", use(202), needs=("job",)),
    Endpoint("job-cancel", "post", f"{WS}/jobs/train/cancel/", use(202), needs=("job",)),
    Endpoint("job-logs", "get", f"{WS}/jobs/train/logs/", read(), needs=("job",)),
    Endpoint("job-logs-download", "get", f"{WS}/jobs/train/logs/?download=true", read(), needs=("job",)),
    Endpoint("job-events", "get", f"{WS}/jobs/train/events/", read(), needs=("job",)),
    Endpoint("job-outputs", "get", f"{WS}/jobs/train/outputs/", read(), needs=("job",)),
    # (the job has not run: no such file, but only after the same access checks as the list)
    Endpoint("job-output-download", "get", f"{WS}/jobs/train/outputs/?path=model.bin", read(404), needs=("job",)),
    Endpoint("blobs-create", "post", f"{WS}/blobs/", use(201), {"sha256": sha(b"new"), "size": 3}),
    Endpoint("blob-retrieve", "get", f"{WS}/blobs/{HELLO}/", read(), needs=("artifacts",)),
    Endpoint("blob-download", "get", f"{WS}/blobs/{HELLO}/?download=true", read(), needs=("artifacts",)),
    Endpoint("blob-chunk", "patch", f"{WS}/blobs/{PENDING}/?offset=0", use(200), b"x" * 10, ("artifacts",),
             content_type="application/octet-stream"),
    Endpoint("snapshots-list", "get", f"{WS}/snapshots/", read(), needs=("artifacts",)),
    Endpoint("snapshots-create", "post", f"{WS}/snapshots/", use(201), {"files": [{"path": "again.txt", "sha256": HELLO}]},
             ("artifacts",)),
    Endpoint("snapshot-retrieve", "get", f"{WS}/snapshots/{HELLO_SNAPSHOT}/", read(), needs=("artifacts",)),
    Endpoint("uploads-create", "post", f"{WS}/uploads/", use(201), targz({"new.txt": b"new"}), content_type="application/gzip"),
    Endpoint("uploads-create-zip", "post", f"{WS}/uploads/", use(201), zipped({"new.txt": b"new"}), content_type="application/zip"),
    Endpoint("environments-list", "get", f"{WS}/environments/", read(), needs=("assets",)),
    Endpoint("environments-create", "post", f"{WS}/environments/", use(201), {**ENV, "version": "2"}, ("assets",)),
    Endpoint("environment-retrieve", "get", f"{WS}/environments/env/versions/1/", read(), needs=("assets",)),
    Endpoint("environment-latest", "get", f"{WS}/environments/env/versions/latest/", read(), needs=("assets",)),
    Endpoint("environment-archive", "delete", f"{WS}/environments/env/versions/1/", use(204), needs=("assets",)),
    Endpoint("environment-restore", "post", f"{WS}/environments/env/versions/1/restore/", use(200), needs=("assets",)),
    Endpoint("models-list", "get", f"{WS}/models/", read(), needs=("assets",)),
    Endpoint("models-create", "post", f"{WS}/models/", use(201), {"name": "model", "path": HELLO_PATH}, ("assets",)),
    Endpoint("model-retrieve", "get", f"{WS}/models/model/versions/1/", read(), needs=("assets",)),
    Endpoint("model-archive", "delete", f"{WS}/models/model/versions/1/", use(204), needs=("assets",)),
    Endpoint("model-restore", "post", f"{WS}/models/model/versions/1/restore/", use(200), needs=("assets",)),
    Endpoint("data-list", "get", f"{WS}/data/", read(), needs=("assets",)),
    Endpoint("data-create", "post", f"{WS}/data/", use(201), {"name": "data", "path": HELLO_PATH}, ("assets",)),
    Endpoint("data-retrieve", "get", f"{WS}/data/data/versions/1/", read(), needs=("assets",)),
    Endpoint("data-archive", "delete", f"{WS}/data/data/versions/1/", use(204), needs=("assets",)),
    Endpoint("data-restore", "post", f"{WS}/data/data/versions/1/restore/", use(200), needs=("assets",)),
    Endpoint("artifact-fetch", "get", "/api/v1/artifacts/fetch/{fetch}/", TOKEN_AUTHORISED, needs=("artifacts",)),
    Endpoint("artifact-fetch-forged", "get", "/api/v1/artifacts/fetch/eyJ3IjoxfQ:forged:signature/", TOKEN_REFUSED,
             error_code="FetchRefused"),
    Endpoint("job-outputs-upload", "post", "/api/v1/artifacts/outputs/{upload}/0/", {role: 201 for role in ROLES},
             targz({"out.txt": b"x"}), ("job",), content_type="application/gzip"),
    Endpoint("job-outputs-upload-forged", "post", "/api/v1/artifacts/outputs/eyJ3IjoxfQ:forged:signature/0/",
             TOKEN_REFUSED, targz({"out.txt": b"x"}), content_type="application/gzip", error_code="UploadRefused"),
    Endpoint("tokens-list", "get", "/api/v1/tokens/", signed_in(200)),
    Endpoint("tokens-create", "post", "/api/v1/tokens/", signed_in(201), {"name": "ci"}),
    Endpoint("token-delete", "delete", "/api/v1/tokens/{token}/", signed_in(204)),
    Endpoint("users-create", "post", "/api/v1/users/", signed_in_staff(201), {"username": "new-person"}),
    Endpoint("vm-sizes", "get", "/api/v1/vm-sizes/", signed_in(200)),
    Endpoint("vm-size", "get", "/api/v1/vm-sizes/Standard_DS3_v2/", signed_in(200)),
    Endpoint("compute-types", "get", "/api/v1/compute-types/", signed_in(200)),
    Endpoint("openapi", "get", "/api/v1/openapi.json", PUBLIC),
    Endpoint("docs", "get", "/api/v1/docs/", PUBLIC),
]


@pytest.fixture
def nina(make_user):
    return make_user("nina")


def attached_kubernetes(owner, workspace, fake_kube):
    """Compute `k8s` attached to the fake API server, its checks passed (only a proven attachment changes a cluster)."""
    from compute import reconcile
    from compute.models import ComputeTarget
    from controlplane.kube import client as kube

    kube._clients.clear()
    data = {"name": "k8s", "type": "kubernetes", "kubeconfig": fake_kube.kubeconfig_yaml()}
    compute = compute_create(user=owner, workspace=workspace, data=data)
    reconcile.reconcile_compute(ComputeTarget.objects.get(pk=compute.pk))
    compute.refresh_from_db()
    return compute


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda endpoint: endpoint.name)
def test_authorization_matrix(endpoint, role, users, workspace, nina, api_as, settings, request):
    for name, value in endpoint.settings.items():
        setattr(settings, name, value)
    if "pod" in endpoint.needs:
        request.getfixturevalue("monkeypatch").setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    if "local-off" in endpoint.needs:
        workspace.local_compute_enabled = False
        workspace.save(update_fields=["local_compute_enabled"])
    if "compute" in endpoint.needs:
        create_compute(workspace, users["owner"], name="cpu-cluster")
    if "vm-waiting" in endpoint.needs:  # VM `vm`, its host key scanned on first contact and not yet confirmed
        vm = create_compute(workspace, users["owner"], "virtualmachine")
        vm.properties = {**vm.properties, "host_key": WAITING_KEY, "host_key_confirmed": False}
        vm.save(update_fields=["properties"])
    if {"instance", "instance-stopped"} & set(endpoint.needs):
        compute_instance(workspace, users["owner"], stopped="instance-stopped" in endpoint.needs)
    if "kubernetes" in endpoint.needs:
        k8s = attached_kubernetes(users["owner"], workspace, request.getfixturevalue("fake_kube"))
        if endpoint.method != "post":
            instance_types_create(user=users["owner"], compute=k8s, body=SHAPE)
    if "job" in endpoint.needs:
        job_create(user=users["owner"], workspace=workspace, data=JOB)
    if "endpoint" in endpoint.needs:
        online_endpoint(users["owner"], workspace)
    if "artifacts" in endpoint.needs:
        artifacts(users["owner"], workspace)
    if "assets" in endpoint.needs:
        assets(users["owner"], workspace)
    client = api_as(role)
    # the token to revoke belongs to the caller (anonymous tries the owner's)
    token, _ = token_create(user=users[role] or users["owner"], name="to-revoke")
    path = endpoint.path.format(token=token.pk, fetch=_fetch_token(workspace) if "{fetch}" in endpoint.path else "",
                                upload=_upload_token(workspace) if "{upload}" in endpoint.path else "")
    body = {"content_type": endpoint.content_type} if endpoint.content_type else {"format": "json"}
    response = getattr(client, endpoint.method)(path, endpoint.data, **body)
    status = endpoint.expected[role]
    if status >= 400:
        assert_error(response, status, endpoint.error_code or CODES[status])
    else:
        assert response.status_code == status, response.content


def compute_instance(workspace, owner, stopped: bool) -> None:
    """Compute instance `notebook` of `owner` on the workspace's kubernetes compute, as reconcile saw it run (or stop)."""
    from compute.models import ComputeInstance

    compute = create_compute(workspace, owner, "computeinstance")
    state = {"state": "Stopped", "desired_state": "stopped"} if stopped else {"state": "Running"}
    ComputeInstance.objects.filter(compute=compute).update(**state)


def test_only_its_user_and_staff_see_an_instances_links(users, workspace, api_as):
    """The links to its servers show only to whom the proxy lets in: its assigned user and staff."""
    compute_instance(workspace, users["owner"], stopped=False)
    for role in ("reader", "contributor", "owner", "staff"):
        links = api_as(role).get(f"{WS}/computes/notebook/").json()["applications"]
        assert (links is not None) is (role in ("owner", "staff")), role


def test_refused_instance_actions_change_nothing(api_as, users, workspace):
    from compute.models import ComputeInstance
    from workspaces.models import AuditEvent

    compute_instance(workspace, users["owner"], stopped=False)
    clients = [api_as(role) for role in ("anonymous", "outsider", "reader", "contributor")]
    before = (list(ComputeInstance.objects.values()), AuditEvent.objects.count())
    for client in clients:
        for action in ("start", "stop", "restart"):
            assert client.post(f"{WS}/computes/notebook/{action}/").status_code in (401, 403, 404)
    assert (list(ComputeInstance.objects.values()), AuditEvent.objects.count()) == before


def _fetch_token(workspace) -> str:
    """A pod's token for the `hello.txt` snapshot (artifacts())."""
    from assets import delivery
    from assets.models import Snapshot

    return delivery.fetch_token(Snapshot.objects.get(workspace=workspace, sha256=HELLO_SNAPSHOT))


def _upload_token(workspace) -> str:
    """A pod's outputs upload token for job `train`."""
    from assets import delivery
    from jobs.models import Job

    return delivery.upload_token(workspace.pk, Job.objects.get(workspace=workspace, name="train").pk)


@pytest.mark.parametrize("method, suffix, data", [
    ("get", "cpu-cluster/", None),
    ("patch", "cpu-cluster/", {"max_instances": 9}),
    ("delete", "cpu-cluster/", None),
    ("get", "", None),
])
def test_an_owner_of_one_workspace_gets_404_for_anothers_compute(method, suffix, data, owner_api, workspace, make_user):
    from compute.models import ComputeTarget
    from workspaces.services import workspace_create

    bob = make_user("bob")
    other = workspace_create(user=bob, name="team-b")
    theirs = create_compute(other, bob, name="cpu-cluster", max_instances=2)
    response = getattr(owner_api, method)(f"/api/v1/workspaces/team-b/computes/{suffix}", data, format="json")
    assert_error(response, 404, "NotFound")
    # and team-a's path does not reach team-b's record either
    assert_error(owner_api.get(f"{WS}/computes/cpu-cluster/"), 404, "NotFound")
    theirs.refresh_from_db()
    assert (theirs.provisioning_state, theirs.properties["max_instances"]) == ("Creating", 2)
    assert ComputeTarget.objects.filter(workspace=other, type="amlcompute").count() == 1


def test_a_404_for_a_hidden_workspace_looks_like_one_for_a_missing_workspace(api_as, users, workspace):
    outsider = api_as("outsider")
    hidden = outsider.get(f"{WS}/computes/")
    missing = outsider.get("/api/v1/workspaces/no-such-team/computes/")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == missing.json()


def test_a_non_member_cannot_learn_which_computes_exist(api_as, users, workspace):
    create_compute(workspace, users["owner"], name="cpu-cluster")
    outsider = api_as("outsider")
    assert outsider.get(f"{WS}/computes/cpu-cluster/").json() == outsider.get(f"{WS}/computes/nope/").json()


def test_refused_writes_change_nothing(api_as, users, workspace):
    from compute.models import ComputeTarget
    from workspaces.models import AuditEvent, Membership

    create_compute(workspace, users["owner"], name="cpu-cluster", max_instances=2)
    clients = [api_as(role) for role in ("anonymous", "outsider", "reader", "contributor")]
    before = (ComputeTarget.objects.count(), Membership.objects.count(), AuditEvent.objects.count())
    for client in clients:
        client.patch(f"{WS}/computes/cpu-cluster/", {"max_instances": 9}, format="json")
        client.delete(f"{WS}/computes/cpu-cluster/")
        client.post(f"{WS}/computes/", body("amlcompute", name="sneaky"), format="json")
        client.post(f"{WS}/members/", {"user": "oscar", "role": "owner"}, format="json")
        client.patch(f"{WS}/", {"description": "defaced"}, format="json")
        client.delete(f"{WS}/")
    assert (ComputeTarget.objects.count(), Membership.objects.count(), AuditEvent.objects.count()) == before
    assert ComputeTarget.objects.get(name="cpu-cluster").properties["max_instances"] == 2
    workspace.refresh_from_db()
    assert workspace.description == ""


def test_refused_job_writes_change_nothing(api_as, users, workspace):
    from jobs.models import Job, JobEvent
    from workspaces.models import AuditEvent

    job_create(user=users["owner"], workspace=workspace, data=JOB)
    clients = {role: api_as(role) for role in ("anonymous", "outsider", "reader")}  # (making a token is audited)
    before = (list(Job.objects.values()), JobEvent.objects.count(), AuditEvent.objects.count())
    for role, client in clients.items():
        for response in (
            client.post(f"{WS}/jobs/", {"name": "sneaky", "command": "echo", "compute": "local"}, format="json"),
            client.patch(f"{WS}/jobs/train/", {"display_name": "defaced"}, format="json"),
            client.post(f"{WS}/jobs/train/cancel/"),
            client.delete(f"{WS}/jobs/train/"),
        ):
            assert response.status_code == use(202)[role], (role, response.status_code)
    assert (list(Job.objects.values()), JobEvent.objects.count(), AuditEvent.objects.count()) == before


@pytest.mark.parametrize("method, suffix, data", [
    ("get", "train/", None),
    ("patch", "train/", {"display_name": "mine now"}),
    ("delete", "train/", None),
    ("post", "train/cancel/", None),
    ("get", "train/logs/", None),
    ("get", "train/events/", None),
    ("get", "", None),
])
def test_an_owner_of_one_workspace_gets_404_for_anothers_job(method, suffix, data, owner_api, workspace, make_user):
    from jobs.models import Job
    from workspaces.services import workspace_create

    bob = make_user("bob")
    other = workspace_create(user=bob, name="team-b")
    other.local_compute_enabled = True
    other.save(update_fields=["local_compute_enabled"])
    theirs = job_create(user=bob, workspace=other, data=JOB)
    response = getattr(owner_api, method)(f"/api/v1/workspaces/team-b/jobs/{suffix}", data, format="json")
    assert_error(response, 404, "NotFound")
    assert_error(owner_api.get(f"{WS}/jobs/train/"), 404, "NotFound")  # team-a's path does not reach it either
    theirs.refresh_from_db()
    assert (theirs.display_name, theirs.status, theirs.deleting) == ("train", "NotStarted", False)
    assert Job.objects.filter(workspace=other).count() == 1


def test_session_login_works_for_reads(client, users, workspace):
    client.force_login(users["reader"])
    assert client.get(f"{WS}/computes/").status_code == 200


def test_session_writes_need_the_csrf_token(users, workspace):
    from django.test import Client

    browser = Client(enforce_csrf_checks=True)
    browser.force_login(users["owner"])
    response = browser.patch(f"{WS}/", {"description": "x"}, content_type="application/json")
    assert_error(response, 403, "Forbidden")


def test_refused_endpoint_writes_change_nothing(api_as, users, workspace):
    from endpoints.models import OnlineDeployment, OnlineEndpoint
    from workspaces.models import AuditEvent

    online_endpoint(users["owner"], workspace)

    def snapshot():
        return (list(OnlineEndpoint.objects.values_list("description", "traffic", "primary_key_hash", "secondary_key_hash",
                                                         "provisioning_state")),
                list(OnlineDeployment.objects.values_list("name", "spec", "provisioning_state")), AuditEvent.objects.count())

    clients = [api_as(role) for role in ("anonymous", "outsider", "reader")]  # their tokens are audited: made first
    before = snapshot()
    for client in clients:
        client.post(f"{EP}/", {"name": "sneaky", "compute": "local"}, format="json")
        client.patch(f"{EP}/adder/", {"description": "defaced"}, format="json")
        client.post(f"{EP}/adder/keys", {"key_type": "primary"}, format="json")
        client.post(f"{EP}/adder/keys/regenerate", {"key_type": "secondary"}, format="json")
        client.post(f"{EP}/adder/deployments/", {"name": "green", **DEPLOYMENT}, format="json")
        client.patch(f"{EP}/adder/deployments/blue/", {"description": "defaced"}, format="json")
        client.delete(f"{EP}/adder/deployments/blue/")
        client.delete(f"{EP}/adder/")
    assert snapshot() == before


@pytest.mark.parametrize("role", ROLES)
def test_scoring_needs_the_endpoints_key_whoever_calls(role, users, workspace, api_as):
    """A key endpoint takes its key from anyone (even without a Dockyard account) and nothing else."""
    made = online_endpoint(users["owner"], workspace)
    url = f"{EP}/adder/score"
    client = api_as(role)  # the role's Dockyard token, or none
    response = client.post(url, {"numbers": [1]}, format="json")
    assert_error(response, 401, "Unauthorized")
    assert response["WWW-Authenticate"] == "Bearer"
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {made['secondaryKey']}")
    assert_error(client.post(url, {"numbers": [1]}, format="json"), 404, "NoTraffic")  # past the key check


@pytest.mark.parametrize("role", ROLES)
def test_scoring_an_aml_token_endpoint_needs_a_members_token(role, users, workspace, api_as):
    from endpoints.services import endpoint_create

    endpoint_create(user=users["owner"], workspace=workspace, data={"name": "tok", "compute": "local", "auth_mode": "aml_token"})
    response = api_as(role).post(f"{EP}/tok/score", {"numbers": [1]}, format="json")
    if role in ("anonymous", "outsider"):
        assert_error(response, 401, "Unauthorized")
    elif role == "reader":
        assert_error(response, 403, "Forbidden")  # scoring uses the endpoint: contributor and up (API.md's 403)
    else:
        assert_error(response, 404, "NoTraffic")  # past the token check
