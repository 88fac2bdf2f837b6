"""dockyard online-deployment create | update | show | list | delete | get-logs: the model servers behind an endpoint."""
import copy
from pathlib import Path

import click

from ..client import ApiClient, Response
from ..context import State, output_option, pass_state, workspace_option
from ..documents import apply_assignments, read_text, single_document
from ..errors import EXIT_USAGE, ApiError, InvalidInput
from ..output import Column, field, print_list, print_shown, print_structured, print_written, timestamp
from ..provisioning import provisioning_failed, wait_until_provisioned
from ..resources.job import job_yaml
from ..resources.online_deployment import (
    changed_keys,
    deployment_not_found_on_endpoint,
    deployment_patch,
    deployment_view,
    deployments_path,
    instance_type_cell,
    ready_cell,
    with_code_uploaded,
)
from ..resources.online_endpoint import endpoint_not_found_in_workspace, endpoints_path, refuse_other_kind

DEFAULT_TIMEOUT = 600


def label_of(endpoint: str, name: str) -> str:
    return f"online-deployment/{endpoint}/{name}"


def endpoint_option(required: bool = True):
    return click.option("-e", "--endpoint-name", "endpoint", required=required, metavar="ENDPOINT",
                        help="The online endpoint the deployment belongs to" + ("." if required else " (default: the file's endpoint_name)."))


def wait_options(command):
    command = click.option("--timeout", type=click.FloatRange(min=0), default=DEFAULT_TIMEOUT, show_default=True, metavar="SECONDS",
                           help="How long to wait for Succeeded or Failed.")(command)
    return click.option("--no-wait", is_flag=True, help="Return once the API took the change; do not wait for the server to be up.")(command)


@click.group("online-deployment")
def online_deployment() -> None:
    """Online deployments: a model server (scoring script, environment, instance type) behind an endpoint.

    `dockyard online-deployment create -f blue.yml --all-traffic` creates one, waits until it serves and sends it
    all the endpoint's traffic; `update NAME -e EP --set instance_count=2` scales it; `get-logs` shows its output.
    """


def read_deployment(client: ApiClient, workspace: str, endpoint: str, name: str) -> Response:
    try:
        return client.get(deployments_path(workspace, endpoint, name))
    except ApiError as error:
        raise deployment_not_found_on_endpoint(client, workspace, endpoint, name, error) from None


def wait_for(state: State, client: ApiClient, endpoint: str, item: dict, timeout: float) -> dict:
    """Wait until the deployment serves (Succeeded) or Failed, printing each state; Failed exits 1 with its errors."""
    table = state.output == "table"
    name, label = item["name"], label_of(endpoint, item["name"])
    path = deployments_path(state.workspace, endpoint, name)
    show = f"dockyard online-deployment show {name} -e {endpoint}"
    final = wait_until_provisioned(client, path, item, label, timeout, lambda line: click.echo(line, err=not table), show)
    if final.get("provisioning_state") == "Failed":
        if not table:
            print_structured(final, state.output)
        raise provisioning_failed(label, final)
    return final


def send_all_traffic(state: State, client: ApiClient, endpoint: str, name: str) -> None:
    """`--all-traffic`: the endpoint's whole traffic split becomes {name: 100}."""
    try:
        client.patch(endpoints_path(state.workspace, endpoint), {"traffic": {name: 100}})
    except ApiError as error:
        raise endpoint_not_found_in_workspace(client, state.workspace, endpoint, error) from None
    click.echo(f"online-endpoint/{endpoint} traffic {name}=100", err=state.output != "table")


@online_deployment.command("create")
@click.option("-f", "--file", "source", required=True, metavar="FILE", help="Online deployment YAML (`-` for standard input).")
@click.option("--name", help="The deployment's name (overrides the file's).")
@endpoint_option(required=False)
@click.option("--set", "assignments", multiple=True, metavar="KEY=VALUE",
              help="Override a field, e.g. instance_count=2 or environment_variables.MODE=fast (repeatable).")
@click.option("--all-traffic", is_flag=True, help="Once it serves, send it all the endpoint's traffic (blue/green cut-over).")
@wait_options
@workspace_option
@output_option
@pass_state
def create_deployment(state: State, source: str, name: str | None, endpoint: str | None, assignments: tuple[str, ...],
                      all_traffic: bool, no_wait: bool, timeout: float) -> None:
    """Create a deployment from Azure ML deployment YAML and wait until it serves.

    The YAML is sent as written (--name, --endpoint-name and --set change fields first). The CLI then prints each
    provisioning state until Succeeded (exit 0) or Failed (exit 1, with the reasons); --no-wait returns at once.
    --all-traffic moves all the endpoint's traffic to it once it serves (with --no-wait: at once).
    """
    text = read_text(source)
    document = single_document(text, source, "online-deployment create")
    body = document.body
    refuse_other_kind(body, "online-deployment", source)
    if name:
        body["name"] = name
    if endpoint and body.get("endpoint_name") not in (None, endpoint):
        body["endpoint_name"] = endpoint
    endpoint = endpoint or body.get("endpoint_name")
    if not isinstance(endpoint, str) or not endpoint:
        raise InvalidInput("Name the endpoint: --endpoint-name EP, or endpoint_name in the file.", target="endpoint_name",
                           code="InvalidOption", exit_code=EXIT_USAGE)
    apply_assignments(body, list(assignments))
    workspace, client = state.workspace, state.client()
    with_code_uploaded(body, document.base_dir, client, workspace)  # code_configuration.code next to the YAML file
    try:
        created = client.post_yaml(deployments_path(workspace, endpoint), job_yaml(text, body)).body
    except ApiError as error:
        raise deployment_not_found_on_endpoint(client, workspace, endpoint, None, error) from None
    table = state.output == "table"
    if table:
        click.echo(f"{label_of(endpoint, created['name'])} created")
    final = created if no_wait else wait_for(state, client, endpoint, created, timeout)
    if all_traffic:
        send_all_traffic(state, client, endpoint, created["name"])
    if not table:
        print_structured(final, state.output)


def deployment_update_document(source: str | None, name: str | None, endpoint: str | None) -> tuple[str, str, dict]:
    """The deployment's name and endpoint (arguments, else the file's) and the -f document's fields."""
    body: dict = {}
    if source is not None:
        body = single_document(read_text(source), source, "online-deployment update").body
        refuse_other_kind(body, "online-deployment", source)
    if name and body.get("name") not in (None, name):
        raise InvalidInput(f"{source} is deployment '{body['name']}', not '{name}'.", target="name", code="InvalidOption",
                           exit_code=EXIT_USAGE)
    if endpoint:
        body.pop("endpoint_name", None)  # --endpoint-name overrides the file's, as for `create`
    name, endpoint = name or body.get("name"), endpoint or body.get("endpoint_name")
    if not name or not endpoint:
        raise InvalidInput("Name the deployment and its endpoint: NAME --endpoint-name EP (or name and endpoint_name in -f FILE).",
                           target="name" if not name else "endpoint_name", code="InvalidOption", exit_code=EXIT_USAGE)
    return name, endpoint, body


@online_deployment.command("update")
@click.argument("name", required=False)
@endpoint_option(required=False)
@click.option("-f", "--file", "source", metavar="FILE", help="Deployment YAML with the fields to set.")
@click.option("--set", "assignments", multiple=True, metavar="KEY=VALUE",
              help="Set a field, e.g. instance_count=2 or request_settings.request_timeout_ms=10000 (repeatable).")
@wait_options
@workspace_option
@output_option
@pass_state
def update_deployment(state: State, name: str | None, endpoint: str | None, source: str | None, assignments: tuple[str, ...],
                      no_wait: bool, timeout: float) -> None:
    """Change a deployment (instance count, environment variables, probes …) and wait until it serves again.

    Fields the file leaves out keep their values; the whole result is checked again by the API (instance type
    limits included). Prints each state until Succeeded; --no-wait returns at once.
    """
    name, endpoint, document = deployment_update_document(source, name, endpoint)
    workspace, client = state.workspace, state.client()
    base_dir = Path.cwd() if source in (None, "-") else Path(source).expanduser().resolve().parent
    with_code_uploaded(document, base_dir, client, workspace)
    label = label_of(endpoint, name)
    table = state.output == "table"
    for attempt in (1, 2):
        current = read_deployment(client, workspace, endpoint, name)
        patch = deployment_patch(current.body, document, list(assignments))
        if not patch:
            if table:
                click.echo(f"{label} unchanged")
            else:
                print_structured(current.body, state.output)
            return
        try:
            updated = client.patch(deployments_path(workspace, endpoint, name), patch, etag=current.etag).body
        except ApiError as error:
            if error.status != 412 or attempt == 2:
                raise deployment_not_found_on_endpoint(client, workspace, endpoint, name, error) from None
            continue  # it changed between our read and our write (If-Match refused it): read it again, once
        changes = changed_keys(deployment_view(current.body), deployment_view(updated))
        if table:
            click.echo(f"{label} updated ({', '.join(changes)})" if changes else f"{label} unchanged")
        final = updated if no_wait or not changes else wait_for(state, client, endpoint, updated, timeout)
        if not table:
            print_structured(final, state.output)
        return


@online_deployment.command("show")
@click.argument("name")
@endpoint_option()
@workspace_option
@output_option
@pass_state
def show_deployment(state: State, name: str, endpoint: str) -> None:
    """Show one deployment: its spec, resources, state and replicas.

    The Kubernetes objects rendered for it (`manifests`) are printed with -o json|yaml.
    """
    item = read_deployment(state.client(), state.workspace, endpoint, name).body
    print_shown(item, state.output)


def share_cell(traffic: dict, mirror: dict):
    """A deployment's share of the endpoint's traffic: `90%`, `10% mirrored`, or 0%."""
    def cell(row: dict) -> str:
        name = row.get("name")
        if mirror.get(name):
            return f"{mirror[name]}% mirrored"
        return f"{traffic.get(name, 0)}%"
    return cell


@online_deployment.command("list")
@endpoint_option()
@workspace_option
@output_option
@pass_state
def list_deployments(state: State, endpoint: str) -> None:
    """List an endpoint's deployments, with each one's share of the traffic."""
    workspace, client = state.workspace, state.client()
    try:
        owner = client.get(endpoints_path(workspace, endpoint)).body
        rows = client.list_all(deployments_path(workspace, endpoint))
    except ApiError as error:
        raise endpoint_not_found_in_workspace(client, workspace, endpoint, error) from None
    columns = (
        Column("NAME", field("name")),
        Column("STATE", field("provisioning_state")),
        Column("INSTANCE TYPE", instance_type_cell),
        Column("COUNT", field("instance_count")),
        Column("READY", ready_cell),
        Column("TRAFFIC", share_cell(owner.get("traffic") or {}, owner.get("mirror_traffic") or {})),
        Column("CREATED", timestamp("created_on")),
    )
    print_list(rows, columns, state.output, empty_message=f"Online endpoint '{endpoint}' has no deployments.")


@online_deployment.command("delete")
@click.argument("name")
@endpoint_option()
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@workspace_option
@output_option
@pass_state
def delete_deployment(state: State, name: str, endpoint: str, yes: bool) -> None:
    """Delete a deployment and stop its server.

    A deployment that takes traffic (live or mirrored) cannot be deleted: move the traffic first
    (`dockyard online-endpoint update EP --traffic …`). It shows as Deleting until its server is gone.
    """
    workspace, client = state.workspace, state.client()
    if not yes:
        click.confirm(f"Delete deployment '{name}' of online endpoint '{endpoint}' (workspace '{workspace}')?", abort=True, err=True)
    try:
        deleted = client.delete(deployments_path(workspace, endpoint, name)).body
    except ApiError as error:
        raise deployment_not_found_on_endpoint(client, workspace, endpoint, name, error) from None
    print_written(deleted, state.output, f"{label_of(endpoint, name)} deleting")


@online_deployment.command("get-logs")
@click.argument("name")
@endpoint_option()
@click.option("-l", "--lines", type=click.IntRange(min=1), metavar="N", help="How many of the last lines (the API's default: 200).")
@workspace_option
@output_option
@pass_state
def deployment_logs(state: State, name: str, endpoint: str, lines: int | None) -> None:
    """Print the last lines of the deployment's server output (every replica's on Kubernetes).

    `dockyard online-deployment logs` is the same. -o json|yaml prints the lines as a list.
    """
    workspace, client = state.workspace, state.client()
    try:
        text = client.get_text(deployments_path(workspace, endpoint, name, "logs"), {"lines": lines} if lines else None)
    except ApiError as error:
        raise deployment_not_found_on_endpoint(client, workspace, endpoint, name, error) from None
    if state.output != "table":
        print_structured(text.splitlines(), state.output)
    elif text:
        click.echo(text, nl=not text.endswith("\n"))
    else:
        click.echo(f"{label_of(endpoint, name)} has written nothing yet.", err=True)


logs_alias = copy.copy(deployment_logs)
logs_alias.short_help = "The same as get-logs."
online_deployment.add_command(logs_alias, "logs")
