"""Text from outside Dockyard (a process's output, a cluster's messages) made storable, whatever bytes it held.

PostgreSQL refuses a NUL character in text, and a lone surrogate (what undecodable bytes become under
`surrogateescape`) cannot be encoded as UTF-8: either would make the write fail, and with it the loop that observes
the job. Both are stored as U+FFFD, the replacement character that invalid UTF-8 already decodes to
(`bytes.decode("utf-8", errors="replace")` wherever output is read), so a reader sees one mark for "a byte that
was not text" wherever it came from.
"""
import re

from django.db import models

REPLACEMENT = "\ufffd"
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(text: str) -> str:
    """`text` with NUL and lone surrogates replaced by U+FFFD."""
    return UNSTORABLE.sub(REPLACEMENT, text)


class StoredTextMixin:
    """A text field whose every write (save, bulk_create, update) goes through `storable`."""

    plain_field = ""  # the Django field it stores as

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        return storable(value) if isinstance(value, str) else value

    def deconstruct(self):
        # The column is the plain field's: migrations see no difference, so the field needs none.
        name, path, args, kwargs = super().deconstruct()
        return name, self.plain_field, args, kwargs


class StoredTextField(StoredTextMixin, models.TextField):
    """TextField for outside text (log lines, status reasons)."""

    plain_field = "django.db.models.TextField"


class StoredCharField(StoredTextMixin, models.CharField):
    """CharField for outside text (a log line's source)."""

    plain_field = "django.db.models.CharField"
