"""Subresources with their own shapes: pods/log and the autoscaling/v1 Scale of workloads."""
from __future__ import annotations

import re
from datetime import timedelta

from .api import Api
from .clock import parse_stamp
from .errors import ApiError, FieldError, bad_request, forbidden, invalid, invalid_object, not_found
from .patches import json_patch, merge_patch
from .request import Call, parse_body
from .selectors import selector_terms
from .store import clone

# The kubelet words the two image pull states itself (validateContainerLogStatus); other reasons are quoted as they are.
WAITING_WORDS = {"ErrImagePull": "image can't be pulled", "ImagePullBackOff": "trying and failing to pull image"}


RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")
INTEGER_OPTIONS = ("sinceSeconds", "tailLines", "limitBytes")


def flag(value: str | None) -> bool:
    """A boolean query parameter as apimachinery converts it: absent, "0" and "false" are false, anything else true."""
    return value is not None and value != "0" and value.lower() != "false"


def check_log_options(call: Call) -> None:
    """PodLogOptions as the apiserver decodes (400) and validates them (422) before it looks at the pod."""
    query = call.query
    for key in INTEGER_OPTIONS:
        if key in query and not re.fullmatch(r"[+-]?\d+", query[key]):
            raise bad_request(f'strconv.ParseInt: parsing "{query[key]}": invalid syntax')
    if "sinceTime" in query and not RFC3339.fullmatch(query["sinceTime"]):
        value = query["sinceTime"]
        raise bad_request(f'parsing time "{value}" as "2006-01-02T15:04:05Z07:00": cannot parse "{value}" as "2006"')
    errors: list[FieldError] = []
    if "tailLines" in query and int(query["tailLines"]) < 0:
        errors.append(invalid("tailLines", int(query["tailLines"]), "must be greater than or equal to 0"))
    if "limitBytes" in query and int(query["limitBytes"]) < 1:
        errors.append(invalid("limitBytes", int(query["limitBytes"]), "must be greater than 0"))
    if "sinceSeconds" in query and "sinceTime" in query:
        errors.append(forbidden("", "at most one of `sinceTime` or `sinceSeconds` may be specified"))
    elif "sinceSeconds" in query and int(query["sinceSeconds"]) < 1:
        errors.append(invalid("sinceSeconds", int(query["sinceSeconds"]), "must be greater than 0"))
    if errors:
        raise invalid_object("PodLogOptions", "", call.name or "", errors)


def log_container(api: Api, call: Call, unreachable: dict | None = None) -> tuple[dict, str | None]:
    """The pod and container a log request is about (400s worded like the kubelet/apiserver); no container when the
    pod has no node yet (the apiserver then answers 200 with an empty body). `unreachable`: (namespace, pod) -> the
    error met reaching its kubelet (a 500 without a reason)."""
    check_log_options(call)
    pod = api.store.get(call.rt.key, call.namespace or "", call.name)
    if pod is None:
        raise not_found("pods", "", call.name)
    names = [c["name"] for c in pod["spec"].get("containers") or []]
    init = [c["name"] for c in pod["spec"].get("initContainers") or []]
    container = call.query.get("container")
    if not container:
        if len(names) != 1:
            raise bad_request(f"a container name must be specified for pod {call.name}, choose one of: "
                              f"[{' '.join(names)}]" + (f" or one of the init containers: [{' '.join(init)}]" if init else ""))
        container = names[0]
    if container not in names + init:
        raise bad_request(f"container {container} is not valid for pod {call.name}")
    if not pod["spec"].get("nodeName"):
        return pod, None  # LogLocation: "if pod has not been assigned a host, return an empty location"
    if (unreachable or {}).get((call.namespace, call.name)):
        raise ApiError(500, "", unreachable[(call.namespace, call.name)])
    status = pod.get("status") or {}
    statuses = {s["name"]: s for s in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or [])}
    waiting = (statuses.get(container, {}).get("state") or {}).get("waiting")
    if waiting is not None or container not in statuses:
        reason = (waiting or {}).get("reason", "ContainerCreating")
        reason = WAITING_WORDS.get(reason, reason)
        raise bad_request(f'container "{container}" in pod "{call.name}" is waiting to start: {reason}')
    return pod, container


def select_lines(lines: list, query: dict, now) -> list[str]:
    """Apply sinceSeconds / sinceTime / tailLines / timestamps / limitBytes to (time, text) lines."""
    since = None
    if query.get("sinceSeconds"):
        since = now - timedelta(seconds=int(query["sinceSeconds"]))
    elif query.get("sinceTime"):
        # The apiserver passes sinceTime on to the kubelet as RFC 3339 with whole seconds: a fraction is dropped.
        since = parse_stamp(query["sinceTime"]).replace(microsecond=0)
    chosen = [(t, line) for t, line in lines if since is None or t >= since]
    if query.get("tailLines") not in (None, ""):
        tail = int(query["tailLines"])
        chosen = chosen[-tail:] if tail else []
    stamps = flag(query.get("timestamps"))
    return [(t.strftime("%Y-%m-%dT%H:%M:%S.%f000Z") + " " if stamps else "") + line for t, line in chosen]


def limit_bytes(text: str, query: dict) -> str:
    """limitBytes truncation."""
    limit = query.get("limitBytes")
    return text.encode()[: int(limit)].decode("utf-8", "ignore") if limit else text


def scale_of(api: Api, call: Call) -> dict:
    """GET .../scale: the autoscaling/v1 Scale view of a workload."""
    obj = api.store.get(call.rt.key, call.namespace or "", call.name)
    if obj is None:
        raise not_found(call.rt.plural, call.rt.group, call.name)
    terms = selector_terms(obj["spec"].get("selector")) or []
    selector = ",".join(f"{t.key}={t.values[0]}" if t.op == "=" else t.key for t in terms)
    meta = {k: obj["metadata"][k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in obj["metadata"]}
    return {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": meta,
            "spec": {"replicas": obj["spec"].get("replicas", 1)},
            "status": {"replicas": (obj.get("status") or {}).get("replicas", 0), "selector": selector}}


def write_scale(api: Api, call: Call) -> dict:
    """PUT/PATCH .../scale: change spec.replicas through the normal update path."""
    current = scale_of(api, call)
    body = parse_body(call)
    if call.content_type.startswith("application/json-patch"):
        wanted = json_patch(current, body)
    elif call.content_type.endswith("patch+json") or call.content_type.startswith("application/apply"):
        wanted = merge_patch(current, body)
    else:
        wanted = body
    replicas = (wanted.get("spec") or {}).get("replicas")
    with api.store.lock:
        obj = api.store.get(call.rt.key, call.namespace or "", call.name)
        new = clone(obj)
        new["spec"]["replicas"] = replicas
        inner = Call(call.rt, call.namespace, call.name, None, dict(call.query), b"", call.content_type, call.user,
                     call.user_agent, call.warnings)
        api._finish(inner, obj, new, "Update")
        return scale_of(api, call)
