"""dockyard apply -f FILE: kubectl-style declarative apply of multi-document YAML."""
import click

from ..appliers import Scope, apply_document, is_fatal, resource_label, route_of
from ..client import ApiClient
from ..context import State, compute_option, output_option, pass_state, workspace_option
from ..documents import Document, load_documents
from ..errors import EXIT_API_ERROR, CliError
from ..output import print_structured


def report_failure(label: str, error: CliError) -> None:
    click.echo(f"{label} failed", err=True)
    error.show()


def apply_one(document: Document, client: ApiClient, scope: Scope, output: str, dry_run: bool) -> list[dict]:
    """Apply one document and print its lines; failures are reported and returned, not raised (unless fatal)."""
    label = resource_label(document)
    try:
        outcomes = apply_document(document, client, scope, dry_run)
    except CliError as error:
        if is_fatal(error):
            raise
        report_failure(label, error)
        return [{"resource": label, "action": "failed", "error": error.as_dict()}]
    for outcome in outcomes:
        if outcome.error is not None:
            report_failure(outcome.resource, outcome.error)
        elif output == "table":
            click.echo(outcome.line())
    return [outcome.as_dict() for outcome in outcomes]


def needs_compute(documents: list[Document]) -> bool:
    return any(isinstance(document.body, dict) and route_of(document.body) == "instancetype" for document in documents)


@click.command()
@click.option("-f", "--file", "sources", required=True, multiple=True, metavar="FILE",
              help="YAML file, several documents separated by `---` (repeatable; `-` for standard input).")
@click.option("--dry-run", is_flag=True, help="Show what would be created or changed; change nothing.")
@workspace_option
@compute_option
@output_option
@pass_state
def apply(state: State, sources: tuple[str, ...], dry_run: bool) -> None:
    """Create or update what YAML files describe (kubectl-style).

    Computes and workspaces go to the workspace of -w; InstanceType and InstanceTypeList documents go to the
    kubernetes compute of --compute.
    """
    # Every file is read and parsed before anything is applied: a typo in the last file changes nothing.
    documents = [document for source in sources for document in load_documents(source)]
    # With instance types but no compute anywhere, say so before anything is applied.
    compute = state.compute if needs_compute(documents) else ""
    client = state.client()
    scope = Scope(workspace=lambda: state.workspace, compute=lambda: compute)
    per_document = [apply_one(document, client, scope, state.output, dry_run) for document in documents]
    results = [result for results in per_document for result in results]
    if state.output != "table":
        print_structured(results, state.output)
    failed = sum(any(result["action"] == "failed" for result in results) for results in per_document)
    if failed:
        raise CliError(f"{failed} of {len(documents)} documents failed.", code="ApplyFailed", exit_code=EXIT_API_ERROR)
