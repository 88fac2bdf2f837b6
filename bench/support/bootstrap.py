"""Environment defaults and Django's setup, before a benchmark imports anything of Dockyard's."""
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def bootstrap(database: str, queue: str | None = None, broker: str | None = None, cache: str | None = None,
              defaults: dict[str, str] | None = None) -> str | None:
    """Set the benchmark's environment defaults and private Celery queue (`queue`-<pid>, returned), then Django up."""
    os.environ.setdefault("DATABASE_URL", database)
    if broker:
        os.environ.setdefault("CELERY_BROKER_URL", broker)
    if cache:
        os.environ.setdefault("REDIS_URL", cache)
    for name, value in (defaults or {}).items():
        os.environ.setdefault(name, value)
    if queue:
        queue = os.environ["DOCKYARD_QUEUE"] = f"{queue}-{os.getpid()}"  # private: never eat others' tasks
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")

    import django

    django.setup()
    return queue
