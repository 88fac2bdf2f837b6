import os
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from workspaces.services import token_create, workspace_create, workspace_local_compute_set

STARTER = "starter"


def write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read, with no moment at which it is readable by others."""
    path.unlink(missing_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)


class Command(BaseCommand):
    help = (
        "On first start, create the 'admin' superuser, a token and the 'starter' workspace (local compute on) and "
        "print the login once; later starts only say where it is kept."
    )

    def add_arguments(self, parser):
        parser.add_argument("--url", default="http://127.0.0.1:8000/")
        parser.add_argument("--credentials", required=True, help="file that keeps the first start's login and token")
        parser.add_argument("--username", default="admin")

    def handle(self, *args, url, credentials, username, **options):
        path = Path(credentials)
        if get_user_model().objects.filter(username=username).exists():
            kept = f"(kept in {path}, readable by its owner only)" if path.exists() else "(set on the first start)"
            self.stdout.write(f"\nDockyard is starting at {url}\nlogin: {username}; password and API token {kept}\n")
            return
        login, starter_note = self._first_start(username)
        write_private(path, login)
        self.stdout.write(
            f"\nDockyard is starting at {url} for the first time.\n{login}"
            f"This is shown once; it is kept in {path} (readable by its owner only).\n{starter_note}\n"
        )

    @transaction.atomic
    def _first_start(self, username: str) -> tuple[str, str]:
        """The admin, its token and the starter workspace; returns the login text and a line about the workspace."""
        password = secrets.token_urlsafe(12)
        user = get_user_model().objects.create_superuser(username=username, password=password, email="")
        _, token = token_create(user=user, name="first start", days=365)
        workspace = workspace_create(user=user, name=STARTER, display_name="Starter", description="Made on the first start.")
        if settings.DOCKYARD_LOCAL_COMPUTE:
            workspace_local_compute_set(user=user, workspace=workspace, enabled=True)
            note = f"Workspace '{STARTER}' has local compute enabled: a job with `compute: local` runs at once."
        else:
            note = f"Workspace '{STARTER}' is ready; local compute is off on this server (DOCKYARD_LOCAL_COMPUTE)."
        return f"login: {username}\npassword: {password}\napi token: {token}\n", note
