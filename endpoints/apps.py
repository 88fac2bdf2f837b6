from django.apps import AppConfig


class EndpointsConfig(AppConfig):
    name = "endpoints"

    def ready(self):
        from . import signals  # noqa: F401  (a worker that starts watches the local servers again)
