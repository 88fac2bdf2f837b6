"""dockyard user create: staff create an account; the new user sets a password through a one-time link."""
import click

from ..context import State, output_option, pass_state
from ..output import print_written


@click.group()
def user() -> None:
    """User accounts (staff only)."""


@user.command("create")
@click.argument("name")
@click.option("--email", default="", help="The user's e-mail address (optional).")
@output_option
@pass_state
def create_user(state: State, name: str, email: str) -> None:
    """Create an account without a password; pass the printed one-time link to its owner, who sets one there.

    The link is printed once and works once, until it expires (the server's DOCKYARD_INVITATION_HOURS).
    """
    created = state.client().post("users/", {"username": name, "email": email}).body
    print_written(created, state.output, f"user/{name} created; the password is set at (once, until "
                                         f"{created['invitation_expires_at']}):\n{created['invitation_url']}")
