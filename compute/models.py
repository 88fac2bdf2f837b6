"""Compute targets: the records that are Dockyard's desired state for each kind of compute."""
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from controlplane.crypto import decrypt_json, encrypt_json
from controlplane.kube.resources import Shape
from controlplane.reconciling import Reconciled
from workspaces.models import Workspace

from .choices import ComputeType, DesiredState, InstanceState, StopCause
from .spec.rules import compute_name_problem


def validate_compute_name(value: str) -> None:
    """Azure ML's rule: 2–24 letters, digits or hyphens, starting with a letter; says what is wrong."""
    problem = compute_name_problem(value)
    if problem:
        raise ValidationError(problem)


class Cluster(models.Model):
    """One Kubernetes cluster, identified by its kube-system namespace's uid (not its URL); what was observed there.

    It holds no credentials: each attachment acts with its own, and is linked here only once they passed the checks.
    """

    uid = models.CharField(max_length=64, unique=True, null=True, blank=True)  # set by the first passing check
    server = models.CharField(max_length=500)  # where the last passing attachment reached it (for display)
    version = models.CharField(max_length=64, blank=True)
    crd_installed = models.BooleanField(default=False)
    nodes = models.JSONField(default=list, blank=True)
    checked_at = models.DateTimeField(null=True, blank=True)
    synced_at = models.DateTimeField(null=True, blank=True)  # when the nodes last changed
    nodes_read_at = models.DateTimeField(null=True, blank=True)  # when the nodes were last read, changed or not
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return self.server


class ComputeTarget(Reconciled):
    """A compute target of a workspace; type-specific settings in `properties`, secrets encrypted."""

    workspace = models.ForeignKey(Workspace, on_delete=models.PROTECT, related_name="computes")
    name = models.CharField(max_length=24, validators=[validate_compute_name])
    type = models.CharField(max_length=32, choices=ComputeType.choices)
    description = models.TextField(blank=True)
    tags = models.JSONField(default=dict, blank=True)
    # Non-secret, type-specific fields, already validated and normalised by the type's serializer.
    properties = models.JSONField(default=dict, blank=True)
    # Fernet token of a JSON map (kubeconfig, keys, passwords); never serialised.
    secrets_encrypted = models.TextField(blank=True, default="")
    secret_fields = models.JSONField(default=list, blank=True)
    cluster = models.ForeignKey(Cluster, null=True, blank=True, on_delete=models.SET_NULL, related_name="computes")
    # What reconcile last observed outside the database (a compute cluster's engine, pool and node counts); written
    # only when it changed, so a steady resync writes nothing.
    status = models.JSONField(default=dict, blank=True)
    checked_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="compute_unique_name")]
        indexes = [models.Index(fields=["workspace", "type"], name="compute_ws_type")]

    def __str__(self):
        return f"{self.workspace_id}/{self.name}"

    @property
    def secrets(self) -> dict:
        return decrypt_json(self.secrets_encrypted)

    @secrets.setter
    def secrets(self, value: dict) -> None:
        self.secrets_encrypted = encrypt_json(value)
        self.secret_fields = sorted(key for key, item in value.items() if item)


class InstanceType(Reconciled):
    """A named pod shape on a cluster: the `InstanceType` CR's spec, kept in canonical strings."""

    class Source(models.TextChoices):
        DOCKYARD = "dockyard"
        CLUSTER = "cluster"  # created with kubectl and imported; editing it adopts it

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="instance_types")
    name = models.CharField(max_length=253)
    node_selector = models.JSONField(default=dict, blank=True)
    requests = models.JSONField(default=dict)
    limits = models.JSONField(default=dict)
    gpu = models.PositiveIntegerField(default=0)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.DOCKYARD)
    # What the cluster's copy looked like at the last reconcile or resync (for drift display).
    observed_spec = models.JSONField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["cluster", "name"], name="instancetype_unique_name")]

    def __str__(self):
        return f"{self.cluster_id}/{self.name}"

    def shape(self, extension_selector: dict[str, str] | None = None) -> Shape:
        """The record as the one Shape every manifest, row and placement reads, on the compute attachment whose own
        node selector is `extension_selector` (none: the instance type alone, as its CR has it)."""
        return Shape(self.name, self.node_selector, self.requests, self.limits, self.gpu, extension_selector)

    @staticmethod
    def shape_fields(shape: Shape) -> dict:
        """The record's fields that hold a shape, as a shape gives them (`shape`'s inverse)."""
        return {"node_selector": shape.node_selector, "requests": shape.requests, "limits": shape.limits, "gpu": shape.gpu}


class ComputeInstance(models.Model):
    """A compute instance's run state beside its ComputeTarget: what was asked (desired, restarts, schedule firings)
    and what was observed (state, reason, last activity); the per-instance token lives in the target's secrets."""

    compute = models.OneToOneField(ComputeTarget, on_delete=models.CASCADE, related_name="instance")
    # Only this user (and staff) may open the instance: Azure ML's single owner. Null only when the user was deleted.
    assigned_user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    desired_state = models.CharField(max_length=16, choices=DesiredState.choices, default=DesiredState.RUNNING)
    stop_cause = models.CharField(max_length=16, choices=StopCause.choices, default=StopCause.NONE, blank=True)
    # A restart asked at this time is done once the server runs in a pod started after it.
    restart_requested_at = models.DateTimeField(null=True, blank=True)
    # The restart request reconcile last acted on (it deleted the pod then): a later request restarts again. Compared
    # with the request, never with the pod's start time, so the cluster's clock does not matter.
    restart_handled_at = models.DateTimeField(null=True, blank=True)
    state = models.CharField(max_length=16, choices=InstanceState.choices, default=InstanceState.CREATING)
    state_reason = models.TextField(blank=True, default="")
    state_changed_at = models.DateTimeField(null=True, blank=True)
    # When its server was first seen ready: until then a pod that is not ready is Creating, afterwards Starting.
    first_ready_at = models.DateTimeField(null=True, blank=True)
    # Idle shutdown: the newest activity any probe saw, what it was ("kernel busy", "terminal", "VS Code"), and when
    # the probes last answered (a failing probe never counts as idle, so this can lag).
    last_activity = models.DateTimeField(null=True, blank=True)
    last_activity_source = models.CharField(max_length=200, blank=True, default="")
    probed_at = models.DateTimeField(null=True, blank=True)
    probe_error = models.TextField(blank=True, default="")
    # Start/stop schedules: {"<index in schedules.compute_start_stop>": "<ISO time of the firing last acted on>"}.
    schedule_fired_at = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"instance {self.compute_id}"
