import django_filters
from django.db.models import Q
from rest_framework.exceptions import ValidationError

from .choices import JobStatus
from .models import Job


class JobFilter(django_filters.FilterSet):
    status = django_filters.CharFilter(method="filter_status", help_text="one status, or several separated by commas")
    compute = django_filters.CharFilter(method="filter_compute", help_text="compute name, 'local' or 'serverless'")
    experiment_name = django_filters.CharFilter()

    class Meta:
        model = Job
        fields = ["status", "compute", "experiment_name"]

    def filter_status(self, queryset, name, value):
        wanted = [item.strip() for item in value.split(",") if item.strip()]
        unknown = [item for item in wanted if item not in JobStatus.values]
        if unknown:
            raise ValidationError({"status": [f"Unknown status {', '.join(unknown)}: use {', '.join(JobStatus.values)}."]})
        return queryset.filter(status__in=wanted)

    def filter_compute(self, queryset, name, value):
        value = value.removeprefix("azureml:")
        if value in ("serverless", "local"):
            return queryset.filter(target=value)
        # by name as written (it outlives a deleted compute) or where serverless placed the job
        return queryset.filter(Q(compute_name=value) | Q(compute__name=value))
