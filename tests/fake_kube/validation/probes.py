"""Container probes as kube-apiserver v1.36 validates them (validateProbe, validateHandler, the liveness rule)."""
from __future__ import annotations

import re

from ..errors import FieldError, forbidden, invalid, not_supported, required
from .meta import too_long

HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")
COUNTS = ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold")
PORT_NAME_CHARS = re.compile(r"^[-a-z0-9]+$")
HEADER_NAME = re.compile(r"^[-A-Za-z0-9!#$%&'*+.^_`|~]+$")


def port_num_or_name(port, path: str) -> list[FieldError]:
    """ValidatePortNumOrName: 1-65535, or an IANA service name (IsValidPortName)."""
    if isinstance(port, bool) or port is None:
        return [required(path)] if port is None else [invalid(path, port, "must be between 1 and 65535, inclusive")]
    if isinstance(port, int):
        return [] if 1 <= port <= 65535 else [invalid(path, port, "must be between 1 and 65535, inclusive")]
    messages = []
    if len(port) > 15:
        messages.append(too_long(15))
    if not PORT_NAME_CHARS.match(port):
        messages.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search(r"[a-z]", port):
        messages.append("must contain at least one letter (a-z)")
    if "--" in port:
        messages.append("must not contain consecutive hyphens (--)")
    if port and (port[0] == "-" or port[-1] == "-"):
        messages.append("must not begin or end with a hyphen (-)")
    return [invalid(path, port, message) for message in messages]


def _handler(probe: dict, path: str) -> list[FieldError]:
    present = [name for name in HANDLERS if probe.get(name) is not None]
    if not present:
        return [required(path, "must specify a handler type")]
    errors = [forbidden(f"{path}.{name}", "may not specify more than 1 handler type") for name in present[1:]]
    get = probe.get("httpGet")
    if isinstance(get, dict) and present[0] == "httpGet":
        if not get.get("path"):
            errors.append(required(f"{path}.httpGet.path"))
        errors += port_num_or_name(get.get("port"), f"{path}.httpGet.port")
        if get.get("scheme", "HTTP") not in ("HTTP", "HTTPS"):
            errors.append(not_supported(f"{path}.httpGet.scheme", get["scheme"], ["HTTP", "HTTPS"]))
        for i, header in enumerate(get.get("httpHeaders") or []):
            if not HEADER_NAME.match(header.get("name") or ""):
                errors.append(invalid(f"{path}.httpGet.httpHeaders[{i}].name", header.get("name", ""),
                                      "a valid HTTP header must consist of alphanumeric characters or '-' (e.g. "
                                      "'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')"))
    tcp = probe.get("tcpSocket")
    if isinstance(tcp, dict) and present[0] == "tcpSocket":
        errors += port_num_or_name(tcp.get("port"), f"{path}.tcpSocket.port")
    return errors


def validate_probe(probe: dict, path: str) -> list[FieldError]:
    """One probe: exactly one handler, non-negative counts, a positive terminationGracePeriodSeconds."""
    errors = _handler(probe, path)
    for field in COUNTS:
        value = probe.get(field)
        if isinstance(value, int) and value < 0:
            errors.append(invalid(f"{path}.{field}", value, "must be greater than or equal to 0"))
    grace = probe.get("terminationGracePeriodSeconds")
    if grace is not None and grace <= 0:
        errors.append(invalid(f"{path}.terminationGracePeriodSeconds", grace, "must be greater than 0"))
    return errors


def validate_probes(container: dict, path: str) -> list[FieldError]:
    """A container's liveness, readiness and startup probes (liveness/startup successThreshold must be 1)."""
    errors = []
    for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = container.get(kind)
        if not isinstance(probe, dict):
            continue
        errors += validate_probe(probe, f"{path}.{kind}")
        if kind != "readinessProbe" and probe.get("successThreshold", 1) != 1:
            errors.append(invalid(f"{path}.{kind}.successThreshold", probe["successThreshold"], "must be 1"))
        if kind == "readinessProbe" and probe.get("terminationGracePeriodSeconds") is not None:
            errors.append(invalid(f"{path}.{kind}.terminationGracePeriodSeconds", probe["terminationGracePeriodSeconds"],
                                  "must not be set for readinessProbes"))
    return errors


def default_probes(container: dict) -> None:
    """SetDefaults_Probe and SetDefaults_HTTPGetAction."""
    for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = container.get(kind)
        if not isinstance(probe, dict):
            continue
        for field, value in (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1), ("failureThreshold", 3)):
            if not probe.get(field):
                probe[field] = value
        get = probe.get("httpGet")
        if isinstance(get, dict):
            if not get.get("path"):
                get["path"] = "/"
            get.setdefault("scheme", "HTTP")
