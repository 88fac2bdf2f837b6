import django_filters

from .models import AuditEvent, Membership


class MembershipFilter(django_filters.FilterSet):
    class Meta:
        model = Membership
        fields = ["role"]


class AuditEventFilter(django_filters.FilterSet):
    class Meta:
        model = AuditEvent
        fields = ["action", "target_type", "target_name"]
