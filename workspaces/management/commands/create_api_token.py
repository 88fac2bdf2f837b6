from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from workspaces.services import token_create


class Command(BaseCommand):
    help = "Create an API token for USERNAME and print only the token on stdout."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--create-user", action="store_true", help="create the user if it does not exist")
        parser.add_argument("--staff", action="store_true", help="make the user staff and superuser")
        parser.add_argument("--name", default="bootstrap", help="a label for the token")
        parser.add_argument("--days", type=int, default=None, help="days until the token expires")

    def handle(self, *args, username, create_user, staff, name, days, **options):
        users = get_user_model().objects
        user = users.filter(username=username).first()
        if user is None and not create_user:
            raise CommandError(f"There is no user named '{username}' (use --create-user).")
        if user is None:
            user = users.create_user(username=username)
        if staff and not (user.is_staff and user.is_superuser):
            user.is_staff = user.is_superuser = True
            user.save(update_fields=["is_staff", "is_superuser"])
        _, raw = token_create(user=user, name=name, days=days)
        self.stdout.write(raw)
