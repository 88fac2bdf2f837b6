"""A request as the API layer sees it (after routing), its body, and the server's behaviour switches."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import yaml

from .errors import bad_request
from .resources import ResourceType


@dataclass
class Call:
    """One API request after routing (or a controller's internal request)."""

    rt: ResourceType
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None
    query: dict = field(default_factory=dict)
    body: bytes = b""
    content_type: str = "application/json"
    user: str = "system:admin"
    user_agent: str = ""
    warnings: list = field(default_factory=list)

    @property
    def dry_run(self) -> bool:
        """dryRun=All: validate and answer, store nothing."""
        return self.query.get("dryRun") == "All"

    @property
    def manager(self) -> str:
        """fieldManager, or (like the real server) the User-Agent's product name."""
        return self.query.get("fieldManager") or (self.user_agent.split("/")[0] if self.user_agent else "unknown")

    @property
    def validation(self) -> str:
        """fieldValidation: Ignore, Warn (default) or Strict."""
        return self.query.get("fieldValidation") or "Warn"


@dataclass
class Settings:
    """Behaviour switches shared by the API and the simulation."""

    require_serviceaccount: bool = True
    serviceaccount_delay: float = 0.5
    crd_establish_delay: float = 0.0


def parse_body(call: Call):
    """The request body as JSON (or YAML for YAML content types); 400 when unreadable."""
    text = call.body.decode("utf-8", "replace") if isinstance(call.body, bytes) else call.body
    if not text.strip():
        raise bad_request("the body of the request was empty")
    try:
        return json.loads(text)
    except ValueError:
        if "yaml" not in call.content_type:
            raise bad_request("couldn't get version/kind; json parse error: invalid character in request body") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise bad_request(f"error decoding YAML: {error}") from None


def object_body(call: Call) -> dict:
    """The body as a JSON object (400 when it is not one)."""
    obj = parse_body(call)
    if not isinstance(obj, dict):
        raise bad_request(f"couldn't get version/kind; json parse error: json: cannot unmarshal "
                          f"{type(obj).__name__} into Go value of type struct")
    return obj
