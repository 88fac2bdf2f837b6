import django_filters

from .models import Job


class JobFilter(django_filters.FilterSet):
    status = django_filters.CharFilter(method="filter_in", help_text="one status, or several separated by commas")
    compute = django_filters.CharFilter(method="filter_compute", help_text="compute name, 'local' or 'serverless'")
    experiment_name = django_filters.CharFilter()

    class Meta:
        model = Job
        fields = ["status", "compute", "experiment_name"]

    def filter_in(self, queryset, name, value):
        return queryset.filter(**{f"{name}__in": [item.strip() for item in value.split(",") if item.strip()]})

    def filter_compute(self, queryset, name, value):
        value = value.removeprefix("azureml:")
        if value == "serverless":
            return queryset.filter(target="serverless")
        if value == "local":
            return queryset.filter(target="local")
        return queryset.filter(compute__name=value)
