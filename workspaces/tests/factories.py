"""Rows for tests that need many of them (list pages, query counts); services make the realistic ones."""
import hashlib

import factory
from django.contrib.auth import get_user_model

from workspaces.choices import AuditAction, Role
from workspaces.models import ApiToken, AuditEvent, Membership, Workspace


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user-{n}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@example.com")


class WorkspaceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Workspace

    name = factory.Sequence(lambda n: f"ws-{n}")
    display_name = factory.LazyAttribute(lambda workspace: workspace.name.upper())


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    workspace = factory.SubFactory(WorkspaceFactory)
    user = factory.SubFactory(UserFactory)
    role = Role.READER


class AuditEventFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AuditEvent

    workspace = factory.SubFactory(WorkspaceFactory)
    actor_name = "olivia"
    action = AuditAction.UPDATE
    target_type = "compute"
    target_name = factory.Sequence(lambda n: f"target-{n}")
    changes = factory.LazyFunction(lambda: {"description": ["old", "new"]})


class ApiTokenFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ApiToken

    user = factory.SubFactory(UserFactory)
    name = factory.Sequence(lambda n: f"token-{n}")
    prefix = factory.Sequence(lambda n: f"dy_{n:07d}")
    key_hash = factory.Sequence(lambda n: hashlib.sha256(f"raw-{n}".encode()).hexdigest())
