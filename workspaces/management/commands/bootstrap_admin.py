import os
import secrets
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from workspaces.services import token_create


class Command(BaseCommand):
    help = "On first start, create the 'admin' superuser and a token; every start, print how to log in."

    def add_arguments(self, parser):
        parser.add_argument("--url", default="http://127.0.0.1:8000/")
        parser.add_argument("--credentials", required=True, help="file that keeps the first start's login and token")
        parser.add_argument("--username", default="admin")

    def handle(self, *args, url, credentials, username, **options):
        path = Path(credentials)
        users = get_user_model().objects
        if not users.filter(username=username).exists():
            password = secrets.token_urlsafe(12)
            user = users.create_superuser(username=username, password=password, email="")
            _, token = token_create(user=user, name="first start", days=365)
            path.write_text(f"login: {username}\npassword: {password}\napi token: {token}\n")
            os.chmod(path, 0o600)
        saved = path.read_text() if path.exists() else f"login: {username}\n(password and token: see the first start)\n"
        self.stdout.write(f"\nDockyard is starting at {url}\n{saved}(kept in {path})\n")
