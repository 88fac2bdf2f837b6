"""The `dockyard` command group."""
import click

from .commands.apply import apply
from .commands.auth import configure, login, logout
from .commands.compute import compute
from .commands.data import data
from .commands.environment import environment
from .commands.instancetype import instancetype
from .commands.job import job
from .commands.model import model
from .commands.online_deployment import online_deployment
from .commands.online_endpoint import online_endpoint
from .commands.user import user
from .commands.workspace import workspace
from .context import State, output_option
from .output import guard_terminal

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT_SETTINGS)
@output_option
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Dockyard: ML compute in Azure Machine Learning's vocabulary, from the command line.

    Log in once (`dockyard login --url URL --token TOKEN`), pick a default workspace
    (`dockyard configure --defaults workspace=NAME`), then create computes from YAML with
    `dockyard compute create -f FILE` or `dockyard apply -f FILE`, attach a Kubernetes cluster with
    `dockyard compute attach -f k8s.yml`, and give it instance types with
    `dockyard apply -f instance_types.yaml --compute NAME`. Submit a command job and follow its log with
    `dockyard job create -f job.yml --stream`. Serve a model with `dockyard online-endpoint create -f endpoint.yml`
    and `dockyard online-deployment create -f blue.yml --all-traffic`, then
    `dockyard online-endpoint invoke NAME --request-file request.json`. Register environments, models and data
    with `dockyard environment|model|data create -f FILE` and name them in jobs as azureml:<name>:<version>.
    """
    ctx.ensure_object(State)
    guard_terminal()  # names, messages and logs come from the server: none of them may drive the terminal


for command in (login, logout, configure, workspace, compute, instancetype, job, environment, model, data, online_endpoint,
                online_deployment, apply, user):
    cli.add_command(command)


def main() -> None:
    cli(prog_name="dockyard")
