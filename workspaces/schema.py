"""OpenAPI description of Dockyard's own authentication (drf-spectacular cannot guess a custom class)."""
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import build_bearer_security_scheme_object


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """`Authorization: Bearer <token>`: tokens from POST /api/v1/tokens/ or `manage.py`."""

    target_class = "workspaces.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return build_bearer_security_scheme_object(header_name="Authorization", token_prefix="Bearer")
