"""dockyard apply -f FILE: kubectl-style declarative apply of multi-document YAML."""
from collections.abc import Callable

import click

from ..client import ApiClient
from ..context import State, compute_option, output_option, pass_state, workspace_option
from ..documents import Document, load_documents
from ..errors import EXIT_API_ERROR, CliError
from ..output import print_structured
from ..resources.base import Outcome, Scope, is_fatal
from ..resources.routing import apply_document, resource_label, route_of
from .online_endpoint import print_keys


def report_failure(label: str, error: CliError) -> None:
    click.echo(f"{label} failed", err=True)
    error.show()


def apply_one(document: Document, client: ApiClient, scope: Scope, output: str, dry_run: bool) -> list[dict]:
    """Apply one document and print its lines; failures are reported and returned, not raised (unless fatal)."""
    return report(resource_label(document), lambda: apply_document(document, client, scope, dry_run), output)


def report(label: str, attempt: Callable[[], list[Outcome]], output: str) -> list[dict]:
    """Run one apply step and print its lines (and an endpoint's new keys, once); failures are returned, not raised."""
    try:
        outcomes = attempt()
    except CliError as error:
        if is_fatal(error):
            raise
        report_failure(label, error)
        return [{"resource": label, "action": "failed", "error": error.as_dict()}]
    for outcome in outcomes:
        if outcome.error is not None:
            report_failure(outcome.resource, outcome.error)
            continue
        if output == "table":
            click.echo(outcome.line())
        print_keys(outcome.keys, outcome.resource.rpartition("/")[2], output == "table")
    return [outcome.as_dict() for outcome in outcomes]


def attachments_first(documents: list[Document]) -> list[Document]:
    """Kubernetes computes before the other documents, each group in file order: a compute cluster of the same files
    lives on one (kubectl applies namespaces before what goes in them for the same reason)."""
    def attaches(document: Document) -> bool:
        body = document.body
        return isinstance(body, dict) and route_of(body) == "compute" and body.get("type") == "kubernetes"

    return sorted(documents, key=lambda document: not attaches(document))


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

    Computes, workspaces, command jobs (`type: command`), online endpoints and online deployments go to the
    workspace of -w (kubernetes computes first: compute clusters live on them); InstanceType and InstanceTypeList
    documents go to the kubernetes compute of --compute. A job
    is submitted once: applied again it is unchanged, and only its display_name, description and tags can be
    changed. An endpoint's traffic is set after the deployments of the same files; its keys are printed once.
    """
    # Every file is read and parsed before anything is applied: a typo in the last file changes nothing.
    documents = attachments_first([document for source in sources for document in load_documents(source)])
    # With instance types but no compute anywhere, say so before anything is applied.
    compute = state.compute if needs_compute(documents) else ""
    client = state.client()
    scope = Scope(workspace=lambda: state.workspace, compute=lambda: compute)
    per_document = [apply_one(document, client, scope, state.output, dry_run) for document in documents]
    # Then what had to wait for later documents: an endpoint's traffic to deployments applied after it.
    per_document += [report(label, step, state.output) for label, step in scope.later]
    results = [result for results in per_document for result in results]
    if state.output != "table":
        print_structured(results, state.output)
    failed = sum(any(result["action"] == "failed" for result in results) for results in per_document)
    if failed:
        raise CliError(f"{failed} of {len(documents)} documents failed.", code="ApplyFailed", exit_code=EXIT_API_ERROR)
