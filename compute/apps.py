from django.apps import AppConfig


class ComputeConfig(AppConfig):
    name = "compute"
