"""dockyard job create | list | show | cancel | delete | logs | stream | download: Azure ML command jobs."""
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import click

from ..client import ApiClient
from ..context import State, output_option, pass_state, workspace_option
from ..documents import apply_assignments, read_text, single_document
from ..errors import EXIT_INTERRUPTED, ApiError, ConnectionFailed
from ..logstream import LogFollower
from ..output import (
    Column,
    as_yaml,
    field,
    print_item,
    print_list,
    print_shown,
    print_structured,
    print_written,
    timestamp,
)
from ..resources.base import workspace_not_found
from ..resources.job import (
    ended_badly,
    job_not_found_in_workspace,
    job_yaml,
    jobs_path,
    line_text,
    status_filter,
    status_text,
    where_cell,
    with_code_uploaded,
)
from ..resources.job_download import download_outputs, job_name, save_log

LOG_PAGE = 1000
DEFAULT_MAX = 50

JOB_COLUMNS = (
    Column("NAME", field("name")),
    Column("DISPLAY NAME", field("display_name")),
    Column("STATUS", field("status")),
    Column("COMPUTE", where_cell),
    Column("EXPERIMENT", field("experiment_name")),
    Column("CREATED", timestamp("created_on")),
)


@click.group()
def job() -> None:
    """Command jobs: submit Azure ML job YAML, list, follow logs, cancel.

    `dockyard job create -f job.yml --stream` submits a job and prints its log until it ends; the exit code
    says how it ended (0 Completed, 5 Failed, 6 Canceled).
    """


@job.command("create")
@click.option("-f", "--file", "source", required=True, metavar="FILE", help="Command-job YAML (`-` for standard input).")
@click.option("--name", help="The job's name (overrides the file's; generated when neither gives one).")
@click.option("--set", "assignments", multiple=True, metavar="KEY=VALUE",
              help="Override a field, e.g. resources.instance_count=2 (repeatable).")
@click.option("--stream", is_flag=True, help="Print the job's log until it ends; the exit code says how it ended.")
@workspace_option
@output_option
@pass_state
def create_job(state: State, source: str, name: str | None, assignments: tuple[str, ...], stream: bool) -> None:
    """Submit a command job from an Azure ML job YAML file.

    The YAML is sent as written; --name and --set change fields first (dotted paths, values read as YAML).
    With --stream the log follows: exit 0 when the job Completed, 5 Failed, 6 Canceled; Ctrl-C stops
    following (the job keeps running) and exits 130.
    """
    text = read_text(source)
    document = single_document(text, source, "job create")
    if name:
        document.body["name"] = name
    apply_assignments(document.body, list(assignments))
    workspace, client = state.workspace, state.client()
    with_code_uploaded(document, client, workspace)  # `code: src` is the folder next to the YAML file, as in Azure ML
    try:
        created = client.post_yaml(jobs_path(workspace), job_yaml(text, document.body)).body
    except ApiError as error:
        raise (workspace_not_found(workspace) if error.status == 404 else error) from None
    if stream:
        stream_created(state, client, created["name"])
    else:
        print_written(created, state.output, f"job/{created['name']} created")


def stream_created(state: State, client: ApiClient, name: str) -> None:
    """`create --stream`: the log until the job ends; with -o json|yaml the log goes to stderr, the final job to stdout."""
    table = state.output == "table"
    if table:
        click.echo(f"job/{name} created")
    end = follow(state, client, name, lambda line: click.echo(line_text(line), err=not table))
    if not table:
        print_item(client.get(jobs_path(state.workspace, name)).body, state.output)
    finish(name, end)


def resume_command(state: State, name: str) -> str:
    workspace = f" -w {state.workspace_flag}" if state.workspace_flag else ""
    return f"dockyard job logs {name} --follow{workspace}"


def follow(state: State, client: ApiClient, name: str, on_line: Callable[[dict], None]) -> dict:
    """Call `on_line` for each log line until the job ends; returns the end (status, reason, exit code)."""
    workspace, resume = state.workspace, resume_command(state, name)
    try:
        return LogFollower(client, jobs_path(workspace, name, "logs"), on_line, on_status=print_status).run()
    except KeyboardInterrupt:
        click.echo(f"\nStopped following job/{name}; the job keeps running. Resume with: {resume}", err=True)
        raise click.exceptions.Exit(EXIT_INTERRUPTED) from None
    except ApiError as error:
        raise job_not_found_in_workspace(client, workspace, name, error) from None
    except ConnectionFailed as error:
        raise ConnectionFailed(f"{error.message} The job goes on; resume with: {resume}", code=error.code) from None


def print_status(status: dict) -> None:
    """A followed job's new status and why, on stderr (stdout holds the log): `[Queued] Waiting for a node: …`."""
    text = status_text(status)
    if text is not None:
        click.echo(text, err=True)


def finish(name: str, end: dict) -> None:
    """Say how the job ended (stderr: stdout holds the log) and exit with it."""
    error = ended_badly(name, end)
    if error is not None:
        raise error
    click.echo(f"job/{name} Completed", err=True)


@job.command("list")
@click.option("--status", "statuses", multiple=True, metavar="STATUS[,STATUS]",
              help="Only jobs in these statuses, e.g. Running,Queued (repeatable).")
@click.option("--compute", "compute", metavar="NAME", help="Only jobs on this compute (a name, `local` or `serverless`).")
@click.option("--experiment", metavar="NAME", help="Only jobs of this experiment.")
@click.option("--max", "max_results", type=click.IntRange(min=1), default=DEFAULT_MAX, show_default=True, metavar="N",
              help="Show at most N jobs, newest first.")
@workspace_option
@output_option
@pass_state
def list_jobs(state: State, statuses: tuple[str, ...], compute: str | None, experiment: str | None, max_results: int) -> None:
    """List a workspace's jobs, newest first."""
    filters = {"status": status_filter(statuses), "compute": compute, "experiment_name": experiment}
    params = {key: value for key, value in filters.items() if value}
    workspace, client = state.workspace, state.client()
    try:
        rows, total = client.list_up_to(jobs_path(workspace), max_results, params)
    except ApiError as error:
        raise (workspace_not_found(workspace) if error.status == 404 else error) from None
    empty = f"No jobs in workspace '{workspace}'{' match the filters' if params else ''}."
    print_list(rows, JOB_COLUMNS, state.output, empty_message=empty)
    if total is not None and total > len(rows):
        click.echo(f"Showing the newest {len(rows)} of {total} jobs (--max N shows more).", err=True)


@job.command("show")
@click.argument("name")
@workspace_option
@output_option
@pass_state
def show_job(state: State, name: str) -> None:
    """Show one job: its spec, status and placement.

    The Kubernetes objects rendered for it (`manifests`) are printed with -o json|yaml.
    """
    workspace, client = state.workspace, state.client()
    try:
        item = client.get(jobs_path(workspace, name)).body
    except ApiError as error:
        raise job_not_found_in_workspace(client, workspace, name, error) from None
    print_shown(item, state.output)


@job.command("cancel")
@click.argument("name")
@workspace_option
@output_option
@pass_state
def cancel_job(state: State, name: str) -> None:
    """Cancel a job that has not ended.

    It shows as CancelRequested until it has stopped, then Canceled.
    """
    workspace, client = state.workspace, state.client()
    try:
        canceled = client.request("POST", jobs_path(workspace, name, "cancel")).body
    except ApiError as error:
        raise job_not_found_in_workspace(client, workspace, name, error) from None
    print_written(canceled, state.output, f"job/{name} cancel requested")


@job.command("delete")
@click.argument("name")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@workspace_option
@output_option
@pass_state
def delete_job(state: State, name: str, yes: bool) -> None:
    """Delete a job and its logs; a running job is stopped first."""
    workspace, client = state.workspace, state.client()
    if not yes:
        click.confirm(f"Delete job '{name}' and its logs from workspace '{workspace}'?", abort=True, err=True)
    try:
        deleted = client.delete(jobs_path(workspace, name)).body
    except ApiError as error:
        raise job_not_found_in_workspace(client, workspace, name, error) from None
    print_written(deleted, state.output, f"job/{name} deleting")


def log_pages(client: ApiClient, path: str) -> Iterator[dict]:
    """Every page of the log stored so far; a running job's `next` always points past its last line, so stop there."""
    page = client.get(path, params={"limit": LOG_PAGE}).body
    while True:
        yield page
        if page.get("complete") or not page.get("next") or len(page.get("results") or []) < LOG_PAGE:
            return
        page = client.follow_link(page["next"]).body


def line_printer(fmt: str) -> Callable[[dict], None]:
    """How a followed line prints: text, one JSON object per line, or one YAML list item."""
    if fmt == "json":
        return lambda line: click.echo(json.dumps(line, ensure_ascii=False))
    if fmt == "yaml":
        return lambda line: click.echo(as_yaml([line]))
    return lambda line: click.echo(line_text(line))


def print_stored_log(state: State, client: ApiClient, name: str) -> None:
    """The lines stored so far: printed page by page, or collected into one list for -o json|yaml."""
    workspace, table = state.workspace, state.output == "table"
    lines: list[dict] = []
    last: dict = {}
    try:
        for last in log_pages(client, jobs_path(workspace, name, "logs")):
            if table:
                for line in last["results"]:
                    click.echo(line_text(line))
            else:
                lines.extend(last["results"])
    except ApiError as error:
        raise job_not_found_in_workspace(client, workspace, name, error) from None
    if not table:
        print_structured(lines, state.output)
    if not last.get("complete"):
        click.echo(f"job/{name} is {last.get('status')}: more lines may come (`{resume_command(state, name)}` waits for them).",
                   err=True)


def print_log(state: State, name: str, keep_following: bool) -> None:
    client = state.client()
    if not keep_following:
        print_stored_log(state, client, name)
        return
    finish(name, follow(state, client, name, line_printer(state.output)))


@job.command("logs")
@click.argument("name")
@click.option("--follow", "keep_following", is_flag=True,
              help="Keep printing lines until the job ends; the exit code then says how it ended.")
@workspace_option
@output_option
@pass_state
def job_logs(state: State, name: str, keep_following: bool) -> None:
    """Print a job's log (with --follow, until the job ends).

    Lines print as `[source] text` (the source is the rank or pod). Without --follow: the lines stored so
    far. With --follow: every line, then new ones as they come, until the job ends (exit 0 Completed,
    5 Failed, 6 Canceled; Ctrl-C stops following, exit 130). -o json prints the lines as a list (with
    --follow: one JSON object per line).
    """
    print_log(state, name, keep_following)


@job.command("stream")
@click.argument("name")
@workspace_option
@output_option
@pass_state
def stream_job(state: State, name: str) -> None:
    """Follow a job's log until it ends (as `job logs NAME --follow`)."""
    print_log(state, name, True)


def download_target(path: str | None, name: str) -> Path:
    """Where the log goes: the path given, NAME.log inside it when it is a folder, ./NAME.log by default."""
    target = Path(path).expanduser() if path else Path(f"{name}.log")
    return target / f"{name}.log" if target.is_dir() else target


@job.command("download")
@click.argument("name", required=False)
@click.option("-n", "--name", "name_option", metavar="NAME", help="The job (Azure ML's spelling; or give NAME).")
@click.option("-p", "--download-path", "path", metavar="PATH",
              help="File, or folder for NAME.log (default: ./NAME.log); with --output-name or --all, the folder the "
                   "files go under (default: .).")
@click.option("--output-name", metavar="OUTPUT", help="Save one output's files under PATH/named-outputs/OUTPUT "
                                                      "('default': the whole ./outputs).")
@click.option("--all", "everything", is_flag=True, help="Save the log and every output file under PATH: PATH/NAME.log "
                                                         "and PATH/outputs/...")
@click.option("--output-dir", metavar="DIR",
              help="Save the job's output files (its ./outputs folder) under DIR instead of the log.")
@workspace_option
@output_option
@pass_state
def download_job_log(state: State, name: str | None, name_option: str | None, path: str | None,
                     output_name: str | None, everything: bool, output_dir: str | None) -> None:
    """Save a job's whole log as a text file, or its output files.

    --output-dir DIR saves each file the job left in ./outputs at its path under DIR, creating folders as needed;
    --output-name OUTPUT saves one declared output's files under PATH/named-outputs/OUTPUT; --all saves the log and
    every output file under PATH. Progress goes to stderr; no file is written outside the folder.
    """
    name = job_name(name, name_option)
    if output_name is not None or everything:
        folder = Path(path or ".").expanduser()
        if everything:
            save_log(state, name, folder / f"{name}.log")
            download_outputs(state, name, folder / "outputs")
        else:
            download_outputs(state, name, folder / "named-outputs" / output_name, output_name)
        return
    if output_dir is not None:
        download_outputs(state, name, Path(output_dir).expanduser())
        return
    save_log(state, name, download_target(path, name))
