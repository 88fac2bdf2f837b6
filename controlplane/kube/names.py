"""The one copy of Kubernetes' name rules (k8s.io/apimachinery/pkg/util/validation), pure: no Django, no client.

Each check returns None when the API server would accept the value, else one sentence in Dockyard's words saying
what is wrong. Patterns are matched whole (`fullmatch`): `$` alone would let a trailing newline through.
"""
import re

DNS_LABEL_MAX = 63
DNS_SUBDOMAIN_MAX = 253
LABEL_NAME_MAX = 63
LABEL_VALUE_MAX = 63

DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")  # a label key's name part, a label value

LABEL_CHARS = "letters, digits, '-', '_' or '.', starting and ending with a letter or digit"


def dns_label_problem(value: str) -> str | None:
    """IsDNS1123Label: namespaces, workspace names, most object names with a hostname."""
    return _problem(value, DNS_LABEL_MAX, DNS_LABEL, "lowercase letters, digits and '-', starting and ending with a "
                                                     "letter or digit")


def dns_subdomain_problem(value: str) -> str | None:
    """IsDNS1123Subdomain: most object names, label-key prefixes."""
    return _problem(value, DNS_SUBDOMAIN_MAX, DNS_SUBDOMAIN, "lowercase letters, digits, '-' and '.', each "
                                                             "dot-separated part starting and ending with a letter or digit")


def _problem(value: str, limit: int, pattern: re.Pattern, alphabet: str) -> str | None:
    if len(value) > limit:
        return f"'{_short(value)}' is longer than {limit} characters."
    return None if pattern.fullmatch(value) else f"'{_short(value)}' must be {alphabet}."


def label_key_problem(key: str) -> str | None:
    """IsQualifiedName: an optional DNS-subdomain prefix and '/', then a name of at most 63 characters."""
    parts = key.split("/")
    if len(parts) > 2:
        return f"Label key '{_short(key)}' has an invalid prefix: only one '/' may separate the prefix from the name."
    if len(parts) == 2:
        if not parts[0]:
            return f"Label key '{_short(key)}' has an invalid prefix: it is empty (remove the '/' or name a prefix)."
        problem = dns_subdomain_problem(parts[0])
        if problem:
            return f"Label key '{_short(key)}' has an invalid prefix: {problem}"
    name = parts[-1]
    if not name:
        return f"Label key '{_short(key)}' is invalid: the name after the prefix is empty."
    if len(name) > LABEL_NAME_MAX:
        return f"Label key '{_short(key)}' is invalid: its name is longer than {LABEL_NAME_MAX} characters."
    if not QUALIFIED_NAME.fullmatch(name):
        return f"Label key '{_short(key)}' is invalid: use {LABEL_CHARS}."
    return None


def label_value_problem(value: str) -> str | None:
    """IsValidLabelValue: empty, or at most 63 characters of the label-name alphabet."""
    if len(value) > LABEL_VALUE_MAX:
        return f"Label value '{_short(value)}' is invalid: it is longer than {LABEL_VALUE_MAX} characters."
    if value and not QUALIFIED_NAME.fullmatch(value):
        return f"Label value '{_short(value)}' is invalid: it may be empty, or use {LABEL_CHARS}."
    return None


def _short(value: str) -> str:
    """Echo at most 80 characters of what was sent, so a huge value does not make a huge message."""
    return value if len(value) <= 80 else value[:77] + "..."
