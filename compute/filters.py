import django_filters

from controlplane.reconciling import ProvisioningState

from .models import ComputeTarget


class ComputeFilter(django_filters.FilterSet):
    type = django_filters.CharFilter(method="filter_types", help_text="one type, or several separated by commas")
    provisioning_state = django_filters.ChoiceFilter(choices=ProvisioningState.choices)

    class Meta:
        model = ComputeTarget
        fields = ["type", "provisioning_state"]

    def filter_types(self, queryset, name, value):
        return queryset.filter(type__in=[item.strip() for item in value.split(",") if item.strip()])
