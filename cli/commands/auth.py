"""login, logout and configure: what the config file holds."""
import os

import click

from ..client import ApiClient
from ..config import (
    COMPUTE_ENV,
    DEFAULT_KEYS,
    TOKEN_ENV,
    URL_ENV,
    WORKSPACE_ENV,
    Config,
    Connection,
    config_path,
    load_config,
    normalise_url,
    save_config,
)
from ..errors import EXIT_USAGE, InvalidInput


def check_token(connection: Connection) -> int:
    """Ask the server for the caller's workspaces: proves URL and token work; returns how many it sees."""
    client = ApiClient(connection)
    try:
        return client.get("workspaces/").body.get("count", 0)
    finally:
        client.close()


@click.command()
@click.option("--url", required=True, help="The Dockyard server, e.g. https://dockyard.example.com.")
@click.option("--token", prompt=True, hide_input=True, help="An API token (prompted for, unechoed, when omitted).")
def login(url: str, token: str) -> None:
    """Save a server URL and API token, once the server accepts them."""
    connection = Connection(url=normalise_url(url), token=token.strip())
    count = check_token(connection)
    config = load_config()
    config.url, config.token = connection.url, connection.token
    path = save_config(config)
    click.echo(f"Logged in to {connection.url} ({count} workspace{'s' if count != 1 else ''} visible); saved to {path}.")


@click.command()
def logout() -> None:
    """Forget the saved URL and token.

    Defaults are kept; the token itself stays valid until revoked on the server.
    """
    config = load_config()
    if not (config.url or config.token):
        click.echo("Not logged in.")
        return
    url, config.url, config.token = config.url, None, None
    save_config(config)
    click.echo(f"Logged out of {url}.")


def parse_defaults(values: tuple[str, ...]) -> dict[str, str]:
    """`workspace=NAME` pairs, several per option allowed (`--defaults "workspace=a"`); an empty value unsets."""
    pairs = {}
    for text in " ".join(values).split():
        key, equals, value = text.partition("=")
        if not equals or key not in DEFAULT_KEYS:
            raise InvalidInput(
                f"'{text}' is not one of: {', '.join(key + '=VALUE' for key in DEFAULT_KEYS)}.",
                target="--defaults", code="InvalidOption", exit_code=EXIT_USAGE,
            )
        pairs[key] = value
    return pairs


def effective(env: str, saved: str | None) -> tuple[str | None, str]:
    """A setting's value and where it comes from: the environment wins over the file."""
    value = os.environ.get(env)
    return (value, f" (from ${env})") if value else (saved, "")


def describe(config: Config) -> list[str]:
    """The settings in effect; the token is never shown, only whether there is one."""
    url, url_source = effective(URL_ENV, config.url)
    token, token_source = effective(TOKEN_ENV, config.token)
    workspace, workspace_source = effective(WORKSPACE_ENV, config.defaults.get("workspace"))
    compute, compute_source = effective(COMPUTE_ENV, config.defaults.get("compute"))
    return [
        f"config     {config_path()}",
        f"url        {url or '-'}{url_source}",
        f"token      {'set' if token else 'not set'}{token_source}",
        f"workspace  {workspace or '-'}{workspace_source}",
        f"compute    {compute or '-'}{compute_source}",
    ]


@click.command()
@click.option("--defaults", "defaults", multiple=True, metavar="KEY=VALUE", help="Set a default, e.g. workspace=team-a or compute=k8s-dev.")
def configure(defaults: tuple[str, ...]) -> None:
    """Set defaults, or show the settings in effect.

    `dockyard configure --defaults workspace=NAME compute=NAME` sets the default workspace and the default
    compute of the instance-type commands (an empty value unsets one).
    """
    config = load_config()
    if not defaults:
        click.echo("\n".join(describe(config)))
        return
    for key, value in parse_defaults(defaults).items():
        if value:
            config.defaults[key] = value
        else:
            config.defaults.pop(key, None)
    save_config(config)
    for key in DEFAULT_KEYS:
        click.echo(f"default {key}: {config.defaults.get(key) or '(none)'}")
