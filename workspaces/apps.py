from django.apps import AppConfig


class WorkspacesConfig(AppConfig):
    name = "workspaces"

    def ready(self):
        from . import schema  # noqa: F401  registers the bearer-token scheme with drf-spectacular
