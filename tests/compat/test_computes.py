"""Azure ML's compute YAML, as its reference documents the shapes, posted as YAML: what Dockyard stores, or refuses and why.

The documents are written here from Azure ML's CLI (v2) reference for each compute type's YAML schema (field names and
values are facts); Dockyard-only fields (a kubeconfig, a VM's address) are added only where Azure ML finds the resource
by its Azure ID instead, and each such case says so.
"""
import pytest

from compute.models import ComputeTarget
from compute.tests.factories import PRIVATE_KEY, host, kubeconfig
from tests.compat.support import YamlRoute

URL = "/api/v1/workspaces/team-a/computes/"
SCHEMA = "https://azuremlschemas.azureedge.net/latest"
PUBLIC_KEY = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 azureuser@example"
VM_ID = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm1"
ARC_ID = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Kubernetes/connectedClusters/k8s"
ROUTE = YamlRoute(URL, (ComputeTarget,))
post, created, refused = ROUTE.post, ROUTE.created, ROUTE.refused


# --- amlcompute (compute cluster): Azure ML's published cluster files, on the workspace's kubernetes compute --------

AML_MINIMAL = f"""\
$schema: {SCHEMA}/amlCompute.schema.json
name: cpu-cluster
type: amlcompute
size: STANDARD_DS3_v2
min_instances: 0
max_instances: 2
idle_time_before_scale_down: 120
"""
# azureml-examples cli/resources/compute/: the files as published (names, sizes and values are theirs).
PUBLISHED = {
    "cluster-minimal.yml": f"$schema: {SCHEMA}/amlCompute.schema.json\nname: minimal-example\ntype: amlcompute\n",
    "cluster-basic.yml": f"""\
$schema: {SCHEMA}/amlCompute.schema.json
name: basic-example
type: amlcompute
size: STANDARD_DS3_v2
min_instances: 0
max_instances: 2
idle_time_before_scale_down: 120
""",
    "cluster-location.yml": f"""\
$schema: {SCHEMA}/amlCompute.schema.json
name: location-example
type: amlcompute
size: STANDARD_DS3_v2
min_instances: 0
max_instances: 2
idle_time_before_scale_down: 120
location: westus
""",
    "cluster-low-priority.yml": f"""\
$schema: {SCHEMA}/amlCompute.schema.json
name: low-pri-example
type: amlcompute
size: STANDARD_DS3_v2
min_instances: 0
max_instances: 2
idle_time_before_scale_down: 120
tier: low_priority
""",
}
REFUSED_PUBLISHED = {
    "cluster-ssh-password.yml": ("ssh_settings", """\
name: ssh-example
type: amlcompute
size: STANDARD_DS3_v2
min_instances: 0
max_instances: 2
idle_time_before_scale_down: 120
ssh_settings:
  admin_username: example-user
  admin_password: example-password
"""),
    "cluster-system-identity.yml": ("identity", """\
name: basic-example-sys
type: amlcompute
size: STANDARD_DS3_v2
min_instances: 0
max_instances: 2
idle_time_before_scale_down: 120
identity:
  type: system_assigned
"""),
    "cluster-user-identity.yml": ("identity", """\
name: basic-example-user
type: amlcompute
size: STANDARD_DS3_v2
min_instances: 0
max_instances: 2
idle_time_before_scale_down: 120
identity:
  type: user_assigned
  user_assigned_identities:
    - resource_id: "identity_resource_id"
"""),
}


@pytest.fixture
def kubernetes_compute(workspace):
    """The workspace's only kubernetes compute: Azure ML's files name none, so their clusters live on it."""
    return host(workspace)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_cluster_files_load_unchanged_on_the_only_kubernetes_compute(owner_api, kubernetes_compute, name):
    body = created(owner_api, PUBLISHED[name])
    assert (body["kubernetes_compute"], body["backend"], body["status"]) == ("k8s", None, {})
    assert body["size"] == "Standard_DS3_v2"  # the catalog's spelling of STANDARD_DS3_v2 (the minimal file: the default)


def test_the_published_files_fields_are_what_the_pool_gets(owner_api, kubernetes_compute):
    body = created(owner_api, PUBLISHED["cluster-low-priority.yml"])
    assert (body["min_instances"], body["max_instances"], body["idle_time_before_scale_down"], body["tier"]) == (0, 2, 120, "low_priority")
    assert created(owner_api, PUBLISHED["cluster-location.yml"])["location"] == "westus"  # kept and shown (a region)


@pytest.mark.parametrize("name", sorted(REFUSED_PUBLISHED))
def test_published_cluster_files_with_azure_vm_settings_are_refused_with_the_reason(owner_api, kubernetes_compute, name):
    field, text = REFUSED_PUBLISHED[name]
    assert "node class" in refused(owner_api, text, field)


@pytest.mark.parametrize("tier, stored", [("low_priority", "low_priority"), ("LowPriority", "low_priority"),
                                          ("dedicated", "dedicated"), ("Dedicated", "dedicated")])
def test_amlcompute_tier_in_either_spelling(owner_api, kubernetes_compute, tier, stored):
    assert created(owner_api, AML_MINIMAL + f"tier: {tier}\n")["tier"] == stored


def test_a_cluster_file_without_a_kubernetes_compute_to_live_on_is_refused(owner_api, workspace):
    assert "attach one (type: kubernetes) first" in refused(owner_api, PUBLISHED["cluster-basic.yml"], "kubernetes_compute")


@pytest.mark.parametrize("field, yaml_value", [
    ("network_settings", "\n  vnet_name: my-vnet\n  subnet: default"), ("enable_node_public_ip", " false"),
    ("ssh_public_access_enabled", " true"),
])
def test_amlcompute_azure_network_fields_are_refused_with_the_reason(owner_api, kubernetes_compute, field, yaml_value):
    assert "autoscaler" in refused(owner_api, AML_MINIMAL + f"{field}:{yaml_value}\n", field)


# --- computeinstance: schedules in both time-zone forms ----------------------------------------------------------

CI_MINIMAL = f"""\
$schema: {SCHEMA}/computeInstance.schema.json
name: minimal-example-i
type: computeinstance
size: STANDARD_DS3_v2
"""

CI_SCHEDULES = CI_MINIMAL + """\
idle_time_before_shutdown_minutes: 30
schedules:
  compute_start_stop:
    - action: stop
      trigger:
        type: cron
        start_time: "2021-03-10T21:21:07"
        time_zone: Pacific Standard Time
        expression: 0 18 * * *
    - action: start
      state: enabled
      trigger:
        type: recurrence
        frequency: week
        interval: 1
        start_time: "2021-03-10T21:21:07"
        time_zone: Europe/Berlin
        schedule:
          hours: 8
          minutes: 0
          week_days: [Monday, Tuesday, Wednesday, Thursday, Friday]
"""


def test_computeinstance_schedules_take_windows_and_iana_time_zones(owner_api, kubernetes_compute):
    body = created(owner_api, CI_SCHEDULES)
    stop, start = body["schedules"]["compute_start_stop"]
    assert (stop["trigger"]["time_zone"], stop["trigger"]["time_zone_iana"]) == ("Pacific Standard Time", "America/Los_Angeles")
    assert (start["trigger"]["time_zone"], start["trigger"]["time_zone_iana"]) == ("Europe/Berlin", "Europe/Berlin")
    assert start["trigger"]["schedule"] == {"hours": [8], "minutes": [0],
                                            "week_days": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]}
    assert (body["idle_time_before_shutdown_minutes"], body["idle_time_before_shutdown"]) == (30, "PT30M")
    assert body["backend"] is None and body["kubernetes_compute"] == "k8s"  # it runs, on the only kubernetes compute


def test_computeinstance_idle_time_as_an_iso_duration(owner_api, kubernetes_compute):
    body = created(owner_api, CI_MINIMAL + 'idle_time_before_shutdown: "PT45M"\n')
    assert body["idle_time_before_shutdown_minutes"] == 45


def test_computeinstance_unknown_time_zone_is_refused_at_its_field(owner_api, kubernetes_compute):
    message = refused(owner_api, CI_SCHEDULES.replace("Pacific Standard Time", "Atlantis Standard Time"),
                      "schedules.compute_start_stop.0.trigger.time_zone")
    assert "not a known time zone" in message


@pytest.mark.parametrize("field, yaml_value, words", [
    ("setup_scripts", "\n  startup_script:\n    path: scripts/start.sh", "Setup scripts are not run"),
    ("custom_applications", "\n  - name: rstudio\n    type: docker", "VS Code (code-server) and a terminal built in"),
    ("enable_os_patching", " true", "patched when Dockyard's instance image is updated"),
    ("ssh_settings", f"\n  ssh_key_value: {PUBLIC_KEY}", "SSH into a compute instance is not offered"),
    ("ssh_public_access_enabled", " true", "open a terminal in its JupyterLab"),
])
def test_computeinstance_fields_dockyard_does_not_offer_are_refused_with_the_reason(owner_api, kubernetes_compute, field, yaml_value, words):
    assert words in refused(owner_api, CI_MINIMAL + f"{field}:{yaml_value}\n", field)


# --- virtualmachine: Azure ML finds the VM by its resource ID; Dockyard needs its address -------------------------

VM_AZURE = f"""\
$schema: {SCHEMA}/vmCompute.schema.json
name: vm-example
type: virtualmachine
resource_id: {VM_ID}
ssh_settings:
  admin_username: azureuser
"""


def test_virtualmachine_as_azure_ml_writes_it_is_refused_with_what_to_add(owner_api, workspace):
    assert refused(owner_api, VM_AZURE + "  ssh_private_key_file: ~/.ssh/id_rsa\n", "ssh_settings.ssh_private_key_file").startswith(
        "Send the key's contents as ssh_private_key")
    assert "resource_id alone does not locate it" in refused(owner_api, VM_AZURE + "  admin_password: pw-123456\n", "address")


def test_virtualmachine_with_ssh_settings_and_an_address_is_stored(owner_api, workspace):
    key = "".join(f"    {line}\n" for line in PRIVATE_KEY.splitlines())
    body = created(owner_api, VM_AZURE + f"  ssh_port: 22\n  ssh_private_key: |\n{key}address: 10.0.0.9\n")
    assert (body["admin_username"], body["ssh_port"], body["secrets_set"], body["resource_id"]) == ("azureuser", 22, ["ssh_private_key"], VM_ID)
    assert body["backend"] is None  # jobs run on it over SSH (docs/attached-vms.md)


# --- kubernetes: attached by kubeconfig ----------------------------------------------------------------------------

K8S_AZURE = f"""\
$schema: {SCHEMA}/kubernetesCompute.schema.json
name: k8s-compute
type: Kubernetes
resource_id: {ARC_ID}
namespace: default
identity:
  type: SystemAssigned
"""


def test_kubernetes_by_azure_resource_id_is_refused_with_the_reason(owner_api, workspace):
    message = refused(owner_api, K8S_AZURE, "resource_id")
    assert "attach it with its kubeconfig" in message


def test_kubernetes_with_a_kubeconfig_is_stored_and_runs_work(owner_api, workspace):
    config = "".join(f"  {line}\n" for line in kubeconfig().splitlines())
    body = created(owner_api, f"name: k8s-compute\ntype: Kubernetes\nnamespace: ml\nnode_selector:\n  pool: gpu\nkubeconfig: |\n{config}")
    assert (body["type"], body["namespace"], body["node_selector"], body["backend"]) == ("kubernetes", "ml", {"pool": "gpu"}, None)
    assert body["secrets_set"] == ["kubeconfig"]


def test_kubernetes_identity_is_refused_with_the_reason(owner_api, workspace):
    config = "".join(f"  {line}\n" for line in kubeconfig().splitlines())
    message = refused(owner_api, f"name: k8s-compute\ntype: kubernetes\nidentity:\n  type: SystemAssigned\nkubeconfig: |\n{config}",
                      "identity")
    assert "never with an Azure managed identity" in message


def test_work_sent_to_a_compute_instance_is_refused_with_the_reason_not_queued(owner_api, kubernetes_compute):
    created(owner_api, CI_MINIMAL.replace("minimal-example-i", "cpu-cluster"))
    job = "command: echo hello\nenvironment:\n  image: python:3.11-slim\ncompute: azureml:cpu-cluster\n"
    response = owner_api.post("/api/v1/workspaces/team-a/jobs/", job, content_type="application/yaml")
    assert response.status_code == 400, response.json()
    assert "without a backend here yet" in response.json()["error"]["details"][0]["message"]
    endpoint = "name: fraud\nauth_mode: key\ncompute: azureml:cpu-cluster\n"
    response = owner_api.post("/api/v1/workspaces/team-a/online-endpoints/", endpoint, content_type="application/yaml")
    assert response.status_code == 400, response.json()
    assert "run on kubernetes computes or local" in response.json()["error"]["details"][0]["message"]
