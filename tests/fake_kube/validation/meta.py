"""Name, label, annotation and ObjectMeta rules of k8s.io/apimachinery validation, with its messages."""
from __future__ import annotations

import re

from ..errors import FieldError, forbidden, invalid, required

LABEL_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
DNS1035_RE = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
QUALIFIED_RE = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
LABEL_VALUE_RE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
IANA_SVC_RE = re.compile(r"[-a-z0-9]+")

LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
             "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
                 "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
                 r"is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
               "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
               "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
QUALIFIED_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                 "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                 "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
                   "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
                   "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
ANNOTATIONS_LIMIT = 256 * 1024


def too_long(limit: int) -> str:
    """The length message of the apimachinery validators."""
    return f"must be no more than {limit} characters"


def dns_label(value: str) -> list[str]:
    """IsDNS1123Label messages."""
    msgs = [too_long(63)] if len(value) > 63 else []
    return msgs + ([] if LABEL_RE.fullmatch(value) else [LABEL_MSG])


def dns_subdomain(value: str) -> list[str]:
    """IsDNS1123Subdomain messages."""
    msgs = [too_long(253)] if len(value) > 253 else []
    return msgs + ([] if SUBDOMAIN_RE.fullmatch(value) else [SUBDOMAIN_MSG])


def dns1035_label(value: str) -> list[str]:
    """IsDNS1035Label messages (Service names)."""
    msgs = [too_long(63)] if len(value) > 63 else []
    return msgs + ([] if DNS1035_RE.fullmatch(value) else [DNS1035_MSG])


def qualified_name(value: str) -> list[str]:
    """IsQualifiedName messages (label and annotation keys, finalizers)."""
    parts = value.split("/")
    if len(parts) > 2:
        return ["a qualified name " + QUALIFIED_MSG + " with an optional DNS subdomain prefix and '/' "
                "(e.g. 'example.com/MyName')"]
    msgs = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            msgs.append("prefix part must be non-empty")
        else:
            msgs += ["prefix part " + m for m in dns_subdomain(prefix)]
    if not name:
        msgs.append("name part must be non-empty")
    elif len(name) > 63:
        msgs.append("name part " + too_long(63))
    if name and not QUALIFIED_RE.fullmatch(name):
        msgs.append("name part " + QUALIFIED_MSG)
    return msgs


def label_value(value: str) -> list[str]:
    """IsValidLabelValue messages."""
    msgs = [too_long(63)] if len(value) > 63 else []
    return msgs + ([] if LABEL_VALUE_RE.fullmatch(value) else [LABEL_VALUE_MSG])


def validate_labels(labels, path: str) -> list[FieldError]:
    """Label keys are qualified names, values are label values (both reported at the map's path)."""
    errors = []
    for key, value in (labels or {}).items():
        errors += [invalid(path, key, msg) for msg in qualified_name(key)]
        errors += [invalid(path, value, msg) for msg in label_value(str(value))]
    return errors


def validate_annotations(annotations, path: str) -> list[FieldError]:
    """Annotation keys are qualified names (lower-cased); the total size is capped at 256 KiB."""
    errors = []
    total = 0
    for key, value in (annotations or {}).items():
        errors += [invalid(path, key, msg) for msg in qualified_name(key.lower())]
        total += len(key) + len(str(value))
    if total > ANNOTATIONS_LIMIT:
        errors.append(FieldError(path, "TooLong", detail=f"must have at most {ANNOTATIONS_LIMIT} bytes"))
    return errors


NAME_RULES = {"label": dns_label, "subdomain": dns_subdomain, "dns1035": dns1035_label}


def validate_object_meta(meta: dict, namespaced: bool, name_rule: str = "subdomain") -> list[FieldError]:
    """ValidateObjectMeta: name, namespace, labels, annotations, owner references, finalizers."""
    errors = []
    name = meta.get("name") or ""
    if not name:
        errors.append(required("metadata.name", "name or generateName is required"))
    else:
        errors += [invalid("metadata.name", name, m) for m in NAME_RULES[name_rule](name)]
    if namespaced:
        namespace = meta.get("namespace") or ""
        if not namespace:
            errors.append(required("metadata.namespace"))
        else:
            errors += [invalid("metadata.namespace", namespace, m) for m in dns_label(namespace)]
    errors += validate_labels(meta.get("labels"), "metadata.labels")
    errors += validate_annotations(meta.get("annotations"), "metadata.annotations")
    errors += _owner_references(meta.get("ownerReferences") or [])
    errors += _finalizers(meta.get("finalizers") or [])
    return errors


def _owner_references(refs: list) -> list[FieldError]:
    errors = []
    controllers = 0
    for ref in refs:
        for field in ("apiVersion", "kind", "name", "uid"):
            if not ref.get(field):
                detail = "" if field != "uid" else "uid must not be empty"
                errors.append(invalid(f"metadata.ownerReferences.{field}", ref.get(field, ""), detail or
                                      f"{field} must not be empty"))
        controllers += bool(ref.get("controller"))
    if controllers > 1:
        errors.append(invalid("metadata.ownerReferences", refs, "Only one reference can have Controller set to true"))
    return errors


def _finalizers(finalizers: list) -> list[FieldError]:
    errors = []
    for i, name in enumerate(finalizers):
        errors += [invalid(f"metadata.finalizers[{i}]", name, m) for m in qualified_name(name)]
    if len(set(finalizers)) != len(finalizers):
        errors.append(forbidden("metadata.finalizers", "duplicate finalizers"))
    return errors
