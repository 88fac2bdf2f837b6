"""What every command shares: the output format, the config, an API client and the common options."""
from dataclasses import dataclass
from functools import cached_property

import click

from .client import ApiClient
from .config import Config, load_config, resolve_compute, resolve_connection, resolve_workspace
from .output import FORMATS


@dataclass
class State:
    """Per-invocation state kept on click's context object."""

    output: str = "table"
    workspace_flag: str | None = None
    compute_flag: str | None = None

    @cached_property
    def config(self) -> Config:
        return load_config()

    def client(self) -> ApiClient:
        """A client for the configured server; raises NotLoggedIn before any request when URL or token is missing."""
        client = ApiClient(resolve_connection(self.config))
        click.get_current_context().call_on_close(client.close)
        return client

    @property
    def workspace(self) -> str:
        return resolve_workspace(self.workspace_flag, self.config)

    @property
    def compute(self) -> str:
        return resolve_compute(self.compute_flag, self.config)


pass_state = click.make_pass_decorator(State, ensure=True)


def _remember_output(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value:
        ctx.ensure_object(State).output = value


def _remember_workspace(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value:
        ctx.ensure_object(State).workspace_flag = value


def _remember_compute(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value:
        ctx.ensure_object(State).compute_flag = value


def output_option(command):
    """-o/--output, accepted before the command (global) or after it (Azure CLI style)."""
    return click.option(
        "-o", "--output", type=click.Choice(FORMATS), expose_value=False,
        callback=_remember_output, help="Output format (default: table).",
    )(command)


def workspace_option(command):
    """-w/--workspace for workspace-scoped commands; DOCKYARD_WORKSPACE and the configured default follow."""
    return click.option(
        "-w", "--workspace", metavar="NAME", expose_value=False, callback=_remember_workspace,
        help="Workspace (default: $DOCKYARD_WORKSPACE, then `configure --defaults workspace=`).",
    )(command)


def compute_option(command):
    """--compute for instance-type commands; DOCKYARD_COMPUTE and the configured default follow."""
    return click.option(
        "--compute", metavar="NAME", expose_value=False, callback=_remember_compute,
        help="Kubernetes compute whose instance types these are (default: $DOCKYARD_COMPUTE, then "
             "`configure --defaults compute=`).",
    )(command)
