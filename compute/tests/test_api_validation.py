"""Bad compute bodies: 400 in the error shape naming the field, and nothing is written."""
import pytest

from compute import vmsizes
from compute.models import ComputeTarget
from compute.tests.factories import PRIVATE_KEY, body, create_compute, host, kubeconfig
from tests.support import assert_error
from workspaces.models import AuditEvent

URL = "/api/v1/workspaces/team-a/computes/"


def counts() -> tuple[int, int]:
    return ComputeTarget.objects.count(), AuditEvent.objects.count()


def case(label: str, compute_type: str, target: str, **overrides):
    return pytest.param(body(compute_type, **overrides), target, id=f"{compute_type}-{label}")


def schedule(**trigger) -> dict:
    """A stop schedule with a cron trigger, its fields replaced (None removes one)."""
    fields = {"type": "cron", "expression": "0 18 * * *", **trigger}
    return {"action": "stop", "trigger": {key: value for key, value in fields.items() if value is not None}}


def schedules(*items) -> dict:
    return {"compute_start_stop": list(items)}


@pytest.fixture(autouse=True)
def hosted(workspace):
    """A kubernetes compute for compute clusters to live on (the workspace's only one)."""
    return host(workspace, "k8s-host")


INVALID_CREATES = [
    # every type: names and the common fields
    case("missing-name", "amlcompute", "name", name=None),
    case("name-too-short", "amlcompute", "name", name="a"),
    case("name-too-long", "amlcompute", "name", name="c" * 25),
    case("name-far-too-long", "kubernetes", "name", name="c" * 100),
    case("name-starts-with-digit", "computeinstance", "name", name="1box"),
    case("name-underscore", "virtualmachine", "name", name="my_vm"),
    case("name-dot", "batch", "name", name="my.batch"),
    case("name-reserved-local", "amlcompute", "name", name="local"),
    case("name-reserved-local-any-case", "databricks", "name", name="Local"),
    case("name-not-a-string", "amlcompute", "name", name=["cpu"]),
    case("unknown-field", "amlcompute", "colour", colour="blue"),
    case("unknown-field-of-another-type", "amlcompute", "kubeconfig", kubeconfig=kubeconfig()),
    case("tags-not-a-map", "amlcompute", "tags", tags=["a", "b"]),
    case("tags-values-not-strings", "kubernetes", "tags", tags={"team": 1}),
    case("description-not-a-string", "synapsespark", "description", description={"a": 1}),
    # amlcompute
    case("max-not-a-number", "amlcompute", "max_instances", max_instances="many"),
    case("min-negative", "amlcompute", "min_instances", min_instances=-1),
    case("max-zero", "amlcompute", "max_instances", max_instances=0),
    case("min-above-max", "amlcompute", "min_instances", min_instances=5, max_instances=2),
    case("min-above-default-max", "amlcompute", "min_instances", min_instances=2, max_instances=None),
    case("unknown-tier", "amlcompute", "tier", tier="spot"),
    case("idle-negative", "amlcompute", "idle_time_before_scale_down", idle_time_before_scale_down=-5),
    case("retired-NC", "amlcompute", "size", size="Standard_NC6"),
    case("retired-NC-Promo", "amlcompute", "size", size="Standard_NC12_Promo"),
    case("retired-NCv2", "amlcompute", "size", size="Standard_NC6s_v2"),
    case("retired-ND", "amlcompute", "size", size="Standard_ND6s"),
    case("retired-NV", "amlcompute", "size", size="Standard_NV6"),
    case("retired-Av1", "amlcompute", "size", size="Standard_A2"),
    case("retired-HB", "amlcompute", "size", size="Standard_HB60rs"),
    case("unknown-size", "amlcompute", "size", size="Standard_Q99"),
    case("size-not-a-string", "amlcompute", "size", size=4),
    # computeinstance
    case("FX-is-clusters-only", "computeinstance", "size", size="Standard_FX4mds"),
    case("retired-ND", "computeinstance", "size", size="Standard_ND6s"),
    case("retired-HB", "computeinstance", "size", size="Standard_HB60rs"),
    case("unknown-size", "computeinstance", "size", size="Standard_D4_v99"),
    case("idle-under-15-minutes", "computeinstance", "idle_time_before_shutdown_minutes", idle_time_before_shutdown_minutes=14),
    case("idle-over-3-days", "computeinstance", "idle_time_before_shutdown_minutes", idle_time_before_shutdown_minutes=4321),
    case("idle-not-a-number", "computeinstance", "idle_time_before_shutdown_minutes", idle_time_before_shutdown_minutes="soon"),
    case("iso-idle-under-15-minutes", "computeinstance", "idle_time_before_shutdown",
         idle_time_before_shutdown_minutes=None, idle_time_before_shutdown="PT10M"),
    case("iso-idle-over-3-days", "computeinstance", "idle_time_before_shutdown",
         idle_time_before_shutdown_minutes=None, idle_time_before_shutdown="P3DT1M"),
    case("iso-idle-not-a-duration", "computeinstance", "idle_time_before_shutdown",
         idle_time_before_shutdown_minutes=None, idle_time_before_shutdown="thirty minutes"),
    case("iso-disagrees-with-minutes", "computeinstance", "idle_time_before_shutdown",
         idle_time_before_shutdown_minutes=60, idle_time_before_shutdown="PT30M"),
    case("bad-cron", "computeinstance", "schedules.compute_start_stop.0.trigger.expression",
         schedules=schedules(schedule(expression="61 * * * *"))),
    case("cron-six-fields", "computeinstance", "schedules.compute_start_stop.1.trigger.expression",
         schedules=schedules(schedule(), schedule(expression="0 0 18 * * *"))),
    case("cron-without-expression", "computeinstance", "schedules.compute_start_stop.0.trigger.expression",
         schedules=schedules(schedule(expression=None))),
    case("bad-time-zone", "computeinstance", "schedules.compute_start_stop.0.trigger.time_zone",
         schedules=schedules(schedule(time_zone="Mars/Olympus"))),
    case("windows-time-zone-unknown", "computeinstance", "schedules.compute_start_stop.0.trigger.time_zone",
         schedules=schedules(schedule(time_zone="Mars Standard Time"))),
    case("time-zone-huge", "computeinstance", "schedules.compute_start_stop.0.trigger.time_zone",
         schedules=schedules(schedule(time_zone="Pacific Standard Time" * 5000))),
    case("time-zone-path", "computeinstance", "schedules.compute_start_stop.0.trigger.time_zone",
         schedules=schedules(schedule(time_zone="../../etc/passwd"))),
    case("time-zone-not-a-string", "computeinstance", "schedules.compute_start_stop.0.trigger.time_zone",
         schedules=schedules(schedule(time_zone=["UTC"]))),
    case("tier-camel-unknown", "amlcompute", "tier", tier="LowCost"),
    case("ssh-settings", "amlcompute", "ssh_settings", ssh_settings={"admin_username": "azureuser", "admin_password": "pw-1234567"}),
    case("host-unknown", "amlcompute", "kubernetes_compute", kubernetes_compute="nowhere"),
    case("host-not-a-string", "amlcompute", "kubernetes_compute", kubernetes_compute=["k8s"]),
    case("schedule-unknown-field", "computeinstance", "schedules.compute_start_stop.0.trigger.every",
         schedules=schedules(schedule(every="day"))),
    case("bad-start-time", "computeinstance", "schedules.compute_start_stop.0.trigger.start_time",
         schedules=schedules(schedule(start_time="tomorrow"))),
    case("unknown-action", "computeinstance", "schedules.compute_start_stop.0.action",
         schedules=schedules({**schedule(), "action": "reboot"})),
    case("unknown-trigger-type", "computeinstance", "schedules.compute_start_stop.0.trigger.type",
         schedules=schedules(schedule(type="sometimes"))),
    case("recurrence-without-frequency", "computeinstance", "schedules.compute_start_stop.0.trigger.frequency",
         schedules=schedules(schedule(type="recurrence", expression=None))),
    case("recurrence-hour-24", "computeinstance", "schedules.compute_start_stop.0.trigger.schedule.hours",
         schedules=schedules(schedule(type="recurrence", expression=None, frequency="day", schedule={"hours": [24]}))),
    case("recurrence-bad-week-day", "computeinstance", "schedules.compute_start_stop.0.trigger.schedule.week_days",
         schedules=schedules(schedule(type="recurrence", expression=None, frequency="week", schedule={"week_days": ["Funday"]}))),
    case("recurrence-unknown-schedule-field", "computeinstance", "schedules.compute_start_stop.0.trigger.schedule",
         schedules=schedules(schedule(type="recurrence", expression=None, frequency="day", schedule={"seconds": [1]}))),
    case("more-than-4-schedules", "computeinstance", "schedules.compute_start_stop",
         schedules=schedules(*[schedule(expression=f"0 {hour} * * *") for hour in range(5)])),
    case("schedules-not-a-map", "computeinstance", "schedules", schedules=["0 18 * * *"]),
    # kubernetes
    case("missing-kubeconfig", "kubernetes", "kubeconfig", kubeconfig=None),
    case("kubeconfig-not-yaml", "kubernetes", "kubeconfig", kubeconfig="clusters: [unclosed"),
    case("kubeconfig-not-a-mapping", "kubernetes", "kubeconfig", kubeconfig="just a string"),
    case("kubeconfig-not-a-string", "kubernetes", "kubeconfig", kubeconfig={"kind": "Config"}),
    case("kubeconfig-without-context", "kubernetes", "kubeconfig", kubeconfig=kubeconfig(current=False)),
    case("context-not-in-kubeconfig", "kubernetes", "kubeconfig", context="prod"),
    case("server-link-local", "kubernetes", "kubeconfig", kubeconfig=kubeconfig(server="https://169.254.169.254")),
    case("server-link-local-with-user", "kubernetes", "kubeconfig", kubeconfig=kubeconfig(server="https://x@169.254.169.254:443/")),
    case("server-link-local-ipv6", "kubernetes", "kubeconfig", kubeconfig=kubeconfig(server="https://[fe80::1]:6443")),
    case("server-link-local-ipv6-no-port", "kubernetes", "kubeconfig", kubeconfig=kubeconfig(server="https://[fe80::1]/")),
    case("server-metadata-host", "kubernetes", "kubeconfig", kubeconfig=kubeconfig(server="http://metadata.google.internal")),
    case("bad-namespace", "kubernetes", "namespace", namespace="ML_Team"),
    case("bad-node-selector-key", "kubernetes", "node_selector", node_selector={"bad key": "x"}),
    case("node-selector-not-a-map", "kubernetes", "node_selector", node_selector=["gpu"]),
    # virtual machines and HDInsight (SSH hosts)
    case("missing-address", "virtualmachine", "address", address=None),
    case("address-link-local", "virtualmachine", "address", address="169.254.169.254"),
    case("address-link-local-ipv6", "virtualmachine", "address", address="fe80::1"),
    case("address-not-a-host", "virtualmachine", "address", address="not a host!"),
    case("ssh-port-0", "virtualmachine", "ssh_port", ssh_port=0),
    case("ssh-port-70000", "virtualmachine", "ssh_port", ssh_port=70000),
    case("ssh-port-not-a-number", "virtualmachine", "ssh_port", ssh_port="ssh"),
    case("no-password-or-key", "virtualmachine", "admin_password", admin_password=None),
    case("empty-password", "virtualmachine", "admin_password", admin_password=""),
    case("missing-admin-username", "virtualmachine", "admin_username", admin_username=None),
    case("bad-admin-username", "virtualmachine", "admin_username", admin_username="bad user"),
    case("key-not-a-private-key", "virtualmachine", "ssh_private_key", admin_password=None, ssh_private_key="hunter2"),
    case("key-file-path", "virtualmachine", "ssh_settings.ssh_private_key_file",
         admin_password=None, ssh_settings={"ssh_private_key_file": "~/.ssh/id_rsa"}),
    case("address-link-local", "hdinsight", "address", address="169.254.169.254"),
    case("no-password-or-key", "hdinsight", "admin_password", ssh_private_key=None),
    # attached services
    case("missing-access-token", "databricks", "access_token", access_token=None),
    case("bad-workspace-url", "databricks", "workspace_url", workspace_url="not a url"),
    case("bad-resource-id", "databricks", "resource_id", resource_id="/subscriptions/0000"),
    case("missing-account-key", "batch", "account_key", account_key=None),
    case("bad-account-name", "batch", "account_name", account_name="My_Batch"),
    case("missing-resource-id", "synapsespark", "resource_id", resource_id=None),
    case("bad-resource-id", "datalakeanalytics", "resource_id", resource_id="https://portal.azure.com/"),
    # the type itself
    pytest.param({"name": "thing"}, "type", id="missing-type"),
    pytest.param({"name": "thing", "type": "quantum"}, "type", id="unknown-type"),
    pytest.param({"name": "thing", "type": "local"}, "type", id="local-is-built-in"),
    pytest.param({"name": "thing", "type": "serverless"}, "type", id="serverless-is-not-a-record"),
    pytest.param({"name": "thing", "type": ["amlcompute"]}, "type", id="type-not-a-string"),
    pytest.param(["cpu-cluster", "amlcompute"], "", id="body-a-list"),
    pytest.param("cpu-cluster", "", id="body-a-string"),
]


@pytest.mark.parametrize("data, target", INVALID_CREATES)
def test_invalid_create_is_refused_and_changes_nothing(owner_api, workspace, data, target):
    before = counts()
    response = owner_api.post(URL, data, format="json")
    assert_error(response, 400, "ValidationError", target)
    assert counts() == before


def test_a_time_zone_with_a_nul_is_refused_at_its_field(owner_api, workspace):
    before = counts()
    data = body("computeinstance", schedules=schedules(schedule(time_zone="UTC\x00")))
    response = owner_api.post(URL, data, format="json")
    assert_error(response, 400, "InvalidBody", "schedules.compute_start_stop.0.trigger.time_zone")
    assert counts() == before


@pytest.mark.parametrize(
    "text, target",
    [
        pytest.param("name: [unclosed\ntype: amlcompute\n", "", id="not-yaml"),
        pytest.param("- name: cpu\n- type: amlcompute\n", "", id="a-list"),
        pytest.param("just words\n", "", id="a-scalar"),
        pytest.param("", "type", id="empty"),
        pytest.param("name: cpu-cluster\ntype: amlcompute\nmax_instances: lots\n", "max_instances", id="wrong-type"),
        pytest.param("name: cpu-cluster\ntype: amlcompute\nsize: Standard_NC6\n", "size", id="retired-size"),
    ],
)
def test_invalid_yaml_create_is_refused_and_changes_nothing(owner_api, workspace, text, target):
    before = counts()
    response = owner_api.post(URL, text, content_type="application/yaml")
    assert_error(response, 400, "ValidationError", target)
    assert counts() == before


@pytest.mark.parametrize("text, target", [("{not json", ""), ("[1, 2", ""), ("", "type")])
def test_malformed_json_is_refused(owner_api, workspace, text, target):
    before = counts()
    response = owner_api.post(URL, text, content_type="application/json")
    assert_error(response, 400, "ValidationError", target)
    assert counts() == before


@pytest.mark.parametrize("compute_type", ["amlcompute", "computeinstance", "kubernetes", "virtualmachine", "databricks"])
def test_duplicate_name_is_a_conflict(owner_api, workspace, owner, compute_type):
    create_compute(workspace, owner, compute_type, name="taken")
    before = counts()
    response = owner_api.post(URL, body("amlcompute", name="taken", kubernetes_compute="k8s-host"), format="json")
    error = assert_error(response, 409, "Conflict")
    assert "taken" in error["message"]
    assert counts() == before


def test_a_name_being_deleted_is_still_taken(owner_api, workspace, owner):
    from compute.services import compute_delete

    compute_delete(user=owner, compute=create_compute(workspace, owner, name="taken"))
    error = assert_error(owner_api.post(URL, body("amlcompute", name="taken"), format="json"), 409, "Conflict")
    assert "being deleted" in error["message"]


def test_the_same_name_in_another_workspace_is_fine(owner_api, workspace, owner):
    from workspaces.services import workspace_create

    other = workspace_create(user=owner, name="team-b")
    create_compute(other, owner, name="shared-name")
    assert owner_api.post(URL, body("amlcompute", name="shared-name"), format="json").status_code == 201


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(body("amlcompute", size="Standard_FX4mds"), id="FX-for-a-cluster"),
        pytest.param(body("amlcompute", size="standard_nc6s_v3"), id="size-any-case"),
        pytest.param(body("amlcompute", min_instances=3, max_instances=3), id="min-equals-max"),
        pytest.param(body("computeinstance", idle_time_before_shutdown_minutes=15), id="idle-15-minutes"),
        pytest.param(body("computeinstance", idle_time_before_shutdown_minutes=None, idle_time_before_shutdown="P3D"), id="idle-3-days"),
        pytest.param(body("computeinstance", idle_time_before_shutdown="PT30M"), id="iso-agrees-with-minutes"),
        pytest.param(body("computeinstance", schedules=schedules(*[schedule(expression=f"0 {h} * * *") for h in range(4)])), id="4-schedules"),
        pytest.param(body("kubernetes", kubeconfig=kubeconfig(context="prod", current=False), context="prod"), id="named-context"),
        pytest.param(body("kubernetes", kubeconfig=kubeconfig(server="https://[2001:db8::1]:6443")), id="ipv6-server"),
        pytest.param(body("virtualmachine", admin_password=None, ssh_private_key=PRIVATE_KEY, ssh_port=2222), id="key-only"),
        pytest.param(body("virtualmachine", admin_username=None, admin_password=None,
                          ssh_settings={"admin_username": "azureuser", "ssh_private_key": PRIVATE_KEY}), id="azure-ssh-settings"),
        pytest.param(body("amlcompute", **{"$schema": "https://azuremlschemas.azureedge.net/latest/amlCompute.schema.json",
                                           "location": "westeurope"}), id="azure-yaml-extras"),
    ],
)
def test_valid_edge_cases_are_accepted(owner_api, workspace, data):
    response = owner_api.post(URL, data, format="json")
    assert response.status_code == 201, response.json()


# PATCH: the same rules, and a refused patch leaves the record as it was


@pytest.fixture
def cluster(workspace, owner):
    return create_compute(workspace, owner, "amlcompute", name="cpu-cluster", min_instances=1, max_instances=3)


def snapshot(compute: ComputeTarget) -> dict:
    compute.refresh_from_db()
    return {field.attname: getattr(compute, field.attname) for field in compute._meta.concrete_fields}


@pytest.mark.parametrize(
    "patch, code, target",
    [
        pytest.param({"name": "renamed"}, "ImmutableField", "name", id="rename"),
        pytest.param({"type": "computeinstance"}, "ImmutableField", "type", id="change-type"),
        pytest.param({"max_instances": "x"}, "ValidationError", "max_instances", id="wrong-type"),
        pytest.param({"min_instances": 5}, "ValidationError", "min_instances", id="min-above-stored-max"),
        pytest.param({"max_instances": 0}, "ValidationError", "max_instances", id="max-zero"),
        pytest.param({"size": "Standard_NC6"}, "ValidationError", "size", id="retired-size"),
        pytest.param({"tier": "spot"}, "ValidationError", "tier", id="bad-tier"),
        pytest.param({"colour": "blue"}, "ValidationError", "colour", id="unknown-field"),
        pytest.param({"tags": "team=a"}, "ValidationError", "tags", id="tags-not-a-map"),
        pytest.param(["max_instances", 4], "ValidationError", "", id="body-a-list"),
        pytest.param({"kubernetes_compute": "nowhere"}, "ValidationError", "kubernetes_compute", id="host-unknown"),
    ],
)
def test_invalid_patch_is_refused_and_changes_nothing(owner_api, cluster, patch, code, target):
    before, events = snapshot(cluster), AuditEvent.objects.count()
    response = owner_api.patch(URL + "cpu-cluster/", patch, format="json")
    assert_error(response, 400, code, target)
    assert snapshot(cluster) == before
    assert AuditEvent.objects.count() == events


@pytest.mark.parametrize(
    "compute_type, patch, target",
    [
        ("computeinstance", {"idle_time_before_shutdown_minutes": 5}, "idle_time_before_shutdown_minutes"),
        ("computeinstance", {"size": "Standard_FX4mds"}, "size"),
        ("computeinstance", {"schedules": schedules(schedule(time_zone="Nowhere/City"))}, "schedules.compute_start_stop.0.trigger.time_zone"),
        ("kubernetes", {"kubeconfig": "clusters: [unclosed"}, "kubeconfig"),
        ("kubernetes", {"kubeconfig": kubeconfig(server="https://169.254.169.254")}, "kubeconfig"),
        ("kubernetes", {"context": "prod"}, "kubeconfig"),
        ("kubernetes", {"namespace": "Bad_NS"}, "namespace"),
        ("virtualmachine", {"address": "169.254.169.254"}, "address"),
        ("virtualmachine", {"ssh_port": 70000}, "ssh_port"),
        ("virtualmachine", {"ssh_private_key": "not a key"}, "ssh_private_key"),
        ("databricks", {"workspace_url": "nope"}, "workspace_url"),
        ("batch", {"account_name": "X"}, "account_name"),
    ],
)
def test_invalid_patch_of_each_type_changes_nothing(owner_api, workspace, owner, compute_type, patch, target):
    compute = create_compute(workspace, owner, compute_type, name="target")
    before, secrets, events = snapshot(compute), compute.secrets, AuditEvent.objects.count()
    response = owner_api.patch(URL + "target/", patch, format="json")
    assert_error(response, 400, "ValidationError", target)
    assert snapshot(compute) == before
    assert compute.secrets == secrets
    assert AuditEvent.objects.count() == events


def test_patch_with_unchanged_name_and_type_is_fine(owner_api, cluster):
    response = owner_api.patch(URL + "cpu-cluster/", {"name": "cpu-cluster", "type": "amlcompute", "max_instances": 5}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["max_instances"] == 5


def test_link_local_addresses_are_allowed_only_when_the_setting_says_so(owner_api, workspace, settings):
    settings.DOCKYARD_ALLOW_LINK_LOCAL = True
    k8s = body("kubernetes", kubeconfig=kubeconfig(server="https://169.254.169.254"))
    vm = body("virtualmachine", address="169.254.169.254")
    assert owner_api.post(URL, k8s, format="json").status_code == 201
    assert owner_api.post(URL, vm, format="json").status_code == 201


# A compute cluster's kubernetes_compute: the workspace's only kubernetes compute when none is named


def test_the_only_kubernetes_compute_hosts_a_cluster_that_names_none(owner_api, workspace):
    response = owner_api.post(URL, body("amlcompute"), format="json")
    assert response.status_code == 201 and response.json()["kubernetes_compute"] == "k8s-host"


@pytest.mark.parametrize("computes, named, words", [
    pytest.param([], None, "this workspace has none; attach one", id="none-here"),
    pytest.param(["k8s", "k8s-2"], None, "Several kubernetes computes could host this compute cluster (k8s, k8s-2)", id="several"),
    pytest.param(["k8s"], "vm", "'vm' is a virtualmachine compute; a compute cluster lives on a kubernetes compute "
                                "(the kubernetes computes here: k8s)", id="not-kubernetes"),
    pytest.param(["k8s"], "gone", "There is no compute named 'gone' in this workspace; the kubernetes computes here: k8s",
                 id="unknown"),
])
def test_a_cluster_without_a_host_is_refused_naming_the_hosts(owner_api, workspace, owner, hosted, computes, named, words):
    hosted.delete()
    for name in computes:
        host(workspace, name) if name == "k8s" else create_compute(workspace, owner, "kubernetes", name=name)
    create_compute(workspace, owner, "virtualmachine")
    before = counts()
    response = owner_api.post(URL, body("amlcompute", kubernetes_compute=named), format="json")
    error = assert_error(response, 400, "ValidationError", "kubernetes_compute")
    assert words in str(error)
    assert counts() == before


def test_a_cluster_cannot_move_to_another_kubernetes_compute(owner_api, workspace, owner, cluster):
    create_compute(workspace, owner, "kubernetes", name="k8s-2")
    before = snapshot(cluster)
    response = owner_api.patch(URL + "cpu-cluster/", {"kubernetes_compute": "k8s-2"}, format="json")
    error = assert_error(response, 400, "ImmutableField", "kubernetes_compute")
    assert "delete it and create it again there" in error["message"]
    assert snapshot(cluster) == before


def test_a_size_of_a_known_series_the_catalog_does_not_list_is_refused(owner_api, workspace):
    assert vmsizes.series_of_size("Standard_DS7_v2") is not None and vmsizes.vm_size("Standard_DS7_v2") is None
    response = owner_api.post(URL, body("amlcompute", size="Standard_DS7_v2"), format="json")
    assert "Close sizes" in str(assert_error(response, 400, "ValidationError", "size"))
