"""Bearer-token authentication for scripts and the CLI."""
import hashlib
from datetime import timedelta

from django.utils import timezone
from rest_framework import authentication, exceptions

from .models import ApiToken
from .throttling import FailedAuthenticationThrottle

# Recording every use would turn each read into a write; a minute's precision is enough to spot stale tokens.
LAST_USED_PRECISION = timedelta(minutes=1)


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def valid_token(raw: str) -> ApiToken | None:
    """The unexpired token of an active user with this value, or None.

    A token minted from another never outlives it: revoking the parent deletes it (cascade) and its expiry is
    capped at the parent's when it is made (services.token_create), so one look at this row is enough.
    """
    token = ApiToken.objects.select_related("user").filter(key_hash=hash_token(raw)).first()
    now = timezone.now()
    if token is None or not token.user.is_active or (token.expires_at and token.expires_at <= now):
        return None
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_PRECISION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token


def user_for_token(raw: str):
    """Return the active user owning this unexpired token, or None."""
    token = valid_token(raw)
    return token.user if token else None


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        """Failures are counted per client address; past the limit every bearer request waits, a good token too."""
        if not authentication.get_authorization_header(request).lower().startswith(self.keyword.lower().encode()):
            return None
        throttle = FailedAuthenticationThrottle()
        throttle.refuse_if_over(request)
        try:
            return self.authenticate_bearer(request)
        except exceptions.AuthenticationFailed:
            throttle.record_failure(request)
            raise

    def authenticate_bearer(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1").split()
        if not header or header[0].lower() != self.keyword.lower():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("The Authorization header must be 'Bearer <token>'.")
        token = valid_token(header[1])
        if token is None:
            raise exceptions.AuthenticationFailed("The token is unknown, revoked or expired.")
        return token.user, token  # request.auth: the token, so that tokens minted with it are tied to it

    def authenticate_header(self, request):
        return self.keyword
