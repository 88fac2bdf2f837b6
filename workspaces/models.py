"""Workspaces, who may use them, how scripts authenticate, and what everyone did."""
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from controlplane.kube import names

from .choices import AuditAction, Role


def validate_workspace_name(value: str) -> None:
    if names.dns_label_problem(value or ""):
        raise ValidationError(
            "Must be a DNS label: 1 to 63 lowercase letters, digits or hyphens, starting and ending with a letter or digit."
        )


class Workspace(models.Model):
    """A team's space: it owns compute targets, jobs and endpoints; members get roles in it."""

    name = models.CharField(max_length=63, unique=True, validators=[validate_workspace_name])
    display_name = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    tags = models.JSONField(default=dict, blank=True)
    # Local compute runs on the worker host (sandboxed); only staff turn it on, per workspace.
    local_compute_enabled = models.BooleanField(default=False)
    # Whether the sandbox of this workspace's local jobs and deployments gets a network (its own, via slirp4netns).
    local_network_enabled = models.BooleanField(default=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class Membership(models.Model):
    """A user's role in one workspace."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["user__username"]
        constraints = [models.UniqueConstraint(fields=["workspace", "user"], name="membership_unique_user")]

    def __str__(self):
        return f"{self.user} ({self.role}) in {self.workspace}"


class ApiToken(models.Model):
    """A bearer token for scripts and the CLI; only its SHA-256 is kept."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=16, db_index=True)
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    # The token this one was minted with, if any: revoking it deletes this one (and its children, transitively),
    # and this one never outlives it (token_create caps expires_at at the parent's).
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="children")

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"{self.prefix}… ({self.user})"


class Invitation(models.Model):
    """A one-time link that lets a user staff created set their first password; only its SHA-256 is kept."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="invitations")
    key_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"invitation of {self.user}"


class AuditEvent(models.Model):
    """One create/update/delete/action, with who, when, what and which fields (never secret values)."""

    workspace = models.ForeignKey(Workspace, null=True, blank=True, on_delete=models.CASCADE, related_name="events")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    actor_name = models.CharField(max_length=150, blank=True)
    action = models.CharField(max_length=16, choices=AuditAction.choices)
    verb = models.CharField(max_length=64, blank=True)
    target_type = models.CharField(max_length=64)
    target_name = models.CharField(max_length=255)
    changes = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["workspace", "-created_at", "-id"], name="event_ws_time")]

    def __str__(self):
        return f"{self.actor_name} {self.action} {self.target_type} {self.target_name}"
