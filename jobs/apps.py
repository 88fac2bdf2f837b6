from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "jobs"

    def ready(self):
        from assets.references import register

        from . import signals  # noqa: F401  (a worker that starts picks up the local jobs it was running)
        from .references import PROVIDERS
        register(*PROVIDERS)  # the snapshots this app names, kept by artifact collection
