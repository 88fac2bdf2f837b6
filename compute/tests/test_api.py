"""Compute targets over the API: create each type, read, change, delete; the built-in local target; catalogs."""
from datetime import UTC, date, datetime
from types import SimpleNamespace

import pytest

from compute.models import ComputeTarget
from compute.tests.factories import PRIVATE_KEY, STORED_PROPERTIES, VALID_BODIES, body, create_compute, host, kubeconfig
from controlplane.reconciling import ProvisioningState
from tests.support import assert_error
from workspaces.models import AuditEvent

URL = "/api/v1/workspaces/team-a/computes/"
INSTANCE_SHOWN = {"state", "state_reason", "state_changed_at", "last_activity", "last_activity_source", "desired_state",
                  "stop_cause", "applications"}
COMMON = {"name", "type", "description", "tags", "provisioning_state", "provisioning_errors", "backend", "secrets_set", "created_by", "created_on", "updated_on"}


@pytest.mark.parametrize(
    "compute_type, secrets",
    [
        ("kubernetes", ["kubeconfig"]),
        ("amlcompute", []),
        ("computeinstance", ["token"]),
        ("virtualmachine", ["admin_password"]),
        ("hdinsight", ["ssh_private_key"]),
        ("databricks", ["access_token"]),
        ("batch", ["account_key"]),
        ("synapsespark", []),
        ("datalakeanalytics", []),
    ],
)
def test_create_each_type(owner_api, workspace, compute_type, secrets, django_capture_on_commit_callbacks):
    fields = STORED_PROPERTIES[compute_type]  # the type's fields with their defaults filled in
    data = body(compute_type, description="made in a test", tags={"team": "a"})
    runs = compute_type in ("kubernetes", "amlcompute", "computeinstance", "virtualmachine")
    if compute_type in ("amlcompute", "computeinstance"):
        host(workspace)  # the workspace's only kubernetes compute: where the compute cluster or instance lives
    with django_capture_on_commit_callbacks() as callbacks:
        response = owner_api.post(URL, data, format="json")
    assert response.status_code == 201, response.json()
    created = response.json()
    ssh_host = {"status", "checked_at", "host_key_fingerprint"}  # the check's findings; the fingerprint null until given
    shown = {"amlcompute": {"status"}, "computeinstance": INSTANCE_SHOWN, "virtualmachine": ssh_host,
             "hdinsight": ssh_host}.get(compute_type, set())
    assert set(created) == COMMON | set(fields) | shown
    assert {key: created[key] for key in fields} == fields
    assert (created["name"], created["type"], created["description"], created["tags"]) == (data["name"], compute_type, "made in a test", {"team": "a"})
    assert (created["provisioning_state"], created["provisioning_errors"], created["created_by"]) == ("Creating", [], "olivia")
    assert created["secrets_set"] == secrets
    # Kubernetes computes, compute clusters, instances and VMs run work; every other record says it runs nothing, and why.
    assert (created["backend"] is None) is runs
    assert runs or created["backend"].startswith("Records only: ")
    assert len(callbacks) == 1  # a reconcile is enqueued once the record is committed
    compute = ComputeTarget.objects.get(workspace=workspace, name=data["name"])
    assert (compute.generation, compute.observed_generation) == (1, 0)
    assert compute.secrets == {key: data[key] if key in data else compute.secrets[key] for key in secrets}  # a token is made
    event = AuditEvent.objects.get(action="create", target_type="compute", target_name=data["name"])
    assert event.workspace == workspace and event.actor_name == "olivia"
    assert event.changes["type"] == [None, compute_type]
    assert all(event.changes[key] == "(secret changed)" for key in secrets if key in data)


def test_retrieve_and_list_show_the_same_record(owner_api, workspace, owner):
    create_compute(workspace, owner, "virtualmachine")
    retrieved = owner_api.get(URL + "vm/").json()
    listed = owner_api.get(URL).json()["results"]
    assert listed == [retrieved]


def test_list_is_sorted_by_name_with_every_type(owner_api, workspace, owner):
    for compute_type in VALID_BODIES:
        create_compute(workspace, owner, compute_type)
    rows = owner_api.get(URL).json()["results"]
    assert [row["name"] for row in rows] == sorted(body["name"] for body in VALID_BODIES.values())
    assert {row["type"] for row in rows} == set(VALID_BODIES)


def test_unknown_compute_is_404(owner_api, workspace):
    for response in (owner_api.get(URL + "nope/"), owner_api.patch(URL + "nope/", {}, format="json"), owner_api.delete(URL + "nope/")):
        assert_error(response, 404, "NotFound")


def test_kubernetes_takes_the_named_context_and_reports_its_server(owner_api, workspace):
    config = kubeconfig(context="prod", current=False, server="https://prod.example.com:6443")
    response = owner_api.post(URL, body("kubernetes", kubeconfig=config, context="prod"), format="json")
    assert response.status_code == 201, response.json()
    assert (response.json()["context"], response.json()["server"]) == ("prod", "https://prod.example.com:6443")


def test_computeinstance_iso_idle_time_is_stored_in_both_forms(owner_api, workspace):
    host(workspace)  # where the instance runs
    data = body("computeinstance", idle_time_before_shutdown_minutes=None, idle_time_before_shutdown="P1DT2H")
    created = owner_api.post(URL, data, format="json").json()
    assert (created["idle_time_before_shutdown_minutes"], created["idle_time_before_shutdown"]) == (1560, "PT1560M")


def test_computeinstance_schedules_are_normalised(owner_api, workspace):
    host(workspace)  # where the instance runs
    trigger = {"type": "recurrence", "frequency": "week", "schedule": {"hours": 18, "minutes": [0, 30], "week_days": ["monday", "Friday"]}}
    data = body("computeinstance", schedules={"compute_start_stop": [{"action": "stop", "trigger": trigger}]})
    created = owner_api.post(URL, data, format="json").json()
    [stop] = created["schedules"]["compute_start_stop"]
    assert stop["state"] == "enabled"
    assert stop["trigger"]["time_zone"] == "UTC"
    assert stop["trigger"]["schedule"] == {"hours": [18], "minutes": [0, 30], "week_days": ["Monday", "Friday"]}


def test_azure_ml_yaml_file_is_accepted_as_is(owner_api, workspace):
    text = (
        "$schema: https://azuremlschemas.azureedge.net/latest/vmCompute.schema.json\n"
        "name: vm-yaml\n"
        "type: virtualmachine\n"
        "resource_id: /subscriptions/0000/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm\n"
        "address: 10.0.0.9\n"
        "ssh_settings:\n"
        "  admin_username: azureuser\n"
        "  ssh_port: 2222\n"
        "  ssh_private_key: |\n" + "".join(f"    {line}\n" for line in PRIVATE_KEY.splitlines())
    )
    response = owner_api.post(URL, text, content_type="application/yaml")
    assert response.status_code == 201, response.json()
    created = response.json()
    assert (created["admin_username"], created["ssh_port"], created["secrets_set"]) == ("azureuser", 2222, ["ssh_private_key"])
    assert created["resource_id"].endswith("/virtualMachines/vm")
    assert "$schema" not in created


def test_patch_changes_fields_bumps_generation_and_records_what_changed(owner_api, workspace, owner, django_capture_on_commit_callbacks):
    compute = create_compute(workspace, owner, "amlcompute", max_instances=4)
    with django_capture_on_commit_callbacks() as callbacks:
        response = owner_api.patch(URL + "cpu-cluster/", {"max_instances": 8, "description": "bigger"}, format="json")
    assert response.status_code == 200, response.json()
    assert (response.json()["max_instances"], response.json()["description"]) == (8, "bigger")
    assert response.json()["provisioning_state"] == "Updating"
    compute.refresh_from_db()
    assert (compute.generation, compute.properties["max_instances"], compute.description) == (2, 8, "bigger")
    assert len(callbacks) == 1
    event = AuditEvent.objects.get(action="update", target_type="compute")
    assert event.changes == {"max_instances": [4, 8], "description": ["", "bigger"]}


def test_patch_that_changes_nothing_records_nothing(owner_api, workspace, owner):
    compute = create_compute(workspace, owner)
    events = AuditEvent.objects.count()
    response = owner_api.patch(URL + "cpu-cluster/", {"max_instances": 4}, format="json")
    assert response.status_code == 200
    compute.refresh_from_db()
    assert compute.generation == 1 and compute.provisioning_state == ProvisioningState.CREATING
    assert AuditEvent.objects.count() == events


def test_patch_of_the_kubeconfig_takes_its_current_context(owner_api, workspace, owner):
    create_compute(workspace, owner, "kubernetes")
    patch = {"kubeconfig": kubeconfig(context="blue", server="https://blue.example.com")}
    response = owner_api.patch(URL + "k8s/", patch, format="json")
    assert response.status_code == 200, response.json()
    assert (response.json()["context"], response.json()["server"]) == ("blue", "https://blue.example.com")
    event = AuditEvent.objects.get(action="update", target_type="compute")
    assert event.changes["kubeconfig"] == "(secret changed)"
    assert event.changes["server"] == ["https://10.0.0.1:6443", "https://blue.example.com"]


def test_patch_of_the_idle_time_in_either_form_replaces_both(owner_api, workspace, owner):
    create_compute(workspace, owner, "computeinstance")  # 30 minutes
    response = owner_api.patch(URL + "notebook/", {"idle_time_before_shutdown": "PT2H"}, format="json")
    assert response.status_code == 200, response.json()
    assert (response.json()["idle_time_before_shutdown_minutes"], response.json()["idle_time_before_shutdown"]) == (120, "PT120M")


def test_patch_in_yaml(owner_api, workspace, owner):
    create_compute(workspace, owner)
    response = owner_api.patch(URL + "cpu-cluster/", "max_instances: 6\ntags:\n  cost: low\n", content_type="application/yaml")
    assert response.status_code == 200, response.json()
    assert (response.json()["max_instances"], response.json()["tags"]) == (6, {"cost": "low"})


def test_delete_marks_the_record_deleting_and_reconcile_removes_it(owner_api, workspace, owner, django_capture_on_commit_callbacks):
    compute = create_compute(workspace, owner)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = owner_api.delete(URL + "cpu-cluster/")
    assert response.status_code == 202
    assert response.json()["provisioning_state"] == "Deleting"
    compute.refresh_from_db()
    assert (compute.provisioning_state, compute.generation) == ("Deleting", 2)
    assert len(callbacks) == 1
    event = AuditEvent.objects.get(action="delete", target_type="compute")
    assert (event.target_name, event.actor_name) == ("cpu-cluster", "olivia")

    from compute.tasks import reconcile_compute

    reconcile_compute(compute.pk)
    assert not ComputeTarget.objects.filter(pk=compute.pk).exists()
    assert_error(owner_api.get(URL + "cpu-cluster/"), 404, "NotFound")


def test_patch_of_a_record_being_deleted_is_a_conflict(owner_api, workspace, owner):
    create_compute(workspace, owner)
    owner_api.delete(URL + "cpu-cluster/")
    assert_error(owner_api.patch(URL + "cpu-cluster/", {"max_instances": 2}, format="json"), 409, "Conflict")


def test_delete_twice_records_one_delete(owner_api, workspace, owner):
    create_compute(workspace, owner)
    assert owner_api.delete(URL + "cpu-cluster/").status_code == 202
    assert owner_api.delete(URL + "cpu-cluster/").status_code == 202
    assert AuditEvent.objects.filter(action="delete", target_type="compute").count() == 1


# filters


@pytest.fixture
def fleet(workspace, owner):
    for compute_type in ("kubernetes", "amlcompute", "computeinstance", "virtualmachine"):
        create_compute(workspace, owner, compute_type)
    ComputeTarget.objects.filter(name="vm").update(provisioning_state=ProvisioningState.SUCCEEDED)


@pytest.mark.parametrize(
    "query, names",
    [
        ({"type": "kubernetes"}, ["k8s"]),
        ({"type": "amlcompute,computeinstance"}, ["cpu-cluster", "notebook"]),
        ({"type": " amlcompute , virtualmachine "}, ["cpu-cluster", "vm"]),
        ({"type": "batch"}, []),
        ({"provisioning_state": "Succeeded"}, ["vm"]),
        ({"provisioning_state": "Creating", "type": "virtualmachine,kubernetes"}, ["k8s"]),
        ({}, ["cpu-cluster", "k8s", "notebook", "vm"]),
    ],
)
def test_filters(owner_api, fleet, query, names):
    response = owner_api.get(URL, query)
    assert response.status_code == 200
    assert [row["name"] for row in response.json()["results"]] == names
    assert response.json()["count"] == len(names)


def test_unknown_provisioning_state_filter_is_400(owner_api, fleet):
    assert_error(owner_api.get(URL, {"provisioning_state": "Sleeping"}), 400, "ValidationError", "provisioning_state")


# the built-in local target


def test_local_is_built_in(api_as, users, local_compute):
    response = api_as("reader").get(URL + "local/")
    assert response.status_code == 200
    local = response.json()
    assert (local["name"], local["type"], local["provisioning_state"], local["secrets_set"]) == ("local", "local", "Succeeded", [])
    assert response["ETag"]


def test_local_is_404_when_turned_off(owner_api, local_compute, settings):
    settings.DOCKYARD_LOCAL_COMPUTE = False
    assert_error(owner_api.get(URL + "local/"), 404, "NotFound")


def test_local_is_404_until_staff_enable_it_for_the_workspace(owner_api, workspace):
    assert_error(owner_api.get(URL + "local/"), 404, "NotFound")


@pytest.mark.parametrize("method", ["patch", "delete"])
def test_local_cannot_be_changed_or_deleted(owner_api, local_compute, method):
    events = AuditEvent.objects.count()
    response = getattr(owner_api, method)(URL + "local/", {"description": "mine"}, format="json")
    assert_error(response, 400, "BuiltInCompute", "name")
    assert AuditEvent.objects.count() == events
    assert owner_api.get(URL + "local/").json()["description"] == "Runs on the worker's host."


# catalogs

VM_SIZES = "/api/v1/vm-sizes/"


def series(owner_api, **query) -> dict[str, dict]:
    response = owner_api.get(VM_SIZES, query)
    assert response.status_code == 200
    return {row["series"]: row for row in response.json()["results"]}


def test_vm_sizes_has_the_seeds_27_supported_series(owner_api):
    rows = series(owner_api)
    listed = {name for name, row in rows.items() if row["listed_as_supported"]}
    assert len(listed) == 27
    # retired series the seed names outside its table, and newer GPU series Azure ML's examples use
    assert set(rows) - listed == {"NV_Promo", "Av1", "NCadsA100_v4", "NCadsH100_v5", "NDisrH100_v5"}


def test_vm_sizes_retired_series_and_dates(owner_api):
    retired = {name: row["retired_on"] for name, row in series(owner_api).items() if row["retired"]}
    assert retired == {
        "NC": "2023-08-31", "NC Promo": "2023-08-31", "NCv2": "2023-08-31", "ND": "2023-08-31", "NV": "2023-08-31",
        "NV_Promo": "2023-08-31", "Av1": "2024-08-31", "HB": "2024-08-31",
    }


def test_vm_sizes_fx_is_for_clusters_only(owner_api):
    rows = series(owner_api)
    assert rows["FX"]["supported_in"] == ["compute_cluster"]
    assert all(row["supported_in"] == ["compute_cluster", "compute_instance"] for name, row in rows.items() if name != "FX")
    assert "FX" not in series(owner_api, supported_in="compute_instance")
    assert "FX" in series(owner_api, supported_in="compute_cluster")


def test_vm_sizes_min_cuda_per_gpu_architecture(owner_api):
    gpus = {name: (row["gpu_architecture"], row["min_cuda"]) for name, row in series(owner_api, gpu="true").items()}
    assert gpus == {
        "NDasrA100_v4": ("Ampere", "11.0"), "NCasT4_v3": ("Turing", "10.0"),
        "NCv3": ("Volta", "9.0"), "NDv2": ("Volta", "9.0"),
        "NCv2": ("Pascal", "9.0"), "ND": ("Pascal", "9.0"),
        "NV": ("Maxwell", "9.0"), "NVv3": ("Maxwell", "9.0"), "NV_Promo": ("Maxwell", "9.0"),
        "NC": ("Kepler", "9.0"), "NC Promo": ("Kepler", "9.0"),
        "NCadsA100_v4": ("Ampere", "11.0"), "NCadsH100_v5": ("Hopper", "11.8"), "NDisrH100_v5": ("Hopper", "11.8"),
    }
    assert all(row["min_cuda"] is None for row in series(owner_api, gpu="false").values())


def test_vm_sizes_isolated_sizes(owner_api):
    isolated = {size["name"]: (name, size["rdma"]) for name, row in series(owner_api).items() for size in row["isolated_sizes"]}
    assert isolated == {
        "Standard_M128ms": ("M", False), "Standard_F72s_v2": ("FSv2", False),
        "Standard_NC24s_v3": ("NCv3", False), "Standard_NC24rs_v3": ("NCv3", True),
    }


@pytest.mark.parametrize(
    "query, expected",
    [
        ({"series": "NCv3"}, {"NCv3"}),
        ({"series": "ncv3"}, {"NCv3"}),
        ({"series": "NC_Promo"}, {"NC Promo"}),
        ({"series": "NDA100_v4"}, {"NDasrA100_v4"}),
        ({"series": "Zv9"}, set()),
        ({"category": "high_performance_compute"}, {"H", "HB", "HBv2", "HBv3", "HC"}),
        ({"category": "Memory optimized"}, {"EAv4", "Ev3", "ESv3", "M"}),
        ({"category": "gpu", "supported_in": "compute_instance", "series": "NCasT4_v3"}, {"NCasT4_v3"}),
        ({"size": "Standard_NC6s_v3"}, {"NCv3"}),
        ({"size": "Standard_FX4mds"}, {"FX"}),
        ({"size": "Standard_Q99"}, set()),
        ({"supported_in": "somewhere"}, set()),
    ],
)
def test_vm_sizes_filters(owner_api, query, expected):
    assert set(series(owner_api, **query)) == expected


def test_vm_sizes_gpu_filter_splits_the_catalog(owner_api):
    everything, gpu, cpu = series(owner_api), series(owner_api, gpu="true"), series(owner_api, gpu="false")
    assert set(gpu) | set(cpu) == set(everything) and not set(gpu) & set(cpu)
    assert all(row["category"] == "gpu" for row in gpu.values())


def test_vm_sizes_bad_gpu_filter_is_400(owner_api):
    assert_error(owner_api.get(VM_SIZES, {"gpu": "maybe"}), 400, "BadRequest", "gpu")


def test_vm_sizes_retired_flag_follows_the_date(owner_api, monkeypatch):
    import compute.selectors

    monkeypatch.setattr(compute.selectors, "timezone", SimpleNamespace(now=lambda: datetime(2024, 1, 1, tzinfo=UTC)))
    rows = series(owner_api)
    assert rows["HB"]["retired"] is False and rows["HB"]["retired_on"] == str(date(2024, 8, 31))
    assert rows["NC"]["retired"] is True


def test_compute_types_rows(owner_api):
    response = owner_api.get("/api/v1/compute-types/")
    assert response.status_code == 200
    rows = {row["type"]: row for row in response.json()["results"]}
    assert list(rows) == [
        "local", "amlcompute", "serverless", "computeinstance", "kubernetes", "virtualmachine",
        "synapsespark", "databricks", "datalakeanalytics", "hdinsight", "batch",
    ]
    assert response.json()["count"] == 11
    assert {name for name, row in rows.items() if not row["is_record"]} == {"local", "serverless"}
    assert {name for name, row in rows.items() if row["command_jobs"]} == {
        "local", "amlcompute", "serverless", "computeinstance", "kubernetes", "virtualmachine",
    }
    assert {name for name, row in rows.items() if row["realtime_inference"]} == {"local", "serverless", "kubernetes"}
    assert {name for name, row in rows.items() if row["batch_inference"]} == {"serverless", "kubernetes"}
    assert {name for name, row in rows.items() if not row["automl"]} == {"datalakeanalytics", "hdinsight", "batch"}
    assert {name for name, row in rows.items() if row["autoscale_on_submit"]} == {"amlcompute", "serverless"}


@pytest.mark.parametrize(
    "written, stored",
    [("LowPriority", "low_priority"), ("low_priority", "low_priority"), ("LOW_PRIORITY", "low_priority"),
     ("Dedicated", "dedicated"), ("DEDICATED", "dedicated")],
)
def test_amlcompute_tier_in_any_case_is_stored_canonical(owner_api, workspace, written, stored):
    """Azure ML's schema lower-cases enum values before checking; its REST API writes LowPriority."""
    host(workspace)
    response = owner_api.post(URL, body("amlcompute", type="AmlCompute", tier=written), format="json")
    assert response.status_code == 201, response.json()
    assert (response.json()["type"], response.json()["tier"]) == ("amlcompute", stored)


def test_schedule_enums_in_any_case_are_stored_canonical(owner_api, workspace):
    host(workspace)  # where the instance runs
    trigger = {"type": "Recurrence", "frequency": "Week", "schedule": {"hours": [18], "minutes": [0], "week_days": ["MONDAY"]}}
    start_stop = [{"action": "Stop", "state": "Enabled", "trigger": trigger}]
    response = owner_api.post(URL, body("computeinstance", type="ComputeInstance", schedules={"compute_start_stop": start_stop}),
                              format="json")
    assert response.status_code == 201, response.json()
    [stop] = response.json()["schedules"]["compute_start_stop"]
    assert (stop["action"], stop["state"], stop["trigger"]["type"], stop["trigger"]["frequency"]) == ("stop", "enabled", "recurrence", "week")
    assert stop["trigger"]["schedule"]["week_days"] == ["Monday"]


def test_a_type_in_another_case_is_the_same_type_on_patch(owner_api, workspace, owner):
    create_compute(workspace, owner, "amlcompute")
    response = owner_api.patch(URL + "cpu-cluster/", {"type": "AmlCompute", "tier": "LowPriority"}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["tier"] == "low_priority"


@pytest.mark.parametrize(
    "written, iana",
    [("Pacific Standard Time", "America/Los_Angeles"), ("pacific standard time", "America/Los_Angeles"),
     ("Korea Standard Time", "Asia/Seoul"), ("UTC", "UTC"), ("Europe/Berlin", "Europe/Berlin"),
     ("W. Europe Standard Time", "Europe/Berlin")],
)
def test_schedule_time_zone_windows_or_iana_is_stored_as_written_with_its_iana_name(owner_api, workspace, written, iana):
    host(workspace)  # where the instance runs
    trigger = {"type": "cron", "expression": "0 18 * * 1-5", "time_zone": written}
    response = owner_api.post(URL, body("computeinstance", schedules={"compute_start_stop": [{"action": "stop", "trigger": trigger}]}),
                              format="json")
    assert response.status_code == 201, response.json()
    [stop] = response.json()["schedules"]["compute_start_stop"]
    assert (stop["trigger"]["time_zone"], stop["trigger"]["time_zone_iana"]) == (written, iana)
    # A later PATCH re-validates what was stored: the IANA name is derived again, not taken from the body.
    again = owner_api.patch(URL + "notebook/", {"description": "x"}, format="json")
    assert again.json()["schedules"]["compute_start_stop"][0]["trigger"]["time_zone_iana"] == iana
