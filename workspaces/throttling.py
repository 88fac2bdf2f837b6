"""Failed API authentications counted per client address: a guessed token costs a slot, and too many get a 429."""
from django.conf import settings
from rest_framework import exceptions
from rest_framework.throttling import SimpleRateThrottle


class FailedAuthenticationThrottle(SimpleRateThrottle):
    """Counts only failures: DRF's throttles run after authentication, so a refused token never reached them."""

    scope = "failed_auth"

    def get_rate(self) -> str:
        # Read at each request (DRF's throttles read theirs once at import), so the setting can be changed in tests.
        return settings.DOCKYARD_THROTTLE_FAILED_AUTH

    def get_cache_key(self, request, view=None) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

    def _recent(self, request) -> list[float]:
        self.key = self.get_cache_key(request)
        self.now = self.timer()
        return [moment for moment in self.cache.get(self.key, []) if moment > self.now - self.duration]

    def refuse_if_over(self, request) -> None:
        """Raise Throttled (429, Retry-After) while this address has used up its failures."""
        self.history = self._recent(request)
        if len(self.history) >= self.num_requests:
            raise exceptions.Throttled(self.wait())

    def record_failure(self, request) -> None:
        self.history = self._recent(request)
        self.history.insert(0, self.now)
        self.cache.set(self.key, self.history, self.duration)
