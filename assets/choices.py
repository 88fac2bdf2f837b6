from django.db import models


class FileMode(models.IntegerChoices):
    """The two modes a snapshot keeps for a file, as git does (an upload's other bits are folded into these)."""

    REGULAR = 0o644, "0644"
    EXECUTABLE = 0o755, "0755"


class ArchiveType(models.TextChoices):
    """Bodies `uploads/` takes: a gzip-compressed tar of the folder."""

    GZIP = "application/gzip"
    X_GZIP = "application/x-gzip"
