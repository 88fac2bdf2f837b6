"""dockyard apply -f FILE: kubectl-style declarative apply of multi-document YAML."""
import click

from ..appliers import apply_document, resource_label
from ..client import ApiClient
from ..context import State, output_option, pass_state, workspace_option
from ..documents import Document, load_documents
from ..errors import EXIT_API_ERROR, EXIT_NOT_LOGGED_IN, CliError, ConnectionFailed
from ..output import print_structured


def is_fatal(error: CliError) -> bool:
    """Errors that every later document would hit too: stop at once instead of repeating them."""
    return isinstance(error, ConnectionFailed) or error.exit_code == EXIT_NOT_LOGGED_IN or error.code == "NoWorkspace"


def report_failure(label: str, error: CliError) -> None:
    click.echo(f"{label} failed", err=True)
    error.show()


def apply_one(document: Document, client: ApiClient, state: State, dry_run: bool) -> dict:
    """Apply one document and print its line; a failure is reported and returned, not raised (unless fatal)."""
    label = resource_label(document)
    try:
        outcome = apply_document(document, client, lambda: state.workspace, dry_run)
    except CliError as error:
        if is_fatal(error):
            raise
        report_failure(label, error)
        return {"resource": label, "action": "failed", "error": error.as_dict()}
    if state.output == "table":
        click.echo(outcome.line())
    return outcome.as_dict()


@click.command()
@click.option("-f", "--file", "sources", required=True, multiple=True, metavar="FILE",
              help="YAML file, several documents separated by `---` (repeatable; `-` for standard input).")
@click.option("--dry-run", is_flag=True, help="Show what would be created or changed; change nothing.")
@workspace_option
@output_option
@pass_state
def apply(state: State, sources: tuple[str, ...], dry_run: bool) -> None:
    """Create or update what YAML files describe (kubectl-style)."""
    # Every file is read and parsed before anything is applied: a typo in the last file changes nothing.
    documents = [document for source in sources for document in load_documents(source)]
    client = state.client()
    results = [apply_one(document, client, state, dry_run) for document in documents]
    if state.output != "table":
        print_structured(results, state.output)
    failed = sum(result["action"] == "failed" for result in results)
    if failed:
        raise CliError(f"{failed} of {len(documents)} documents failed.", code="ApplyFailed", exit_code=EXIT_API_ERROR)
