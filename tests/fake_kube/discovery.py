"""Discovery documents: /version, /api, /apis, resource lists, and a minimal OpenAPI."""
from __future__ import annotations

import re

from .resources import Registry, ResourceType

VERSION = {"major": "1", "minor": "36", "emulationMajor": "1", "emulationMinor": "36", "minCompatibilityMajor": "1",
           "minCompatibilityMinor": "35", "gitVersion": "v1.36.0", "gitCommit": "fake0000000000000000000000000000000000",
           "gitTreeState": "clean", "buildDate": "2026-04-22T00:00:00Z", "goVersion": "go1.25.0", "compiler": "gc",
           "platform": "linux/amd64"}


def version_priority(version: str) -> tuple:
    """Kubernetes version ordering: v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > anything else."""
    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not match:
        return (0, 0, 0, version)
    major, stage, minor = match.groups()
    return (1, {"alpha": 0, "beta": 1, None: 2}[stage], int(major), int(minor or 0))


def api_versions(host: str) -> dict:
    """/api."""
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}]}


def _group(name: str, versions: list[str]) -> dict:
    ordered = sorted(versions, key=version_priority, reverse=True)
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in ordered]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def api_groups(registry: Registry) -> dict:
    """/apis."""
    return {"kind": "APIGroupList", "apiVersion": "v1",
            "groups": [_group(g, vs) for g, vs in registry.groups().items()]}


def api_group(registry: Registry, name: str) -> dict | None:
    """/apis/{group}."""
    versions = registry.groups().get(name)
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)} if versions else None


def _entry(rt: ResourceType) -> dict:
    entry = {"name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced, "kind": rt.kind,
             "verbs": list(rt.verbs)}
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    return entry


def _subresource_entries(rt: ResourceType) -> list[dict]:
    out = []
    for sub in rt.subresources:
        if sub == "status":
            out.append({"name": f"{rt.plural}/status", "singularName": "", "namespaced": rt.namespaced,
                        "kind": rt.kind, "verbs": ["get", "patch", "update"]})
        elif sub == "log":
            out.append({"name": f"{rt.plural}/log", "singularName": "", "namespaced": rt.namespaced,
                        "kind": rt.kind, "verbs": ["get"]})
        elif sub == "scale":
            out.append({"name": f"{rt.plural}/scale", "singularName": "", "namespaced": rt.namespaced,
                        "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]})
    return out


def resource_list(registry: Registry, group: str, version: str) -> dict | None:
    """/api/v1 or /apis/{group}/{version}."""
    types = sorted((rt for rt in registry.all() if rt.group == group and rt.version == version),
                   key=lambda rt: rt.plural)
    if not types:
        return None
    resources = []
    for rt in types:
        resources.append(_entry(rt))
        resources += _subresource_entries(rt)
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version, "resources": resources}


def openapi_v2(registry: Registry) -> dict:
    """A minimal Swagger 2.0 document naming each served kind (enough for clients that only probe it)."""
    definitions = {}
    for rt in registry.all():
        name = f"{rt.group or 'core'}.{rt.version}.{rt.kind}"
        definitions[name] = {"type": "object", "x-kubernetes-group-version-kind": [
            {"group": rt.group, "version": rt.version, "kind": rt.kind}]}
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": VERSION["gitVersion"]},
            "paths": {}, "definitions": definitions}
