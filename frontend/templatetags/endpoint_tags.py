"""Template helpers of the endpoint pages: traffic in a few words, state colours for small marks, auth labels."""
from django import template

from .studio import STATE_STYLES

register = template.Library()

AUTH_LABELS = {"key": "Key", "aml_token": "Token"}


@register.filter
def auth_label(auth_mode: str) -> str:
    return AUTH_LABELS.get(auth_mode, auth_mode)


@register.filter
def state_colour(state: str) -> str:
    """The colour of a state's badge, for marks smaller than a badge (a deployment's dot in the list)."""
    return STATE_STYLES.get(state, ("secondary", ""))[0]


@register.filter
def traffic_summary(traffic: dict) -> str:
    """{blue: 90, green: 10} as "blue 90% · green 10%"; shares of 0 left out."""
    shares = [f"{name} {share}%" for name, share in sorted((traffic or {}).items(), key=lambda item: -item[1]) if share]
    return " · ".join(shares) or "no traffic"
