from django.contrib.auth import get_user_model
from rest_framework import serializers

from controlplane.specs import MAX_DESCRIPTION, tag_map_problem

from .choices import Role
from .models import ApiToken, AuditEvent, Membership, Workspace, validate_workspace_name


def validate_tags(value):
    problem = tag_map_problem(value)
    if problem:
        raise serializers.ValidationError(problem)
    return value


class WorkspaceSerializer(serializers.ModelSerializer):
    tags = serializers.JSONField(required=False, validators=[validate_tags])
    allow_local_compute = serializers.BooleanField(
        source="local_compute_enabled", read_only=True,
        help_text="Whether jobs and deployments here may use `compute: local` (sandboxed); only staff change it.",
    )
    allow_local_network = serializers.BooleanField(
        source="local_network_enabled", read_only=True,
        help_text="Whether local jobs and deployments here get network access; only staff change it.",
    )
    role = serializers.SerializerMethodField()
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)

    class Meta:
        model = Workspace
        fields = [
            "name", "display_name", "description", "tags", "allow_local_compute", "allow_local_network", "role",
            "created_by", "created_at", "updated_at",
        ]
        read_only_fields = ["created_at", "updated_at"]
        # No unique check here: a taken name is the service's 409 Conflict, not a 400.
        extra_kwargs = {"name": {"validators": [validate_workspace_name]}, "description": {"max_length": MAX_DESCRIPTION}}

    def get_role(self, workspace) -> str | None:
        return getattr(workspace, "my_role", None)


class WorkspaceUpdateSerializer(WorkspaceSerializer):
    allow_local_compute = serializers.BooleanField(
        source="local_compute_enabled", required=False, help_text="Staff only (an unchanged value is accepted from anyone)."
    )
    allow_local_network = serializers.BooleanField(
        source="local_network_enabled", required=False, help_text="Staff only (an unchanged value is accepted from anyone)."
    )

    class Meta(WorkspaceSerializer.Meta):
        read_only_fields = ["name", "created_at", "updated_at"]


class MembershipSerializer(serializers.ModelSerializer):
    user = serializers.SlugRelatedField(slug_field="username", queryset=get_user_model().objects.all())
    role = serializers.ChoiceField(choices=Role.choices)
    email = serializers.CharField(source="user.email", read_only=True, help_text="empty when the user has none")

    class Meta:
        model = Membership
        fields = ["user", "email", "role", "created_at", "updated_at"]
        read_only_fields = ["created_at", "updated_at"]


class MemberCreateSerializer(serializers.Serializer):
    user = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(choices=Role.choices)


class MemberUpdateSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=Role.choices)


class ApiTokenSerializer(serializers.ModelSerializer):
    class Meta:
        model = ApiToken
        fields = ["id", "name", "prefix", "created_at", "expires_at", "last_used_at"]
        read_only_fields = fields


class ApiTokenCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
    expires_in_days = serializers.IntegerField(min_value=1, max_value=3650, required=False)


class ApiTokenCreatedSerializer(ApiTokenSerializer):
    token = serializers.CharField(read_only=True, help_text="Shown once; store it now.")

    class Meta(ApiTokenSerializer.Meta):
        fields = ApiTokenSerializer.Meta.fields + ["token"]
        read_only_fields = fields


class AuditEventSerializer(serializers.ModelSerializer):
    actor = serializers.CharField(source="actor_name", read_only=True)

    class Meta:
        model = AuditEvent
        fields = ["id", "created_at", "actor", "action", "verb", "target_type", "target_name", "changes"]
        read_only_fields = fields


class UserCreateSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    email = serializers.CharField(max_length=254, required=False, allow_blank=True, default="")


class UserCreatedSerializer(serializers.Serializer):
    username = serializers.CharField(read_only=True)
    email = serializers.CharField(read_only=True)
    invitation_url = serializers.URLField(read_only=True, help_text="Shown once: the new user opens it to set a password.")
    invitation_expires_at = serializers.DateTimeField(read_only=True)
