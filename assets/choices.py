from django.db import models


class ArchiveType(models.TextChoices):
    """Bodies `uploads/` takes: a gzip-compressed tar of the folder, or a zip of it."""

    GZIP = "application/gzip"
    X_GZIP = "application/x-gzip"
    ZIP = "application/zip"
