"""`compute attach`, instance types and nodes: the CLI against the live server and the fake Kubernetes API server.

No Celery worker runs in these tests: `worker` stands in for one. The API enqueues reconciles after commit
(`.delay(pk)`); the fixture runs them in a thread, one at a time under the row lock, as `compute.tasks` does.
"""
import contextlib
import queue
import threading
from pathlib import Path

import pytest
import yaml

from cli.tests.support import write_yaml
from compute import reconcile, tasks
from compute.models import Cluster, ComputeTarget, InstanceType
from compute.services import compute_create
from compute.tests.factories import host
from controlplane.kube import client as kube

pytestmark = pytest.mark.django_db(transaction=True)

SEED = Path(__file__).resolve().parents[2] / "compute" / "tests" / "data"
INSTANCE_TYPE_FILE = SEED / "my_instance_type.yaml"
INSTANCE_TYPE_LIST_FILE = SEED / "my_instance_type_list.yaml"
GROUP = "amlarc.azureml.com"


class Worker:
    """Runs the reconcile tasks the API enqueues, in a thread, in order; `hold()` keeps them waiting."""

    def __init__(self):
        self.tasks: queue.Queue = queue.Queue()
        self.released = threading.Event()
        self.released.set()
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._loop, name="fake-celery-worker", daemon=True)
        self.thread.start()

    def delay_for(self, model, action):
        return lambda pk, *args, **kwargs: self.tasks.put((model, action, pk))

    def _loop(self) -> None:
        from django.db import connections

        try:
            while (task := self.tasks.get()) is not None:
                try:
                    self.released.wait()
                    self._run(*task)
                except BaseException as exc:  # reported by the fixture's teardown
                    self.errors.append(exc)
                finally:
                    self.tasks.task_done()
        finally:
            connections.close_all()

    @staticmethod
    def _run(model, action, pk) -> None:
        """`controlplane.reconciling.locked_run` without Celery: the row lock, and a transient error keeps the status written."""
        from django.db import transaction

        with transaction.atomic():
            row = model.objects.select_for_update().filter(pk=pk).first()
            if row is None:
                return
            with contextlib.suppress(kube.KubeTransient):  # Celery would retry it later
                action(row)

    def drain(self) -> None:
        self.tasks.join()

    @contextlib.contextmanager
    def hold(self):
        """Enqueued tasks wait until the block ends (and have run when it has)."""
        self.released.clear()
        try:
            yield
        finally:
            self.released.set()
            self.drain()

    def resync(self) -> None:
        """What the periodic resync does for every cluster: drift, imports, garbage, nodes; then reconcile what is behind."""
        for pk in Cluster.objects.values_list("pk", flat=True):
            self.tasks.put((Cluster, self._sync, pk))
        self.drain()  # a sync enqueues its reconciles before it is done, so one drain waits for them too

    def _sync(self, cluster) -> None:
        for pk in reconcile.sync_cluster(cluster):
            self.tasks.put((InstanceType, reconcile.reconcile_instance_type, pk))

    def stop(self) -> None:
        self.released.set()
        self.tasks.put(None)
        self.thread.join(timeout=30)


@pytest.fixture(autouse=True)
def fresh_kube_clients():
    kube._clients.clear()
    yield
    kube._clients.clear()


@pytest.fixture
def worker(dockyard, monkeypatch):
    """Stands in for Celery; set up after the database, stopped before it is flushed."""
    worker = Worker()
    monkeypatch.setattr(tasks.reconcile_compute, "delay", worker.delay_for(ComputeTarget, reconcile.reconcile_compute))
    monkeypatch.setattr(tasks.reconcile_instance_type, "delay", worker.delay_for(InstanceType, reconcile.reconcile_instance_type))
    monkeypatch.setattr(tasks.sync_cluster, "delay", worker.delay_for(Cluster, worker._sync))
    yield worker
    worker.drain()
    worker.stop()
    assert not worker.errors, worker.errors


@pytest.fixture
def cluster(fake_kube):
    """The fake cluster, with a team-a namespace: 2 CPU nodes (8 cpu, 32Gi) and gpu-node-0 (4 GPUs)."""
    fake_kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
    return fake_kube


@pytest.fixture
def kube_file(cluster, tmp_path) -> Path:
    """k8s.yml as users write it, with its kubeconfig file next to it."""
    (tmp_path / "kube").mkdir()
    cluster.write_kubeconfig(tmp_path / "kube" / "config.yaml")
    return write_yaml(tmp_path / "k8s.yml", {
        "$schema": "https://azuremlschemas.azureedge.net/latest/kubernetesCompute.schema.json",
        "name": "k8s", "type": "kubernetes", "namespace": "team-a", "kubeconfig_file": "kube/config.yaml",
    })


@pytest.fixture
def k8s(owner, workspace, cluster, worker) -> ComputeTarget:
    """A kubernetes compute `k8s`, attached and checked (created server-side, reconciled by the worker)."""
    data = {"name": "k8s", "type": "kubernetes", "namespace": "team-a", "kubeconfig": cluster.kubeconfig_yaml()}
    compute = compute_create(user=owner, workspace=workspace, data=data)
    worker.drain()
    compute.refresh_from_db()
    assert compute.provisioning_state == "Succeeded", compute.provisioning_errors
    return compute


def crs(fake_kube) -> dict:
    return {cr["metadata"]["name"]: cr for cr in fake_kube.list("instancetypes", group=GROUP)}


def table(result) -> list[list[str]]:
    assert result.exit_code == 0, result.stderr
    return [line.split() for line in result.stdout.splitlines()]


# compute attach


def test_attach_from_a_file_waits_until_the_cluster_is_checked(dockyard, worker, workspace, kube_file, cluster):
    result = dockyard("compute", "attach", "-f", str(kube_file))

    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == ["compute/k8s created", "compute/k8s Creating", "compute/k8s Succeeded"]
    compute = ComputeTarget.objects.get(workspace=workspace, name="k8s")
    assert (compute.provisioning_state, compute.properties["namespace"], compute.properties["server"]) == ("Succeeded", "team-a", cluster.url)
    assert cluster.get("customresourcedefinitions", f"instancetypes.{GROUP}", group="apiextensions.k8s.io")
    assert dockyard.json("compute", "show", "k8s")["provisioning_state"] == "Succeeded"


def test_attach_with_options_prints_progress_on_stderr_and_the_compute_as_json(dockyard, worker, cluster, tmp_path):
    kubeconfig = cluster.write_kubeconfig(tmp_path / "fake.kubeconfig")

    result = dockyard("compute", "attach", "--name", "k8s-opts", "--kubeconfig", str(kubeconfig), "--namespace", "team-a",
                      "--context", "fake-kube", "--node-selector", "pool=ml", "--node-selector", "zone=a", "-o", "json")

    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines() == ["compute/k8s-opts Creating", "compute/k8s-opts Succeeded"]
    shown = yaml.safe_load(result.stdout)
    assert (shown["name"], shown["provisioning_state"], shown["context"]) == ("k8s-opts", "Succeeded", "fake-kube")
    assert shown["node_selector"] == {"pool": "ml", "zone": "a"} and shown["secrets_set"] == ["kubeconfig"]


def test_attach_to_a_missing_namespace_fails_with_the_reason(dockyard, worker, workspace, kube_file):
    result = dockyard("compute", "attach", "-f", str(kube_file), "--namespace", "team-x", "--name", "k8s-x")

    assert result.exit_code == 1
    assert result.stdout.splitlines() == ["compute/k8s-x created", "compute/k8s-x Creating", "compute/k8s-x Failed"]
    assert result.stderr.splitlines() == [
        "Error (ProvisioningFailed): compute/k8s-x could not be provisioned.",
        "  NamespaceNotFound: Namespace 'team-x' does not exist; create it (kubectl create namespace team-x).",
    ]
    assert ComputeTarget.objects.get(workspace=workspace, name="k8s-x").provisioning_state == "Failed"


def test_attach_no_wait_returns_at_once_and_timeout_gives_up(dockyard, worker, workspace, kube_file):
    with worker.hold():
        no_wait = dockyard("compute", "attach", "-f", str(kube_file), "--no-wait")
        timed_out = dockyard("compute", "attach", "-f", str(kube_file), "--name", "k8s-slow", "--timeout", "1")

    assert (no_wait.exit_code, no_wait.stdout) == (0, "compute/k8s created\n")
    assert timed_out.exit_code == 1
    assert timed_out.stdout.splitlines() == ["compute/k8s-slow created", "compute/k8s-slow Creating"]
    assert timed_out.stderr == (
        "Error (WaitTimedOut): compute/k8s-slow is still Creating after 1 s; it goes on in the background "
        "(see `dockyard compute show k8s-slow`).\n"
    )
    assert set(ComputeTarget.objects.values_list("provisioning_state", flat=True)) == {"Succeeded"}


def test_attach_needs_a_name_and_a_kubeconfig_and_refuses_managed_types(dockyard, tmp_path):
    no_name = dockyard("compute", "attach", "--kubeconfig", str(tmp_path / "config"))
    assert (no_name.exit_code, no_name.stderr.splitlines()[0]) == (2, "Error (InvalidOption): Give the compute a name: --name NAME, or `name` in the file.")

    no_kubeconfig = dockyard("compute", "attach", "--name", "k8s")
    assert no_kubeconfig.exit_code == 2 and "Give the cluster's kubeconfig: --kubeconfig FILE" in no_kubeconfig.stderr

    managed = write_yaml(tmp_path / "cpu.yml", {"name": "cpu", "type": "amlcompute"})
    result = dockyard("compute", "attach", "-f", str(managed))
    assert result.exit_code == 1 and "(got 'amlcompute') (use `dockyard compute create`)." in result.stderr


# apply of instance types


def test_apply_of_the_seed_files_creates_then_leaves_them_unchanged(dockyard, k8s, worker, cluster):
    first = dockyard("apply", "-f", str(INSTANCE_TYPE_FILE), "-f", str(INSTANCE_TYPE_LIST_FILE), "--compute", "k8s")

    assert first.exit_code == 0, first.stderr
    assert first.stdout.splitlines() == [
        "instancetype/myinstancetypename created", "instancetype/cpusmall created", "instancetype/defaultinstancetype created",
    ]
    worker.drain()
    assert set(crs(cluster)) == {"myinstancetypename", "cpusmall", "defaultinstancetype"}
    assert crs(cluster)["myinstancetypename"]["spec"] == {
        "nodeSelector": {"mylabel": "mylabelvalue"},
        "resources": {"requests": {"cpu": "700m", "memory": "1500Mi"}, "limits": {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": 1}},
    }

    second = dockyard("apply", "-f", str(INSTANCE_TYPE_FILE), "-f", str(INSTANCE_TYPE_LIST_FILE), "--compute", "k8s", "-o", "json")

    assert second.exit_code == 0, second.stderr
    assert [(row["resource"], row["action"]) for row in yaml.safe_load(second.stdout)] == [
        ("instancetype/myinstancetypename", "unchanged"), ("instancetype/cpusmall", "unchanged"),
        ("instancetype/defaultinstancetype", "unchanged"),
    ]
    assert set(InstanceType.objects.values_list("generation", flat=True)) == {1}


def test_a_list_with_existing_names_is_applied_item_by_item(dockyard, k8s, worker, tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKYARD_COMPUTE", "k8s")
    assert dockyard("apply", "-f", str(INSTANCE_TYPE_LIST_FILE)).exit_code == 0
    changed = yaml.safe_load(INSTANCE_TYPE_LIST_FILE.read_text())
    changed["items"][0]["spec"]["resources"]["limits"]["cpu"] = "2"
    changed["items"].append({"metadata": {"name": "cpularge"}, "spec": {"resources": {
        "requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"cpu": "4", "memory": "8Gi"}}}})
    path = write_yaml(tmp_path / "list.yaml", changed)

    planned = dockyard("apply", "-f", str(path), "--dry-run")
    assert planned.stdout.splitlines() == [
        "instancetype/cpusmall configured (dry run: resources.limits.cpu)",
        "instancetype/defaultinstancetype unchanged (dry run)",
        "instancetype/cpularge created (dry run)",
    ]
    assert not InstanceType.objects.filter(name="cpularge").exists()

    applied = dockyard("apply", "-f", str(path))
    assert applied.exit_code == 0, applied.stderr
    assert applied.stdout.splitlines() == [
        "instancetype/cpusmall configured", "instancetype/defaultinstancetype unchanged", "instancetype/cpularge created",
    ]
    assert InstanceType.objects.get(name="cpusmall").limits == {"cpu": "2", "memory": "1Gi"}


def test_a_new_list_is_all_or_nothing_and_errors_name_the_item(dockyard, k8s, worker, tmp_path):
    good = {"metadata": {"name": "gpu-a"}, "spec": {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}}
    bad = {"metadata": {"name": "gpu-b"}, "spec": {"resources": {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}}
    path = write_yaml(tmp_path / "list.yaml", {"apiVersion": f"{GROUP}/v1alpha1", "kind": "InstanceTypeList", "items": [good, bad]})

    result = dockyard("apply", "-f", str(path), "--compute", "k8s")

    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.splitlines() == [
        f"{path}, document 1 failed",
        "Error (InvalidInstanceType): items.1.spec.resources.requests.cpu: The cpu request (2) exceeds its limit (1).",
        "Error (ApplyFailed): 1 of 1 documents failed.",
    ]
    assert not InstanceType.objects.exists()


def test_apply_names_the_missing_compute_or_the_wrong_type(dockyard, owner, workspace):
    host(workspace)  # where the instance runs
    compute_create(user=owner, workspace=workspace, data={"name": "cpu", "type": "computeinstance"})

    missing = dockyard("apply", "-f", str(INSTANCE_TYPE_FILE), "--compute", "nope")
    assert missing.exit_code == 1
    assert missing.stderr.splitlines()[:2] == [
        "instancetype/myinstancetypename failed", "Error (NotFound): Compute 'nope' was not found in workspace 'team-a'.",
    ]

    wrong = dockyard("apply", "-f", str(INSTANCE_TYPE_FILE), "--compute", "cpu")
    assert wrong.exit_code == 1
    assert wrong.stderr.splitlines()[1] == (
        "Error (UnsupportedComputeType): Compute 'cpu' is of type computeinstance; instance types belong to kubernetes computes."
    )


# instancetype list / show / delete


def test_list_shows_the_builtin_default_then_the_override_and_where_each_fits(dockyard, k8s, worker, cluster):
    before = table(dockyard("instancetype", "list", "--compute", "k8s"))
    assert before == [["NAME", "SOURCE", "STATE", "CPU", "MEMORY", "GPU", "FITS"],
                      ["defaultinstancetype", "builtin", "Succeeded", "100m/2", "2Gi/2Gi", "0", "-"]]
    dockyard("apply", "-f", str(INSTANCE_TYPE_FILE), "-f", str(INSTANCE_TYPE_LIST_FILE), "--compute", "k8s")
    worker.resync()  # the periodic resync reads the nodes

    rows = table(dockyard("instancetype", "list", "--compute", "k8s"))

    assert rows[1:] == [
        ["cpusmall", "dockyard", "Succeeded", "100m/1", "100Mi/1Gi", "0", "3"],
        ["defaultinstancetype", "dockyard", "Succeeded", "1/1", "1Gi/1Gi", "0", "3"],
        ["myinstancetypename", "dockyard", "Succeeded", "700m/1", "1500Mi/2Gi", "1", "none!"],
    ]
    cluster.label_node("gpu-node-0", {"mylabel": "mylabelvalue"})
    worker.resync()
    listed = {row["name"]: row for row in dockyard.json("instancetype", "list", "--compute", "k8s")}
    assert listed["myinstancetypename"]["fits_nodes"] == ["gpu-node-0"]


def test_the_compute_comes_from_the_flag_then_the_environment_then_the_default(dockyard, k8s, monkeypatch):
    missing = dockyard("instancetype", "list")
    assert missing.exit_code == 2 and missing.stderr.startswith("Error (NoCompute): No compute given")

    assert dockyard("configure", "--defaults", "compute=k8s").stdout.splitlines() == ["default workspace: (none)", "default compute: k8s"]
    assert "compute    k8s" in dockyard("configure").stdout
    assert [row["name"] for row in dockyard.json("instancetype", "list")] == ["defaultinstancetype"]
    monkeypatch.setenv("DOCKYARD_COMPUTE", "other")
    assert dockyard("instancetype", "list").stderr == "Error (NotFound): Compute 'other' was not found in workspace 'team-a'.\n"
    assert dockyard("instancetype", "list", "--compute", "k8s").exit_code == 0


def test_show_prints_the_rendered_cr_and_drift(dockyard, k8s, worker):
    dockyard("apply", "-f", str(INSTANCE_TYPE_FILE), "--compute", "k8s")
    worker.drain()

    shown = dockyard("instancetype", "show", "myinstancetypename", "--compute", "k8s")

    assert shown.exit_code == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].split() == ["name", "myinstancetypename"]
    assert "drift                    none: the cluster's copy matches" in lines
    rendered = shown.stdout.split("Rendered InstanceType (what Dockyard applies to the cluster):\n")[1]
    manifest = yaml.safe_load(rendered)
    assert (manifest["apiVersion"], manifest["kind"], manifest["metadata"]["name"]) == (f"{GROUP}/v1alpha1", "InstanceType", "myinstancetypename")
    assert manifest["spec"]["resources"]["limits"] == {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": 1}
    assert dockyard.json("instancetype", "show", "myinstancetypename", "--compute", "k8s")["manifest"] == manifest

    # The cluster's copy as a resync saw it after someone edited it with kubectl (before it was restored).
    edited = {**manifest["spec"], "resources": {**manifest["spec"]["resources"], "limits": {"cpu": "8", "memory": "2Gi"}}}
    InstanceType.objects.filter(name="myinstancetypename").update(observed_spec=edited)
    drifted = dockyard("instancetype", "show", "myinstancetypename", "--compute", "k8s").stdout
    assert "drift                    DRIFTED: the cluster's copy differs; the next resync restores it" in drifted
    assert yaml.safe_load(drifted.split("The cluster's copy (spec):\n")[1])["resources"]["limits"]["cpu"] == "8"

    builtin = dockyard("instancetype", "show", "defaultinstancetype", "--compute", "k8s").stdout
    assert "n/a: built in, Dockyard applies no CR for it" in builtin and "Rendered InstanceType" not in builtin
    missing = dockyard("instancetype", "show", "nope", "--compute", "k8s")
    assert (missing.exit_code, missing.stderr) == (1, "Error (NotFound): Instance type 'nope' was not found on compute 'k8s'.\n")


def test_delete_asks_then_removes_the_cr_and_the_builtin_default_returns(dockyard, k8s, worker, cluster):
    dockyard("apply", "-f", str(INSTANCE_TYPE_LIST_FILE), "--compute", "k8s")
    worker.drain()

    declined = dockyard("instancetype", "delete", "cpusmall", "--compute", "k8s", input="n\n")
    assert declined.exit_code == 1 and "cpusmall" in crs(cluster)

    with worker.hold():
        deleted = dockyard("instancetype", "delete", "cpusmall", "--compute", "k8s", "--yes")
        override = dockyard("instancetype", "delete", "defaultinstancetype", "--compute", "k8s", "--yes", "-o", "json")
    assert (deleted.exit_code, deleted.stdout) == (0, "instancetype/cpusmall deleting\n")
    assert yaml.safe_load(override.stdout)["provisioning_state"] == "Deleting"
    assert set(crs(cluster)) == set()
    assert [(row["name"], row["source"]) for row in dockyard.json("instancetype", "list", "--compute", "k8s")] == [("defaultinstancetype", "builtin")]

    builtin = dockyard("instancetype", "delete", "defaultinstancetype", "--compute", "k8s", "--yes")
    assert builtin.exit_code == 1 and builtin.stderr.startswith("Error (BuiltInInstanceType): The built-in defaultinstancetype cannot be deleted")
    missing = dockyard("instancetype", "delete", "nope", "--compute", "k8s", "--yes")
    assert missing.stderr == "Error (NotFound): Instance type 'nope' was not found on compute 'k8s'.\n"


# compute nodes


def test_compute_nodes_lists_allocatable_resources_and_the_instance_types_that_fit(dockyard, k8s, worker):
    empty = dockyard("compute", "nodes", "k8s")
    assert (empty.exit_code, empty.stdout) == (0, "")
    assert empty.stderr == "No nodes known for compute 'k8s' yet (the cluster is synced periodically).\n"
    dockyard("apply", "-f", str(INSTANCE_TYPE_FILE), "-f", str(INSTANCE_TYPE_LIST_FILE), "--compute", "k8s")
    worker.resync()

    rows = table(dockyard("compute", "nodes", "k8s"))

    assert rows == [
        ["NAME", "READY", "CPU", "MEMORY", "GPU", "INSTANCE", "TYPES"],
        ["gpu-node-0", "true", "8", "32Gi", "4", "cpusmall,defaultinstancetype"],
        ["node-0", "true", "8", "32Gi", "0", "cpusmall,defaultinstancetype"],
        ["node-1", "true", "8", "32Gi", "0", "cpusmall,defaultinstancetype"],
    ]
    nodes = dockyard.json("compute", "nodes", "k8s")
    assert nodes[0]["allocatable"]["nvidia.com/gpu"] == 4 and nodes[0]["labels"]["nvidia.com/gpu.present"] == "true"
    assert dockyard("compute", "nodes", "nope").stderr == "Error (NotFound): Compute 'nope' was not found in workspace 'team-a'.\n"
