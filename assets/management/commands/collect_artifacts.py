from django.core.management.base import BaseCommand

from assets.collect import collect


class Command(BaseCommand):
    help = ("Collect artifact storage now: abandoned uploads, snapshots nothing names and blobs no snapshot lists "
            "(what the periodic task does).")

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="say what would be freed, delete nothing")

    def handle(self, *args, dry_run, **options):
        freed = collect(dry_run=dry_run)
        self.stdout.write(("Would free: " if dry_run else "Freed: ") + freed.summary() + ".")
