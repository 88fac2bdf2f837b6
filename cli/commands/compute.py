"""dockyard compute list | show | create | delete."""
from urllib.parse import urlsplit

import click

from ..client import ApiClient, path_of
from ..context import State, output_option, pass_state, workspace_option
from ..documents import COMPUTE_TYPES, apply_assignments, compute_body, load_documents
from ..errors import EXIT_USAGE, ApiError, InvalidInput
from ..output import Column, field, print_item, print_list, print_written, timestamp


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
    return f"{row.get('min_instances', 0)}-{row.get('max_instances', 1)}"


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


def computes_path(workspace: str, name: str | None = None) -> str:
    return path_of("workspaces", workspace, "computes", *([name] if name else []))


def not_found_in_workspace(client: ApiClient, workspace: str, name: str, error: ApiError) -> ApiError:
    """Turn the API's bare 404 into which one is missing: the workspace or the compute."""
    if error.status != 404:
        return error
    try:
        client.get(path_of("workspaces", workspace))
    except ApiError as workspace_error:
        if workspace_error.status == 404:
            return ApiError(404, f"Workspace '{workspace}' was not found, or you are not a member of it.", code="NotFound")
        return workspace_error
    return ApiError(404, f"Compute '{name}' was not found in workspace '{workspace}'.", code="NotFound")


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
    print_item(item, state.output)


def single_document(source: str):
    documents = load_documents(source)
    if len(documents) != 1:
        raise InvalidInput(
            f"{source} holds {len(documents)} documents; `compute create` takes one (use `dockyard apply` for several).",
            code="InvalidFile", exit_code=EXIT_USAGE,
        )
    if not isinstance(documents[0].body, dict):
        raise InvalidInput(f"{source} is not a YAML mapping.", code="InvalidFile")
    return documents[0]


@compute.command("create")
@click.option("-f", "--file", "source", required=True, metavar="FILE", help="Compute YAML (`-` for standard input).")
@click.option("--set", "assignments", multiple=True, metavar="KEY=VALUE", help="Override a field, e.g. max_instances=4.")
@workspace_option
@output_option
@pass_state
def create_compute(state: State, source: str, assignments: tuple[str, ...]) -> None:
    """Create a compute from an Azure ML-style YAML file."""
    document = single_document(source)
    apply_assignments(document.body, list(assignments))
    if document.body.get("type") not in COMPUTE_TYPES:
        raise InvalidInput(
            f"`type` must be one of: {', '.join(COMPUTE_TYPES)} (got {document.body.get('type')!r}).", target="type",
        )
    workspace = state.workspace
    client = state.client()
    body = compute_body(document)
    try:
        created = client.post(computes_path(workspace), body).body
    except ApiError as error:
        raise not_found_in_workspace(client, workspace, body.get("name", ""), error) from None
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
