"""Artifact records: blobs (content by sha256, stored once), uploads in progress, and folder snapshots."""
from django.conf import settings
from django.db import models

from workspaces.models import Workspace


class Blob(models.Model):
    """Content this workspace uploaded, by sha256: its bytes are stored once in artifact storage, whoever sent them."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="blobs")
    sha256 = models.CharField(max_length=64)
    size = models.BigIntegerField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "sha256"], name="blob_unique_per_workspace")]

    def __str__(self):
        return self.sha256


class BlobUpload(models.Model):
    """A blob being uploaded in chunks: how many bytes have arrived (as parts in storage) of the size announced."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="blob_uploads")
    sha256 = models.CharField(max_length=64)
    size = models.BigIntegerField()
    received = models.BigIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "sha256"], name="blob_upload_unique_per_workspace")]

    def __str__(self):
        return f"{self.sha256} ({self.received}/{self.size})"


class BlobPart(models.Model):
    """One chunk of an upload, kept in storage under `key` until the whole blob is put together."""

    upload = models.ForeignKey(BlobUpload, on_delete=models.CASCADE, related_name="parts")
    offset = models.BigIntegerField()
    size = models.BigIntegerField()
    key = models.CharField(max_length=255)

    class Meta:
        ordering = ["offset"]
        constraints = [models.UniqueConstraint(fields=["upload", "offset"], name="blob_part_unique_offset")]


class Snapshot(models.Model):
    """A folder as stored: paths → blob and mode (`files`); its sha256 is that of the canonical manifest."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="snapshots")
    sha256 = models.CharField(max_length=64)
    # [[path, blob sha256, mode], ...] sorted by path: the canonical manifest (assets.specs.snapshots.canonical)
    files = models.JSONField(default=list)
    size = models.BigIntegerField()
    file_count = models.IntegerField()
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["workspace", "sha256"], name="snapshot_unique_per_workspace")]

    def __str__(self):
        return self.sha256

    @property
    def path(self) -> str:
        """How a job's `code`, a model's or data's `path` names it (API.md, uploads/)."""
        return f"azureml://uploads/{self.sha256}"


class AssetVersion(models.Model):
    """One version of a named asset in a workspace: its parsed spec, kept as written; archived versions leave @latest."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=255)
    version = models.CharField(max_length=30)
    # assets.specs.versions.sort_key(version): text whose order is the versions' (1 < 2 < 10 < 10.1 < 10.1-rc)
    sort_key = models.CharField(max_length=2048)
    description = models.TextField(blank=True, default="")
    tags = models.JSONField(default=dict)
    spec = models.JSONField(default=dict)
    archived = models.BooleanField(default=False)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True
        ordering = ["name", "-sort_key"]

    def __str__(self):
        return f"{self.name}:{self.version}"

    @property
    def reference(self) -> str:
        """How jobs and deployments name this version: azureml:<name>:<version>."""
        return f"azureml:{self.name}:{self.version}"


class Environment(AssetVersion):
    """An environment version: the image it runs and, optionally, a conda file realised on top of it."""

    image = models.CharField(max_length=1024)
    conda_file = models.JSONField(null=True, blank=True)

    class Meta(AssetVersion.Meta):
        constraints = [models.UniqueConstraint(fields=["workspace", "name", "version"], name="environment_unique_version")]
        indexes = [models.Index(fields=["workspace", "name", "sort_key"], name="environment_latest")]


class Model(AssetVersion):
    """A model version: an uploaded folder or file (`azureml://uploads/<sha256>`) and its type."""

    type = models.CharField(max_length=32)
    path = models.CharField(max_length=4096)
    snapshot = models.ForeignKey(Snapshot, on_delete=models.PROTECT, related_name="+")

    class Meta(AssetVersion.Meta):
        constraints = [models.UniqueConstraint(fields=["workspace", "name", "version"], name="model_unique_version")]
        indexes = [models.Index(fields=["workspace", "name", "sort_key"], name="model_latest")]


class Data(AssetVersion):
    """A data version: uri_file or uri_folder, at an uploaded path or an https:// URL."""

    type = models.CharField(max_length=32)
    path = models.CharField(max_length=4096)
    snapshot = models.ForeignKey(Snapshot, null=True, blank=True, on_delete=models.PROTECT, related_name="+")

    class Meta(AssetVersion.Meta):
        verbose_name_plural = "data"
        constraints = [models.UniqueConstraint(fields=["workspace", "name", "version"], name="data_unique_version")]
        indexes = [models.Index(fields=["workspace", "name", "sort_key"], name="data_latest")]
