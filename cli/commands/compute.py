"""dockyard compute list | show | create | attach | confirm-host-key | nodes | delete | start | stop | restart."""
from pathlib import Path
from urllib.parse import urlsplit

import click

from ..client import ApiClient
from ..context import State, output_option, pass_state, workspace_option
from ..documents import Document, apply_assignments, read_side_file, read_text, single_document
from ..errors import EXIT_API_ERROR, EXIT_USAGE, ApiError, CliError, InvalidInput
from ..output import Column, field, print_item, print_list, print_written, timestamp
from ..provisioning import provisioning_failed, wait_until_provisioned
from ..resources.compute import (
    COMPUTE_TYPES,
    SSH_HOST_TYPES,
    compute_body,
    computes_path,
    confirm_host_key_path,
    instance_action_path,
    nodes_path,
    not_found_in_workspace,
)
from ..resources.instancetype import GPU

# Types that are attached (they exist already) rather than created by Azure ML; `compute create` takes the others too.
ATTACHED_TYPES = ("kubernetes", "virtualmachine", "hdinsight", "databricks", "datalakeanalytics", "synapsespark", "batch")


def size_or_namespace(row: dict) -> str | None:
    """The one setting that tells computes of a type apart: VM size, namespace, host or account."""
    if row.get("type") == "kubernetes":
        return row.get("namespace")
    if row.get("address"):
        return f"{row['address']}:{row.get('ssh_port', 22)}"
    if row.get("workspace_url"):
        return urlsplit(row["workspace_url"]).hostname
    resource_id = row.get("resource_id") or ""
    return row.get("size") or row.get("account_name") or resource_id.rsplit("/", 1)[-1] or None


def instances(row: dict) -> str | None:
    if row.get("type") != "amlcompute":
        return None
    status = row.get("status") or {}
    nodes = f" ({status['current_node_count']} now)" if "current_node_count" in status else ""
    return f"{row.get('min_instances', 0)}-{row.get('max_instances', 1)}{nodes}"


def node_counts(status: dict) -> dict:
    """A compute cluster's observed pool as `compute show` prints it: the counts in one line, refusals apart."""
    if "current_node_count" not in status:
        return {"nodes": "not observed yet"}
    line = (f"current {status['current_node_count']}, target {status['target_node_count']}, idle "
            f"{status['idle_node_count']} (max {status['max_node_count']}; {status['scaling'].replace('_', ' ')}; "
            f"{status['engine']} pool {status['pool']})")
    shown = {"nodes": line}
    for index, error in enumerate(status.get("autoscaler_errors") or []):
        shown[f"autoscaler_error[{index}]"] = error
    return shown


COMPUTE_COLUMNS = (
    Column("NAME", field("name")),
    Column("TYPE", field("type")),
    Column("STATE", field("provisioning_state")),
    Column("SIZE/NAMESPACE", size_or_namespace),
    Column("INSTANCES", instances),
    Column("CREATED", timestamp("created_on")),
)


@click.group()
def compute() -> None:
    """Compute targets: clusters, instances, attached machines."""


@compute.command("list")
@click.option("--type", "compute_type", type=click.Choice(COMPUTE_TYPES), help="Only computes of this type.")
@workspace_option
@output_option
@pass_state
def list_computes(state: State, compute_type: str | None) -> None:
    """List a workspace's computes."""
    workspace = state.workspace
    client = state.client()
    try:
        rows = client.list_all(computes_path(workspace), params={"type": compute_type} if compute_type else None)
    except ApiError as error:
        raise not_found_in_workspace(client, workspace, "", error) from None
    print_list(rows, COMPUTE_COLUMNS, state.output, empty_message=f"No computes in workspace '{workspace}'.")


@compute.command("show")
@click.argument("name")
@workspace_option
@output_option
@pass_state
def show_compute(state: State, name: str) -> None:
    """Show one compute.

    Secrets are write-only: `secrets_set` names those that hold a value.
    """
    workspace = state.workspace
    client = state.client()
    try:
        item = client.get(computes_path(workspace, name)).body
    except ApiError as error:
        raise not_found_in_workspace(client, workspace, name, error) from None
    if state.output == "table" and item.get("type") == "amlcompute":
        item = {**{key: value for key, value in item.items() if key != "status"}, **node_counts(item.get("status") or {})}
    if state.output == "table" and item.get("type") == "computeinstance":
        item = {**item, **instance_state(item)}
    if state.output == "table" and item.get("type") in SSH_HOST_TYPES:
        item = {**{key: value for key, value in item.items() if key != "status"}, **host_findings(item.get("status") or {})}
    print_item(item, state.output)


def host_findings(status: dict) -> dict:
    """An SSH host's status as `compute show` prints it: the host key's standing, then the probes (when there are)."""
    key = status.get("host_key_fingerprint")
    standing = "confirmed" if status.get("host_key_confirmed") else "waiting for confirmation"
    rows = {"host_key": f"{key} ({standing})" if key else "not recorded yet"}
    if status.get("presented_host_key_fingerprint"):
        rows["presented_host_key"] = f"{status['presented_host_key_fingerprint']} (not the recorded key)"
    if "cpus" in status:
        rows.update(host_probes(status))
    return rows


def host_probes(status: dict) -> dict:
    """What the probes found: CPUs, memory, GPUs (each with its memory), OS, disk, docker, systemd."""
    gpus = status.get("gpus") or []
    listed = "; ".join(f"{gpu.get('index')}: {gpu.get('name')} ({gpu.get('memory_mb')} MiB)" for gpu in gpus)
    return {
        "cpus": status.get("cpus"), "memory": f"{status.get('memory_mb')} MiB",
        "gpus": f"{len(gpus)} ({listed})" if gpus else "0 (no nvidia-smi, or it lists none)",
        "os": f"{status.get('os') or '?'}, {status.get('arch') or '?'}, kernel {status.get('kernel') or '?'}",
        "disk_free": f"{status.get('disk_free_mb')} of {status.get('disk_total_mb')} MiB",
        "docker": status.get("docker") or "absent", "systemd": bool(status.get("systemd")),
    }


def instance_state(item: dict) -> dict:
    """A compute instance's run state as `compute show` prints it: the state with its reason, the last activity and
    what it was, what was last asked."""
    state = item.get("state") or "unknown"
    activity = item.get("last_activity")
    asked = item.get("desired_state") or "-"
    cause = f" ({item['stop_cause']})" if asked == "stopped" and item.get("stop_cause") else ""
    return {
        "state": f"{state}: {item['state_reason']}" if item.get("state_reason") else state,
        "last_activity": f"{activity} ({item.get('last_activity_source') or 'activity'})" if activity else "none seen yet",
        "desired_state": f"{asked}{cause}",
    }


def instance_action(verb: str, done: str, help_text: str):
    """`compute start|stop|restart NAME`: ask the API, print the record's state (202: it happens in the background)."""

    @compute.command(verb, help=help_text)
    @click.argument("name")
    @workspace_option
    @output_option
    @pass_state
    def run(state: State, name: str) -> None:
        workspace, client = state.workspace, state.client()
        try:
            item = client.post(instance_action_path(workspace, name, verb), {}).body
        except ApiError as error:
            raise not_found_in_workspace(client, workspace, name, error) from None
        print_written(item, state.output, f"compute/{name} {done} (now {item.get('state') or 'unknown'})")

    return run


start_instance = instance_action("start", "starting", "Start a stopped compute instance (its disk was kept).")
stop_instance = instance_action("stop", "stopping", "Stop a compute instance; its disk is kept for the next start.")
restart_instance = instance_action("restart", "restarting", "Restart a running compute instance in a new pod (same disk).")


@compute.command("create")
@click.option("-f", "--file", "source", required=True, metavar="FILE", help="Compute YAML (`-` for standard input).")
@click.option("--set", "assignments", multiple=True, metavar="KEY=VALUE", help="Override a field, e.g. max_instances=4.")
@workspace_option
@output_option
@pass_state
def create_compute(state: State, source: str, assignments: tuple[str, ...]) -> None:
    """Create a compute from an Azure ML-style YAML file."""
    document = single_document(read_text(source), source, "compute create")
    apply_assignments(document.body, list(assignments))
    if document.body.get("type") not in COMPUTE_TYPES:
        raise InvalidInput(
            f"`type` must be one of: {', '.join(COMPUTE_TYPES)} (got {document.body.get('type')!r}).", target="type",
        )
    workspace, client = state.workspace, state.client()
    created = post_compute(client, workspace, document)
    print_written(created, state.output, f"compute/{created['name']} created")


@compute.command("delete")
@click.argument("name")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@workspace_option
@output_option
@pass_state
def delete_compute(state: State, name: str, yes: bool) -> None:
    """Delete a compute.

    It shows as Deleting until what it owns is removed.
    """
    workspace = state.workspace
    client = state.client()
    if not yes:
        click.confirm(f"Delete compute '{name}' from workspace '{workspace}'?", abort=True, err=True)
    try:
        deleted = client.delete(computes_path(workspace, name)).body
    except ApiError as error:
        raise not_found_in_workspace(client, workspace, name, error) from None
    print_written(deleted, state.output, f"compute/{name} deleting")


def parse_node_selector(pairs: tuple[str, ...]) -> dict[str, str]:
    """`--node-selector pool=gpu` pairs (repeatable) as a mapping; values stay strings."""
    selector = {}
    for text in pairs:
        key, equals, value = text.partition("=")
        if not equals or not key:
            raise InvalidInput(f"'{text}' is not key=value.", target="--node-selector", code="InvalidOption", exit_code=EXIT_USAGE)
        selector[key] = value
    return selector


def attach_document(source: str | None, name: str | None, kubeconfig: str | None, context: str | None,
                    namespace: str | None, node_selector: tuple[str, ...]) -> Document:
    """The compute to attach: the file's document (type kubernetes unless it says otherwise), the flags on top."""
    document = single_document(read_text(source), source, "compute attach") if source else Document(body={}, source="options", index=1, base_dir=Path.cwd())
    body = dict(document.body)
    body.setdefault("type", "kubernetes")
    if body["type"] not in ATTACHED_TYPES:
        hint = " (use `dockyard compute create`)" if body["type"] in COMPUTE_TYPES else ""
        raise InvalidInput(
            f"`type` must be one of the attached types: {', '.join(ATTACHED_TYPES)} (got {body['type']!r}){hint}.", target="type",
        )
    options = {"context": context, "namespace": namespace, "node_selector": parse_node_selector(node_selector) or None}
    if body["type"] != "kubernetes" and (kubeconfig or any(value is not None for value in options.values())):
        raise InvalidInput("--kubeconfig, --context, --namespace and --node-selector are for kubernetes computes.",
                           code="InvalidOption", exit_code=EXIT_USAGE)
    if name:
        body["name"] = name
    body.update({key: value for key, value in options.items() if value is not None})
    if not body.get("name"):
        raise InvalidInput("Give the compute a name: --name NAME, or `name` in the file.", target="name",
                           code="InvalidOption", exit_code=EXIT_USAGE)
    if kubeconfig:
        body.pop("kubeconfig_file", None)
        body["kubeconfig"] = read_side_file(document, str(Path(kubeconfig).expanduser().resolve()), "--kubeconfig")
    if body["type"] == "kubernetes" and not any(key in body for key in ("kubeconfig", "kubeconfig_file", "in_cluster")):
        raise InvalidInput("Give the cluster's kubeconfig: --kubeconfig FILE, or `kubeconfig_file` in the file.",
                           target="kubeconfig", code="InvalidOption", exit_code=EXIT_USAGE)
    document.body = body
    return document


@compute.command("attach")
@click.option("-f", "--file", "source", metavar="FILE", help="Compute YAML, e.g. type: kubernetes with kubeconfig_file (`-` for standard input).")
@click.option("--name", help="The compute's name (overrides the file's).")
@click.option("--kubeconfig", "kubeconfig", metavar="FILE", help="The cluster's kubeconfig file (sent as its contents).")
@click.option("--context", help="The kubeconfig context to use (default: its current-context).")
@click.option("--namespace", help="The namespace jobs and endpoints run in (default: default).")
@click.option("--node-selector", "node_selector", multiple=True, metavar="KEY=VALUE",
              help="A node label every pod must match (repeatable).")
@click.option("--host-key-fingerprint", "host_key_fingerprint", metavar="SHA256:…",
              help="A virtualmachine's (or hdinsight's) host key fingerprint, known beforehand (ssh-keygen -lf on the "
                   "host): the key is confirmed if it matches, else the attach fails.")
@click.option("-y", "--yes", is_flag=True, help="Confirm the host key an SSH host presents without asking (scripts).")
@click.option("--no-wait", is_flag=True, help="Return once the record is created; do not wait for the cluster's checks.")
@click.option("--timeout", type=click.FloatRange(min=0), default=120, show_default=True, metavar="SECONDS",
              help="How long to wait for Succeeded or Failed.")
@workspace_option
@output_option
@pass_state
def attach_compute(state: State, source: str | None, name: str | None, kubeconfig: str | None, context: str | None,
                   namespace: str | None, node_selector: tuple[str, ...], host_key_fingerprint: str | None, yes: bool,
                   no_wait: bool, timeout: float) -> None:
    """Attach a Kubernetes cluster or an SSH host and wait until it is checked.

    From a file (`-f k8s.yml`: type kubernetes, name, namespace, node_selector, kubeconfig_file or
    kubeconfig, context) or from options (`--name N --kubeconfig FILE`); options override the file.
    Dockyard reaches the API server, checks the namespace and the credentials' rights and installs the
    InstanceType CRD; a failure prints each problem and exits 1.

    A virtualmachine (`-f vm.yml`: address, ssh_settings with admin_username and ssh_private_key_file or
    admin_password): Dockyard records the host key the machine presents and asks you to confirm its
    fingerprint (compare it with `ssh-keygen -lf` on the host; --yes confirms without asking,
    --host-key-fingerprint gives it beforehand), then logs in and shows the CPUs, memory and GPUs it found.
    Other attached types (hdinsight, databricks …) are accepted from a file too.
    """
    document = attach_document(source, name, kubeconfig, context, namespace, node_selector)
    if host_key_fingerprint is not None or yes:
        ssh_host_options(document, host_key_fingerprint)
    workspace, client = state.workspace, state.client()
    created = post_compute(client, workspace, document)
    label = f"compute/{created['name']}"
    table = state.output == "table"
    if table:
        click.echo(f"{label} created")
    if no_wait:
        if not table:
            print_item(created, state.output)
        return
    path = computes_path(workspace, created["name"])

    def progress(line: str) -> None:
        click.echo(line, err=not table)

    show = f"dockyard compute show {created['name']}"
    if created.get("type") in SSH_HOST_TYPES:
        waiting = wait_until_provisioned(client, path, created, label, timeout, progress, show, stop=awaits_confirmation)
        if awaits_confirmation(waiting):
            created = confirm_presented_key(client, workspace, waiting, label, yes, progress)
    final = wait_until_provisioned(client, path, created, label, timeout, progress, show)
    if not table:
        print_item(final, state.output)
    if final.get("provisioning_state") == "Failed":
        raise provisioning_failed(label, final)
    if table and final.get("type") in SSH_HOST_TYPES:
        click.echo("\n".join(f"  {key}: {value}" for key, value in host_probes(final.get("status") or {}).items()))


def ssh_host_options(document: Document, host_key_fingerprint: str | None) -> None:
    """--host-key-fingerprint and --yes are for SSH hosts; the fingerprint goes in the body."""
    if document.body.get("type") not in SSH_HOST_TYPES:
        raise InvalidInput("--host-key-fingerprint and --yes are for virtualmachine and hdinsight computes.",
                           code="InvalidOption", exit_code=EXIT_USAGE)
    if host_key_fingerprint is not None:
        document.body = {**document.body, "host_key_fingerprint": host_key_fingerprint}


def awaits_confirmation(item: dict) -> bool:
    """An SSH host whose presented key waits for an admin (first contact, nothing given to compare it with)."""
    status = item.get("status") or {}
    return item.get("provisioning_state") == "Creating" and status.get("host_key_confirmed") is False


def confirm_presented_key(client: ApiClient, workspace: str, item: dict, label: str, yes: bool, progress) -> dict:
    """Show the presented key's fingerprint and ask (unless --yes); confirmed, POST it and return the record."""
    shown = item["status"]["host_key_fingerprint"]
    progress(f"{label} presents host key {shown}")
    if not yes:
        progress("Compare it with the host's own: `ssh-keygen -lf` of its key in /etc/ssh, run on the host.")
        try:
            yes = click.confirm("Confirm?", default=False, err=True)
        except click.Abort:  # no answer (standard input closed): not confirmed
            yes = False
    if not yes:
        raise CliError(f"{label} waits for its host key to be confirmed; nothing logged in to it. Confirm it later "
                       f"with `dockyard compute confirm-host-key {item['name']} {shown}`.", code="HostKeyNotConfirmed",
                       exit_code=EXIT_API_ERROR)
    return client.post(confirm_host_key_path(workspace, item["name"]), {"fingerprint": shown}).body


@compute.command("confirm-host-key")
@click.argument("name")
@click.argument("fingerprint")
@workspace_option
@output_option
@pass_state
def confirm_host_key(state: State, name: str, fingerprint: str) -> None:
    """Confirm the host key an SSH host (virtualmachine, hdinsight) presented: on first contact, or after the
    host was reinstalled and presents a new one.

    FINGERPRINT is the one `compute show NAME` prints (SHA256:…); compare it with `ssh-keygen -lf` on the host
    first. Dockyard then logs in with that key pinned and probes the host.
    """
    workspace, client = state.workspace, state.client()
    try:
        item = client.post(confirm_host_key_path(workspace, name), {"fingerprint": fingerprint}).body
    except ApiError as error:
        raise not_found_in_workspace(client, workspace, name, error) from None
    print_written(item, state.output, f"compute/{name} host key {fingerprint} confirmed (now {item.get('provisioning_state')})")


def node_gpus(row: dict) -> object:
    return (row.get("allocatable") or {}).get(GPU) or 0


NODE_COLUMNS = (
    Column("NAME", field("name")),
    Column("READY", field("ready")),
    Column("CPU", lambda row: (row.get("allocatable") or {}).get("cpu")),
    Column("MEMORY", lambda row: (row.get("allocatable") or {}).get("memory")),
    Column("GPU", node_gpus),
    Column("INSTANCE TYPES", lambda row: ",".join(row.get("instance_types") or []) or None),
)


@compute.command("nodes")
@click.argument("name")
@workspace_option
@output_option
@pass_state
def list_nodes(state: State, name: str) -> None:
    """List a kubernetes compute's nodes and the instance types each can host.

    Readiness, allocatable CPU, memory and GPUs, and the instance types a pod of which fits. Nodes are as of the cluster's last sync (Dockyard resyncs attached clusters periodically).
    """
    workspace = state.workspace
    client = state.client()
    try:
        rows = client.list_all(nodes_path(workspace, name))
    except ApiError as error:
        raise not_found_in_workspace(client, workspace, name, error) from None
    print_list(rows, NODE_COLUMNS, state.output, empty_message=f"No nodes known for compute '{name}' yet (the cluster is synced periodically).")


def post_compute(client: ApiClient, workspace: str, document) -> dict:
    """Create a compute from a loaded document; a 404 says whether the workspace is missing or hidden."""
    body = compute_body(document)
    try:
        return client.post(computes_path(workspace), body).body
    except ApiError as error:
        raise not_found_in_workspace(client, workspace, body.get("name", ""), error) from None
