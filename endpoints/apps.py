from django.apps import AppConfig


class EndpointsConfig(AppConfig):
    name = "endpoints"

    def ready(self):
        from assets.references import register

        from . import signals  # noqa: F401  (a worker that starts watches the local servers again)
        from .references import PROVIDERS
        register(*PROVIDERS)  # the snapshots this app names, kept by artifact collection
