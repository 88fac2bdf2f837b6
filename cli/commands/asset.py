"""dockyard environment|model|data create | list | show | archive | restore: Azure ML's versioned assets (one group per kind)."""
import click

from ..context import State, output_option, pass_state, workspace_option
from ..documents import apply_assignments, read_text, single_document
from ..errors import ApiError, InvalidInput
from ..output import Column, field, print_item, print_list, print_written, timestamp
from ..resources.asset import AssetKind, asset_kind, name_and_version, not_found, prepared_body
from ..resources.base import workspace_not_found


def columns(kind: AssetKind) -> tuple[Column, ...]:
    what = Column("IMAGE", field("image")) if kind.noun == "environment" else Column("PATH", field("path"))
    kind_column = () if kind.noun == "environment" else (Column("TYPE", field("type")),)
    return (Column("NAME", field("name")), Column("VERSION", field("version")), *kind_column, what,
            Column("CREATED", timestamp("created_on")))


def asset_group(kind: AssetKind) -> click.Group:
    """The `dockyard <noun>` group of one kind of asset."""

    @click.group(kind.noun, help=f"{kind.noun.capitalize()} versions: register Azure ML {kind.noun} YAML, list, show, "
                                 f"archive. Jobs and deployments name one as azureml:<name>:<version> or "
                                 f"azureml:<name>@latest.")
    def group() -> None:
        pass

    @group.command("create")
    @click.option("-f", "--file", "source", required=True, metavar="FILE", help=f"Azure ML {kind.noun} YAML.")
    @click.option("--name", help="The name (overrides the file's).")
    @click.option("--version", help="The version (overrides the file's; left out: the next whole number).")
    @click.option("--set", "assignments", multiple=True, metavar="KEY=VALUE", help="Override a field (repeatable).")
    @workspace_option
    @output_option
    @pass_state
    def create(state: State, source: str, name: str | None, version: str | None, assignments: tuple[str, ...]) -> None:
        """Register a version from YAML: files it names beside it (a conda file, a local path) are read and uploaded."""
        document = single_document(read_text(source), source, f"{kind.noun} create")
        found = asset_kind(document.body)
        if found is not None and found is not kind:
            raise InvalidInput(f"{source} describes a {found.noun}: use `dockyard {found.noun} create`.",
                               code="InvalidFile")
        document.body.update({key: value for key, value in (("name", name), ("version", version)) if value})
        apply_assignments(document.body, list(assignments))
        workspace, client = state.workspace, state.client()
        try:
            body = prepared_body(client, workspace, kind, document)
            answer = client.post(kind.path(workspace), body).body
        except ApiError as error:
            raise (workspace_not_found(workspace) if error.status == 404 else error) from None
        print_written(answer, state.output, f"{kind.noun}/{answer['name']}:{answer['version']} created")

    @group.command("list")
    @click.option("--name", help="Every version of this name (else the latest of each name).")
    @click.option("--archived", is_flag=True, help="Archived versions only.")
    @workspace_option
    @output_option
    @pass_state
    def list_versions(state: State, name: str | None, archived: bool) -> None:
        """List the latest version of each name, or every version of one."""
        workspace, client = state.workspace, state.client()
        params = {key: value for key, value in (("name", name), ("archived", "true" if archived else None)) if value}
        try:
            rows = client.list_all(kind.path(workspace), params)
        except ApiError as error:
            raise (workspace_not_found(workspace) if error.status == 404 else error) from None
        print_list(rows, columns(kind), state.output, empty_message=f"No {kind.collection} in workspace '{workspace}'.")

    @group.command("show")
    @click.argument("name")
    @click.option("--version", help="The version (default: the latest; NAME@latest and NAME:V work too).")
    @workspace_option
    @output_option
    @pass_state
    def show(state: State, name: str, version: str | None) -> None:
        """Show one version."""
        name, version = name_and_version(name, version)
        workspace, client = state.workspace, state.client()
        try:
            print_item(client.get(kind.path(workspace, name, version)).body, state.output)
        except ApiError as error:
            raise not_found(client, workspace, kind, name, version, error) from None

    @group.command("archive")
    @click.argument("name")
    @click.option("--version", required=True, help="The version to archive.")
    @workspace_option
    @output_option
    @pass_state
    def archive(state: State, name: str, version: str) -> None:
        """Archive a version: it leaves lists and @latest; jobs naming it by version still run it."""
        workspace, client = state.workspace, state.client()
        try:
            client.delete(kind.path(workspace, name, version))
            answer = client.get(kind.path(workspace, name, version)).body
        except ApiError as error:
            raise not_found(client, workspace, kind, name, version, error) from None
        print_written(answer, state.output, f"{kind.noun}/{name}:{version} archived")

    @group.command("restore")
    @click.argument("name")
    @click.option("--version", required=True, help="The archived version to restore.")
    @workspace_option
    @output_option
    @pass_state
    def restore(state: State, name: str, version: str) -> None:
        """Restore an archived version: it is listed again and counts for @latest."""
        workspace, client = state.workspace, state.client()
        try:
            answer = client.post(kind.path(workspace, name, version) + "restore/", {}).body
        except ApiError as error:
            raise not_found(client, workspace, kind, name, version, error) from None
        print_written(answer, state.output, f"{kind.noun}/{name}:{version} restored")

    return group
