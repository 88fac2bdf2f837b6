from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "jobs"

    def ready(self):
        from . import signals  # noqa: F401  (a worker that starts picks up the local jobs it was running)
