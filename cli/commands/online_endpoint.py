"""dockyard online-endpoint create | update | show | list | delete | invoke | get-credentials | regenerate-keys."""
import json
import os

import click
import httpx

from ..client import ApiClient, Response, api_error
from ..context import State, output_option, pass_state, workspace_option
from ..documents import apply_assignments, read_text, single_document
from ..errors import EXIT_USAGE, ApiError, CliError, InvalidInput
from ..output import Column, field, print_list, print_shown, print_structured, print_written, timestamp
from ..resources.base import read_if_exists, workspace_not_found
from ..resources.compute import compute_name
from ..resources.job import job_yaml
from ..resources.online_endpoint import (
    KEY_TYPES,
    editable_view,
    endpoint_changes,
    endpoint_not_found,
    endpoint_not_found_in_workspace,
    endpoint_patch,
    endpoints_path,
    refuse_other_kind,
    score_path,
    shown_keys,
    traffic_cell,
)

KEY_ENV = "DOCKYARD_ENDPOINT_KEY"
DEPLOYMENT_HEADER = "azureml-model-deployment"
# A scoring request may take as long as the deployment's request_timeout_ms allows; wait longer than Dockyard does.
SCORE_READ_SECONDS = 300.0
ENDPOINT_COLUMNS = (
    Column("NAME", field("name")),
    Column("COMPUTE", lambda row: compute_name(row.get("compute")) or None),
    Column("AUTH", field("auth_mode")),
    Column("STATE", field("provisioning_state")),
    Column("TRAFFIC", traffic_cell),
    Column("DEPLOYMENTS", lambda row: ",".join(row.get("deployments") or []) or None),
    Column("CREATED", timestamp("created_on")),
)


@click.group("online-endpoint")
def online_endpoint() -> None:
    """Online endpoints: a scoring URL, its keys, and the traffic split over its deployments.

    Create one from Azure ML endpoint YAML (`dockyard online-endpoint create -f endpoint.yml`), add deployments
    with `dockyard online-deployment create -f blue.yml --all-traffic`, move traffic with
    `dockyard online-endpoint update NAME --traffic "blue=90,green=10"`, and send a request with
    `dockyard online-endpoint invoke NAME --request-file request.json`.
    """


def print_keys(keys: dict[str, str], name: str, table: bool) -> None:
    """New keys, once: on stdout for people (stdout holds the JSON otherwise), with the warning on stderr."""
    if not keys:
        return
    if table:
        width = max(len(key) for key in keys)
        for key, value in keys.items():
            click.echo(f"{key.ljust(width)}  {value}")
    click.echo(f"Warning: keep {'these keys' if len(keys) > 1 else 'this key'} now: Dockyard shows a key once, when it is made, "
               f"and never again (`dockyard online-endpoint regenerate-keys {name}` makes a new one).", err=True)


def print_endpoint_written(body: dict, output: str, message: str) -> None:
    """After a write: the message (and any new keys) for people, the endpoint for -o json|yaml."""
    print_written(body, output, message)
    print_keys(shown_keys(body), body.get("name", ""), output == "table")


@online_endpoint.command("create")
@click.option("-f", "--file", "source", required=True, metavar="FILE", help="Online endpoint YAML (`-` for standard input).")
@click.option("--name", help="The endpoint's name (overrides the file's).")
@click.option("--set", "assignments", multiple=True, metavar="KEY=VALUE",
              help="Override a field, e.g. auth_mode=aml_token or tags.team=vision (repeatable).")
@workspace_option
@output_option
@pass_state
def create_endpoint(state: State, source: str, name: str | None, assignments: tuple[str, ...]) -> None:
    """Create an online endpoint from Azure ML endpoint YAML.

    The YAML is sent as written (--name and --set change fields first). With auth_mode key (the default)
    the answer holds the endpoint's two keys: they are printed this once and never again.
    """
    text = read_text(source)
    document = single_document(text, source, "online-endpoint create")
    refuse_other_kind(document.body, "online-endpoint", source)
    if name:
        document.body["name"] = name
    apply_assignments(document.body, list(assignments))
    workspace, client = state.workspace, state.client()
    try:
        created = client.post_yaml(endpoints_path(workspace), job_yaml(text, document.body)).body
    except ApiError as error:
        raise (workspace_not_found(workspace) if error.status == 404 else error) from None
    print_endpoint_written(created, state.output, f"online-endpoint/{created['name']} created")


def read_endpoint(client: ApiClient, workspace: str, name: str) -> Response:
    try:
        return client.get(endpoints_path(workspace, name))
    except ApiError as error:
        raise endpoint_not_found_in_workspace(client, workspace, name, error) from None


def endpoint_update_document(source: str | None, name: str | None) -> tuple[str, dict]:
    """The endpoint's name and the -f document's fields (empty without -f)."""
    if source is None:
        if not name:
            raise InvalidInput("Name the endpoint: NAME, or -f FILE with a name.", target="name", code="InvalidOption",
                               exit_code=EXIT_USAGE)
        return name, {}
    document = single_document(read_text(source), source, "online-endpoint update")
    refuse_other_kind(document.body, "online-endpoint", source)
    named = document.body.get("name")
    if name and named and named != name:
        raise InvalidInput(f"{source} is endpoint '{named}', not '{name}'.", target="name", code="InvalidOption", exit_code=EXIT_USAGE)
    if not (name or named):
        raise InvalidInput("Name the endpoint: NAME, or a name in the file.", target="name", code="InvalidOption", exit_code=EXIT_USAGE)
    return name or named, document.body


@online_endpoint.command("update")
@click.argument("name", required=False)
@click.option("-f", "--file", "source", metavar="FILE", help="Endpoint YAML whose description, tags, auth_mode and traffic to set.")
@click.option("--traffic", metavar="SPLIT", help='The whole traffic split, e.g. "blue=90,green=10" ("" sends none).')
@click.option("--mirror-traffic", "mirror", metavar="SPLIT", help='Mirror a share of requests, e.g. "green=10" ("" stops it).')
@click.option("--set", "assignments", multiple=True, metavar="KEY=VALUE",
              help="Set a field, e.g. description=\"Fraud model\" or tags.team=vision (repeatable).")
@workspace_option
@output_option
@pass_state
def update_endpoint(state: State, name: str | None, source: str | None, traffic: str | None, mirror: str | None,
                    assignments: tuple[str, ...]) -> None:
    """Change an endpoint's traffic split, mirrored traffic, description, tags or auth_mode.

    --traffic replaces the whole split: the shares must total 0 or 100 and name deployments the endpoint has.
    Switching auth_mode to key prints the new keys once.
    """
    name, document = endpoint_update_document(source, name)
    workspace, client = state.workspace, state.client()
    for attempt in (1, 2):
        current = read_endpoint(client, workspace, name)
        patch = endpoint_patch(current.body, document, traffic, mirror, list(assignments))
        if not patch:
            print_endpoint_written(current.body, state.output, f"online-endpoint/{name} unchanged")
            return
        try:
            updated = client.patch(endpoints_path(workspace, name), patch, etag=current.etag).body
        except ApiError as error:
            if error.status != 412 or attempt == 2:
                raise endpoint_not_found_in_workspace(client, workspace, name, error) from None
            continue  # it changed between our read and our write (If-Match refused it): read it again, once
        changes = endpoint_changes(editable_view(updated), current.body)
        message = f"online-endpoint/{name} updated ({', '.join(changes)})" if changes else f"online-endpoint/{name} unchanged"
        print_endpoint_written(updated, state.output, message)
        return


@online_endpoint.command("show")
@click.argument("name")
@workspace_option
@output_option
@pass_state
def show_endpoint(state: State, name: str) -> None:
    """Show one endpoint: scoring URI, traffic, state, deployments.

    The objects rendered for the cluster (`manifests`) are printed with -o json|yaml.
    """
    workspace, client = state.workspace, state.client()
    item = read_endpoint(client, workspace, name).body
    print_shown(item, state.output)


@online_endpoint.command("list")
@workspace_option
@output_option
@pass_state
def list_endpoints(state: State) -> None:
    """List a workspace's online endpoints."""
    workspace, client = state.workspace, state.client()
    try:
        rows = client.list_all(endpoints_path(workspace))
    except ApiError as error:
        raise (workspace_not_found(workspace) if error.status == 404 else error) from None
    print_list(rows, ENDPOINT_COLUMNS, state.output, empty_message=f"No online endpoints in workspace '{workspace}'.")


@online_endpoint.command("delete")
@click.argument("name")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@workspace_option
@output_option
@pass_state
def delete_endpoint(state: State, name: str, yes: bool) -> None:
    """Delete an endpoint and every deployment of it (their servers are stopped).

    It shows as Deleting until its deployments are gone.
    """
    workspace, client = state.workspace, state.client()
    if not yes:
        deployments = read_endpoint(client, workspace, name).body.get("deployments") or []
        also = f" and its deployments ({', '.join(deployments)})" if deployments else ""
        click.confirm(f"Delete online endpoint '{name}'{also} from workspace '{workspace}'?", abort=True, err=True)
    try:
        deleted = client.delete(endpoints_path(workspace, name)).body
    except ApiError as error:
        raise endpoint_not_found_in_workspace(client, workspace, name, error) from None
    print_written(deleted, state.output, f"online-endpoint/{name} deleting")


def scoring_credential(client: ApiClient, workspace: str, name: str, key: str | None, token: str) -> str:
    """What goes in `Authorization: Bearer`: --key; else by the endpoint's auth_mode, $DOCKYARD_ENDPOINT_KEY or our token."""
    if key:
        return key
    from_env = os.environ.get(KEY_ENV) or None
    current = read_if_exists(client, endpoints_path(workspace, name))
    if current is None:
        if from_env:
            return from_env  # a key is enough to score: the endpoint may be another workspace's we cannot read
        raise endpoint_not_found_in_workspace(client, workspace, name, ApiError(404, "", code="NotFound"))
    if current.body.get("auth_mode") == "aml_token":
        return token
    if from_env:
        return from_env
    raise CliError(
        f"Online endpoint '{name}' takes one of its keys: pass --key KEY or set {KEY_ENV} "
        f"(keys are shown once; `dockyard online-endpoint regenerate-keys {name}` makes a new one).",
        code="NoEndpointKey", exit_code=EXIT_USAGE,
    )


def print_answer(response: httpx.Response, output: str) -> None:
    """The model's answer on stdout: as it came, or re-printed as JSON/YAML when it is JSON."""
    if output != "table":
        try:
            print_structured(response.json(), output)
            return
        except ValueError:
            pass
    text = response.text
    click.echo(text, nl=not text.endswith("\n"))


def model_failed(response: httpx.Response, deployment: str) -> CliError:
    """The deployment itself answered with an error status: its answer is the message."""
    body = response.text.strip()
    try:
        parsed = json.loads(body)
        body = parsed if isinstance(parsed, str) else json.dumps(parsed, ensure_ascii=False)
    except ValueError:
        pass
    reason = response.reason_phrase or "error"
    message = f"Deployment '{deployment}' answered {response.status_code} {reason}" + (f": {body}" if body else ".")
    return CliError(message, code="ScoringFailed")


@online_endpoint.command("invoke")
@click.argument("name")
@click.option("-r", "--request-file", "request_file", required=True, metavar="FILE",
              help="The request body, JSON as the scoring script reads it (`-` for standard input).")
@click.option("-d", "--deployment-name", "deployment", metavar="NAME",
              help="Send it to this deployment, whatever the traffic split (the azureml-model-deployment header).")
@click.option("--key", metavar="KEY", help=f"One of the endpoint's keys (default: ${KEY_ENV}; aml_token endpoints take your login).")
@workspace_option
@output_option
@pass_state
def invoke_endpoint(state: State, name: str, request_file: str, deployment: str | None, key: str | None) -> None:
    """Send a request to the endpoint and print the model's answer.

    One deployment answers, drawn by the traffic split unless --deployment-name picks it; which one is printed on
    stderr. A key endpoint takes --key or $DOCKYARD_ENDPOINT_KEY; an aml_token endpoint takes your Dockyard login.
    """
    content = read_text(request_file).encode()
    workspace, client = state.workspace, state.client()
    credential = scoring_credential(client, workspace, name, key, client.token)
    headers = {"Authorization": f"Bearer {credential}", "Content-Type": "application/json", "Accept": "application/json, */*"}
    if deployment:
        headers[DEPLOYMENT_HEADER] = deployment
    response = client.raw("POST", score_path(workspace, name), content=content, headers=headers, timeout=SCORE_READ_SECONDS)
    served_by = response.headers.get(DEPLOYMENT_HEADER)
    if response.status_code >= 400:
        if served_by:
            raise model_failed(response, served_by)
        error = api_error(response)
        if error.status == 404 and error.code == "NotFound":
            raise endpoint_not_found(workspace, name)
        raise error
    print_answer(response, state.output)
    if served_by:
        click.echo(f"Answered by deployment '{served_by}'.", err=True)


KEY_COLUMNS = (
    Column("KEY", field("key")),
    Column("PREFIX", lambda row: f"{row['prefix']}…" if row.get("prefix") else None),
    Column("ROTATED", timestamp("rotated_at")),
)


@online_endpoint.command("get-credentials")
@click.argument("name")
@workspace_option
@output_option
@pass_state
def get_credentials(state: State, name: str) -> None:
    """Show which keys the endpoint has: their first characters and when each was made.

    The keys themselves are shown once, when they are made (`create`, `regenerate-keys`).
    """
    workspace, client = state.workspace, state.client()
    try:
        body = client.get(endpoints_path(workspace, name, "keys")).body
    except ApiError as error:
        raise endpoint_not_found_in_workspace(client, workspace, name, error) from None
    if state.output != "table":
        print_structured(body, state.output)
        return
    if body.get("auth_mode") == "aml_token":
        click.echo(f"Online endpoint '{name}' uses aml_token: it is scored with a workspace member's Dockyard token "
                   "(`dockyard online-endpoint invoke` sends yours).", err=True)
        return
    rows = [{"key": key, **(value or {})} for key, value in (body.get("keys") or {}).items()]
    print_list(rows, KEY_COLUMNS, "table", empty_message=f"Online endpoint '{name}' has no keys.")
    click.echo("Keys are shown once, when they are made; these are their first characters.", err=True)


@online_endpoint.command("regenerate-keys")
@click.argument("name")
@click.option("--key-type", type=click.Choice(KEY_TYPES), default="primary", show_default=True,
              help="Which key to replace; the other keeps working, so clients can move over.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@workspace_option
@output_option
@pass_state
def regenerate_keys(state: State, name: str, key_type: str, yes: bool) -> None:
    """Replace one of the endpoint's keys and print the new one (once).

    Requests with the old key are refused from then on; the other key keeps working.
    """
    workspace, client = state.workspace, state.client()
    if not yes:
        other = "secondary" if key_type == "primary" else "primary"
        click.confirm(f"Replace the {key_type} key of online endpoint '{name}'? Clients using it will be refused "
                      f"(the {other} key keeps working).", abort=True, err=True)
    try:
        body = client.post(endpoints_path(workspace, name, "keys"), {"key_type": key_type}).body
    except ApiError as error:
        raise endpoint_not_found_in_workspace(client, workspace, name, error) from None
    table = state.output == "table"
    if table:
        click.echo(f"online-endpoint/{name} {key_type} key regenerated")
    else:
        print_structured(body, state.output)
    print_keys(shown_keys(body), name, table)

