"""Online endpoints and their deployments: desired state, observed state, hashed keys."""
from pathlib import Path

from django.conf import settings
from django.db import models

from compute.models import ComputeTarget
from controlplane.reconciling import Reconciled
from workspaces.models import Workspace


class OnlineEndpoint(Reconciled):
    """A scoring URL with named deployments behind it and the traffic split between them."""

    class AuthMode(models.TextChoices):
        KEY = "key"
        AML_TOKEN = "aml_token"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="online_endpoints")
    name = models.CharField(max_length=32)
    description = models.TextField(blank=True)
    tags = models.JSONField(default=dict, blank=True)
    auth_mode = models.CharField(max_length=16, choices=AuthMode.choices, default=AuthMode.KEY)
    # "local", a kubernetes compute's name, or "" for a managed endpoint. `compute` is the Kubernetes attachment it runs
    # on: the named one, or for a managed endpoint the one its first deployment was placed on (none before that).
    compute_name = models.CharField(max_length=64, blank=True)
    compute = models.ForeignKey(ComputeTarget, null=True, blank=True, on_delete=models.PROTECT, related_name="online_endpoints")
    placement = models.JSONField(default=dict, blank=True)  # managed: the attachment chosen and why
    traffic = models.JSONField(default=dict, blank=True)
    mirror_traffic = models.JSONField(default=dict, blank=True)
    extra = models.JSONField(default=dict, blank=True)  # Azure ML fields kept as given (identity, public_network_access)
    # Only SHA-256 hashes and the first characters: a key is shown once, when it is made.
    primary_key_hash = models.CharField(max_length=64, blank=True)
    secondary_key_hash = models.CharField(max_length=64, blank=True)
    key_prefixes = models.JSONField(default=dict, blank=True)
    keys_rotated_at = models.JSONField(default=dict, blank=True)
    status = models.JSONField(default=dict, blank=True)  # observed: route (HTTPRoute or why not), per-deployment summary
    manifests = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="endpoint_unique_name")]

    def __str__(self):
        return f"{self.workspace_id}/{self.name}"

    @property
    def is_managed(self) -> bool:
        """No compute named: Dockyard places its deployments on compute clusters of their VM size."""
        return self.compute_name == ""

    @property
    def is_local(self) -> bool:
        return self.compute_name == "local"


class OnlineDeployment(Reconciled):
    """One model server behind an endpoint: its spec, the resources it resolved to, and what runs."""

    endpoint = models.ForeignKey(OnlineEndpoint, on_delete=models.CASCADE, related_name="deployments")
    name = models.CharField(max_length=32)
    spec = models.JSONField(default=dict)
    instance_type = models.CharField(max_length=253)
    resources = models.JSONField(default=dict)  # the container's requests/limits after the seed's rules
    instance_count = models.PositiveIntegerField(default=1)
    placement = models.JSONField(default=dict, blank=True)  # managed: the compute, size, pool and why (spec.placement)
    # Local: host, pid, port, restarts. Kubernetes: object names.
    runner = models.JSONField(default=dict, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    status = models.JSONField(default=dict, blank=True)  # observed: replicas, ready, reasons
    manifests = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["endpoint", "name"], name="deployment_unique_name")]

    def __str__(self):
        return f"{self.endpoint_id}/{self.name}"

    @property
    def local_folder(self) -> Path:
        """Where a local deployment's server keeps its log and pid (on the worker's host)."""
        endpoint = self.endpoint
        return Path(settings.DOCKYARD_DEPLOYMENT_DIR) / endpoint.workspace.name / endpoint.name / self.name
