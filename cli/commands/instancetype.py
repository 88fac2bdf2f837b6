"""dockyard instancetype list | show | delete: the instance types of a kubernetes compute's cluster."""
import click

from ..client import ApiClient
from ..context import State, compute_option, output_option, pass_state, workspace_option
from ..errors import ApiError
from ..output import Column, as_yaml, field, fields_lines, print_list, print_structured, print_written
from ..resources.compute import missing_compute
from ..resources.instancetype import (
    cpu_cell,
    fits_cell,
    gpu_cell,
    instance_types_path,
    memory_cell,
    not_found_on_compute,
)

INSTANCE_TYPE_COLUMNS = (
    Column("NAME", field("name")),
    Column("SOURCE", field("source")),
    Column("STATE", field("provisioning_state")),
    Column("CPU", cpu_cell),
    Column("MEMORY", memory_cell),
    Column("GPU", gpu_cell),
    Column("FITS", fits_cell),
)
# What `show` prints as `key  value` lines; the CR and the cluster's copy follow as YAML.
SUMMARY_FIELDS = ("name", "source", "provisioning_state", "provisioning_errors", "nodeSelector", "effective_node_selector",
                  "resources", "fits_nodes", "warnings", "created_on", "updated_on")


@click.group("instancetype")
def instancetype() -> None:
    """Instance types: named pod shapes on a kubernetes compute.

    An instance type sets CPU, memory, GPUs and a node selector for the pods of jobs and deployments.
    Create and update them with `dockyard apply -f FILE --compute NAME` (kind InstanceType or InstanceTypeList).
    """


def explained(client: ApiClient, state: State, name: str | None, error: ApiError) -> ApiError:
    """Which is missing behind a 404: the workspace, the compute, or the instance type."""
    if error.status != 404:
        return error
    if name is None:
        return missing_compute(client, state.workspace, state.compute) or error
    return not_found_on_compute(client, state.workspace, state.compute, name, error)


@instancetype.command("list")
@workspace_option
@compute_option
@output_option
@pass_state
def list_instance_types(state: State) -> None:
    """List a compute's instance types.

    `defaultinstancetype` is always there (built in unless overridden). CPU and MEMORY are request/limit; FITS is how many nodes can host one pod of it
    (`none!` when no node can today, `-` before the cluster's nodes are first synced).
    """
    client = state.client()
    try:
        rows = client.list_all(instance_types_path(state.workspace, state.compute))
    except ApiError as error:
        raise explained(client, state, None, error) from None
    print_list(rows, INSTANCE_TYPE_COLUMNS, state.output, empty_message=f"No instance types on compute '{state.compute}'.")


def drift(row: dict) -> str:
    """Whether the cluster's copy of the CR matches what Dockyard applies."""
    source, status = row.get("source"), row.get("status") or {}
    if source == "builtin":
        return "n/a: built in, Dockyard applies no CR for it"
    if source == "cluster":
        return "n/a: created on the cluster (kubectl); Dockyard follows the cluster's copy"
    if status.get("observed_spec") is None:
        return "not observed yet: the CR has not been applied"
    if status.get("drifted"):
        return "DRIFTED: the cluster's copy differs; the next resync restores it"
    return "none: the cluster's copy matches"


def yaml_blocks(row: dict) -> list[str]:
    """The rendered CR, and the cluster's copy of the spec when it drifted."""
    lines = []
    if row.get("manifest"):
        lines += ["", "Rendered InstanceType (what Dockyard applies to the cluster):", as_yaml(row["manifest"])]
    status = row.get("status") or {}
    if status.get("drifted"):
        lines += ["", "The cluster's copy (spec):", as_yaml(status.get("observed_spec"))]
    return lines


@instancetype.command("show")
@click.argument("name")
@workspace_option
@compute_option
@output_option
@pass_state
def show_instance_type(state: State, name: str) -> None:
    """Show one instance type, its rendered CR and drift.

    Its shape and state, the nodes that can host it, whether the cluster's copy drifted, and the InstanceType
    CR Dockyard applies.
    """
    client = state.client()
    try:
        row = client.get(instance_types_path(state.workspace, state.compute, name)).body
    except ApiError as error:
        raise explained(client, state, name, error) from None
    if state.output != "table":
        print_structured(row, state.output)
        return
    summary = {**{key: row.get(key) for key in SUMMARY_FIELDS if key in row}, "drift": drift(row)}
    click.echo("\n".join([*fields_lines(summary), *yaml_blocks(row)]))


@instancetype.command("delete")
@click.argument("name")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@workspace_option
@compute_option
@output_option
@pass_state
def delete_instance_type(state: State, name: str, yes: bool) -> None:
    """Delete an instance type (and its CR on the cluster).

    Deleting an override of `defaultinstancetype` brings the built-in default back.
    """
    workspace, compute = state.workspace, state.compute
    client = state.client()
    if not yes:
        click.confirm(f"Delete instance type '{name}' from compute '{compute}' (workspace '{workspace}')?", abort=True, err=True)
    try:
        deleted = client.delete(instance_types_path(workspace, compute, name)).body
    except ApiError as error:
        raise explained(client, state, name, error) from None
    print_written(deleted, state.output, f"instancetype/{name} deleting")
