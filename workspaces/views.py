from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.response import Response

from controlplane.api import BadRequest, ETagMixin
from controlplane.pagination import CountedCursorPagination

from . import access, selectors, services
from .filters import AuditEventFilter, MembershipFilter
from .models import ApiToken
from .serializers import (
    ApiTokenCreatedSerializer,
    ApiTokenCreateSerializer,
    ApiTokenSerializer,
    AuditEventSerializer,
    MemberCreateSerializer,
    MembershipSerializer,
    MemberUpdateSerializer,
    UserCreatedSerializer,
    UserCreateSerializer,
    WorkspaceSerializer,
    WorkspaceUpdateSerializer,
)


class WorkspaceScopedMixin:
    """Resolves `{ws}` for nested views: 404 unless a member, 403 without the action's role."""

    # action name -> access action; anything not listed needs "manage"
    required_access = {"list": "read", "retrieve": "read"}

    @property
    def workspace(self):
        if not hasattr(self, "_workspace"):
            self._workspace = access.workspace_for(self.request.user, self.kwargs["workspace_name"])
        return self._workspace

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        access.require(request.user, self.workspace, self.required_access.get(self.action, "manage"))


class WorkspaceViewSet(ETagMixin, viewsets.ModelViewSet):
    lookup_field = "name"
    lookup_value_regex = "[^/]+"
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation: no user, no {ws}
            return selectors.workspace_none()
        return selectors.workspace_list_with_roles(user=self.request.user)

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if self.action == "create":  # before the body is read: a refused creator learns nothing from validation
            access.require_workspace_creator(request.user)

    def get_object(self):
        workspace = access.workspace_for(self.request.user, self.kwargs["name"])
        if self.action != "retrieve":
            access.require(self.request.user, workspace, "manage")
        workspace.my_role = access.role_of(self.request.user, workspace)
        return workspace

    def get_serializer_class(self):
        return WorkspaceUpdateSerializer if self.action == "partial_update" else WorkspaceSerializer

    def perform_create(self, serializer):
        serializer.instance = services.workspace_create(user=self.request.user, **serializer.validated_data)
        serializer.instance.my_role = "owner"

    def perform_update(self, serializer):
        if serializer.initial_data.get("name", serializer.instance.name) != serializer.instance.name:
            raise BadRequest("The name of a workspace cannot be changed.", code="ImmutableField", target="name")
        self.check_if_match(serializer.instance)
        services.workspace_update(user=self.request.user, workspace=serializer.instance, **serializer.validated_data)

    def perform_destroy(self, instance):
        self.check_if_match(instance)
        services.workspace_delete(user=self.request.user, workspace=instance)


class MemberViewSet(WorkspaceScopedMixin, ETagMixin, viewsets.ModelViewSet):
    serializer_class = MembershipSerializer
    filterset_class = MembershipFilter
    lookup_field = "user__username"
    lookup_url_kwarg = "username"
    lookup_value_regex = "[^/]+"
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation: no user, no {ws}
            return selectors.member_none()
        return selectors.member_list(workspace=self.workspace)

    @extend_schema(request=MemberCreateSerializer, responses={201: MembershipSerializer})
    def create(self, request, *args, **kwargs):
        body = MemberCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        membership = services.member_add(
            actor=request.user, workspace=self.workspace,
            username=body.validated_data["user"], role=body.validated_data["role"],
        )
        return Response(MembershipSerializer(membership).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=MemberUpdateSerializer, responses=MembershipSerializer)
    def partial_update(self, request, *args, **kwargs):
        membership = self.get_object()
        self.check_if_match(membership)
        body = MemberUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        membership = services.member_update(actor=request.user, membership=membership, role=body.validated_data["role"])
        return Response(MembershipSerializer(membership).data)

    def perform_destroy(self, instance):
        self.check_if_match(instance)
        services.member_remove(actor=self.request.user, membership=instance)


class TokenViewSet(mixins.ListModelMixin, mixins.CreateModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet):
    serializer_class = ApiTokenSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation: no user, no {ws}
            return selectors.token_none()
        return selectors.token_list(user=self.request.user)

    @extend_schema(request=ApiTokenCreateSerializer, responses={201: ApiTokenCreatedSerializer})
    def create(self, request, *args, **kwargs):
        body = ApiTokenCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        parent = request.auth if isinstance(request.auth, ApiToken) else None  # None: a session (the studio)
        token, raw = services.token_create(
            user=request.user, name=body.validated_data["name"], days=body.validated_data.get("expires_in_days"),
            parent=parent,
        )
        token.token = raw
        return Response(ApiTokenCreatedSerializer(token).data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance):
        services.token_revoke(user=self.request.user, token=instance)


class StaffOnly(permissions.BasePermission):
    """403 before the body is read for anyone signed in who is not staff (the service checks again)."""

    message = "Only staff can create users."

    def has_permission(self, request, view):
        return bool(request.user and request.user.is_authenticated and request.user.is_staff)


class UserViewSet(viewsets.GenericViewSet):
    """Staff create accounts for scripts and people; the new user sets a password through a one-time link."""

    serializer_class = UserCreateSerializer
    permission_classes = [StaffOnly]

    @extend_schema(request=UserCreateSerializer, responses={201: UserCreatedSerializer})
    def create(self, request, *args, **kwargs):
        body = UserCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        user, invitation, raw = services.user_create(actor=request.user, **body.validated_data)
        return Response({
            "username": user.username, "email": user.email,
            "invitation_url": request.build_absolute_uri(reverse("frontend:invitation", args=[raw])),
            "invitation_expires_at": invitation.expires_at,
        }, status=status.HTTP_201_CREATED)


class EventViewSet(WorkspaceScopedMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    serializer_class = AuditEventSerializer
    filterset_class = AuditEventFilter
    pagination_class = CountedCursorPagination

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation: no user, no {ws}
            return selectors.event_none()
        return selectors.event_list(workspace=self.workspace)


