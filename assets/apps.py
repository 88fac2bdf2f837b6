from django.apps import AppConfig


class AssetsConfig(AppConfig):
    name = "assets"

    def ready(self):
        from . import references
        references.register(*references.ASSET_PROVIDERS)  # models' and data's snapshots, kept by artifact collection
