"""The errors assets' services and selectors raise: controlplane.api's, each with its status (the API's error shape)."""
from controlplane.api import BadRequest


class Refused(BadRequest):
    """A 400 with its own code, naming the field at fault."""


class OffsetConflict(BadRequest):
    """A chunk sent at an offset other than the bytes received so far (resume from `received`)."""

    status_code = 409


class Missing(BadRequest):
    """A 404 that says what is missing (chunks for an upload nobody started)."""

    status_code = 404


class UnsupportedArchive(BadRequest):
    """A 415: uploads/ takes a .tar.gz or a .zip only."""

    status_code = 415


class BodyTooLarge(BadRequest):
    """A 413 for a body that announced no length and ran past the limit (the middleware refuses the others)."""

    status_code = 413


class FetchRefused(BadRequest):
    """A 403: the fetch token is forged, expired, or names a snapshot no longer stored."""

    status_code = 403
