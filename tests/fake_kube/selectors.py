"""Label selectors (string and LabelSelector forms) and field selectors."""
from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import bad_request

# Field selectors each kind supports beyond metadata.name / metadata.namespace.
FIELDS = {
    "pods": {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
             "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"},
    "events": {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
               "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
               "reason", "reportingComponent", "source", "type"},
    "nodes": {"spec.unschedulable"},
    "namespaces": {"status.phase"},
    "secrets": {"type"},
    "jobs": {"status.successful"},
    "replicasets": {"status.replicas"},
}
FIELD_ALIASES = {"source": "source.component"}


@dataclass(frozen=True)
class Requirement:
    """One term of a label selector."""

    key: str
    op: str  # =, !=, in, notin, exists, !, gt, lt
    values: tuple = ()

    def matches(self, labels: dict) -> bool:
        """Whether a label map satisfies this term."""
        present = self.key in labels
        value = labels.get(self.key)
        if self.op in ("=", "in"):
            return present and value in self.values
        if self.op in ("!=", "notin"):
            return not present or value not in self.values
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if not present or not re.fullmatch(r"-?\d+", value or ""):
            return False
        return int(value) > int(self.values[0]) if self.op == "gt" else int(value) < int(self.values[0])


_TERM = re.compile(
    r"\s*(?:(?P<not>!)\s*(?P<nkey>[^\s,!=()<>]+)"
    r"|(?P<key>[^\s,!=()<>]+)\s*(?:(?P<op>==|=|!=|<|>)\s*(?P<value>[^\s,()!=<>]*)"
    r"|\s+(?P<setop>in|notin)\s*\((?P<set>[^()]*)\))?)\s*(?:,|$)")


def parse_label_selector(text: str | None) -> list[Requirement]:
    """Parse `a=b,c!=d,e in (x,y),f notin (z),g,!h`; 400 BadRequest on bad syntax."""
    terms: list[Requirement] = []
    text = (text or "").strip()
    pos = 0
    while pos < len(text):
        match = _TERM.match(text, pos)
        if not match or match.end() == pos:
            raise bad_request(f"unable to parse requirement: found '{text[pos:]}', expected: identifier")
        terms.append(_requirement(match))
        pos = match.end()
    return terms


def _requirement(match: re.Match) -> Requirement:
    if match["not"]:
        return Requirement(match["nkey"], "!")
    key, op = match["key"], match["op"]
    if op:
        mapped = {"==": "=", "=": "=", "!=": "!=", ">": "gt", "<": "lt"}[op]
        return Requirement(key, mapped, (match["value"],))
    if match["setop"]:
        values = tuple(v.strip() for v in match["set"].split(",") if v.strip())
        return Requirement(key, match["setop"], values)
    return Requirement(key, "exists")


def labels_match(terms: list[Requirement], labels: dict | None) -> bool:
    """Whether every term matches."""
    labels = labels or {}
    return all(term.matches(labels) for term in terms)


def selector_terms(selector: dict | None) -> list[Requirement] | None:
    """A metav1.LabelSelector as terms (None selector selects nothing; {} selects everything)."""
    if selector is None:
        return None
    terms = [Requirement(k, "=", (v,)) for k, v in (selector.get("matchLabels") or {}).items()]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for expr in selector.get("matchExpressions") or []:
        terms.append(Requirement(expr["key"], ops.get(expr.get("operator"), "in"), tuple(expr.get("values") or ())))
    return terms


def parse_field_selector(text: str | None, plural: str) -> list[tuple[str, bool, str]]:
    """Parse `metadata.name=x,status.phase!=Running` into (field, equal?, value); 400 for unsupported fields."""
    result = []
    for term in filter(None, (t.strip() for t in (text or "").split(","))):
        match = re.fullmatch(r"([^=!]+?)\s*(==|=|!=)\s*(.*)", term)
        if not match:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        name, op, value = match.groups()
        if name not in ("metadata.name", "metadata.namespace") and name not in FIELDS.get(plural, set()):
            raise bad_request(f'field label not supported: {name}')
        result.append((name, op != "!=", value))
    return result


def _field_value(obj: dict, path: str):
    value = obj
    for part in FIELD_ALIASES.get(path, path).split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def fields_match(terms: list[tuple[str, bool, str]], obj: dict) -> bool:
    """Whether an object satisfies every field-selector term."""
    return all((_field_value(obj, path) == value) == equal for path, equal, value in terms)
