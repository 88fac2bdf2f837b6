"""dockyard workspace list | create | show."""
import click

from ..client import path_of
from ..context import State, output_option, pass_state
from ..output import Column, field, print_item, print_list, print_written, timestamp

WORKSPACE_COLUMNS = (
    Column("NAME", field("name")),
    Column("DISPLAY NAME", field("display_name")),
    Column("ROLE", field("role")),
    Column("CREATED BY", field("created_by")),
    Column("CREATED", timestamp("created_at")),
)


@click.group()
def workspace() -> None:
    """Workspaces: a team's computes, jobs and endpoints."""


@workspace.command("list")
@output_option
@pass_state
def list_workspaces(state: State) -> None:
    """List the workspaces you are a member of."""
    rows = state.client().list_all("workspaces/")
    print_list(rows, WORKSPACE_COLUMNS, state.output, empty_message="No workspaces.")


@workspace.command("create")
@click.argument("name")
@click.option("--display-name", default="", help="A human-friendly name.")
@click.option("--description", default="", help="What the workspace is for.")
@output_option
@pass_state
def create_workspace(state: State, name: str, display_name: str, description: str) -> None:
    """Create a workspace; you become its owner."""
    body = {"name": name, "display_name": display_name, "description": description}
    created = state.client().post("workspaces/", body).body
    print_written(created, state.output, f"workspace/{name} created")


@workspace.command("show")
@click.argument("name")
@output_option
@pass_state
def show_workspace(state: State, name: str) -> None:
    """Show one workspace."""
    print_item(state.client().get(path_of("workspaces", name)).body, state.output)

