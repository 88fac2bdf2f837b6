"""Per-kind validation of built-in objects on create and update (what kube-apiserver answers 422 for)."""
from __future__ import annotations

import copy
import re

from ..errors import FieldError, forbidden, invalid, not_supported, required
from ..quantity import QuantityError, value_of
from ..selectors import labels_match, selector_terms
from .meta import dns_label, qualified_name, validate_labels
from .pods import validate_pod_spec, validate_pod_template

IMMUTABLE = "field is immutable"
MAX_INDEXED_PARALLELISM = 100_000  # maxParallelismForIndexedJob: caps the length of status.completedIndexes
CONFIG_KEY_RE = re.compile(r"[-._a-zA-Z0-9]+")
CONFIG_KEY_MSG = ("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
                  "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')")
POD_UPDATE_MSG = ("pod updates may not change fields other than `spec.containers[*].image`,"
                  "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to "
                  "existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
                  "previously negative)")
STS_UPDATE_MSG = ("updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
                  "'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and "
                  "'minReadySeconds' are forbidden")


def _nonnegative(spec: dict, field: str, path: str) -> list[FieldError]:
    value = spec.get(field)
    if isinstance(value, int) and value < 0:
        return [invalid(f"{path}.{field}", value, "must be greater than or equal to 0")]
    return []


def _selector_matches_template(spec: dict, path: str, kind_label: str) -> list[FieldError]:
    selector = spec.get("selector")
    if selector is None:
        return [required(f"{path}.selector")]
    errors = []
    terms = selector_terms(selector)
    if not terms and kind_label:
        errors.append(invalid(f"{path}.selector", selector, f"empty selector is invalid for {kind_label}"))
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if not labels_match(terms or [], labels):
        errors.append(invalid(f"{path}.template.metadata.labels", labels, "`selector` does not match template `labels`"))
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        if expr.get("operator") not in ("In", "NotIn", "Exists", "DoesNotExist"):
            errors.append(invalid(f"{path}.selector.matchExpressions[{i}].operator", expr.get("operator"),
                                  "not a valid selector operator"))
    return errors + validate_labels(selector.get("matchLabels"), f"{path}.selector.matchLabels")


def _always_restart(spec: dict, path: str) -> list[FieldError]:
    policy = (((spec.get("template") or {}).get("spec")) or {}).get("restartPolicy")
    if policy and policy != "Always":
        return [not_supported(f"{path}.template.spec.restartPolicy", policy, ["Always"])]
    return []


def job(obj: dict) -> list[FieldError]:
    """ValidateJob: generated selector, counts, template, restartPolicy Never/OnFailure."""
    spec = obj.get("spec") or {}
    errors = []
    if not spec.get("manualSelector"):
        expected = {"batch.kubernetes.io/controller-uid": obj["metadata"].get("uid")}
        if not labels_match(selector_terms(spec.get("selector")) or [], expected):
            errors.append(invalid("spec.selector", spec.get("selector"), "`selector` not auto-generated"))
    errors += _selector_matches_template(spec, "spec", "")
    for field in ("parallelism", "completions", "backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"):
        errors += _nonnegative(spec, field, "spec")
    mode = spec.get("completionMode", "NonIndexed")
    if mode not in ("NonIndexed", "Indexed"):
        errors.append(not_supported("spec.completionMode", mode, ["NonIndexed", "Indexed"]))
    elif mode == "Indexed":
        errors += _indexed(obj, spec)
    errors += validate_pod_template(spec.get("template") or {}, "spec.template")
    policy = ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy")
    if policy not in ("OnFailure", "Never"):
        errors.append(not_supported("spec.template.spec.restartPolicy", policy, ["OnFailure", "Never"]))
    return errors


def _indexed(obj: dict, spec: dict) -> list[FieldError]:
    """An Indexed Job: completions set, parallelism capped, and every pod hostname <name>-<index> a DNS label."""
    completions, parallelism = spec.get("completions"), spec.get("parallelism")
    if completions is None:
        return [required("spec.completions", "when completion mode is Indexed")]
    errors = []
    if isinstance(parallelism, int) and parallelism > MAX_INDEXED_PARALLELISM:
        errors.append(invalid("spec.parallelism", parallelism, f"must be less than or equal to {MAX_INDEXED_PARALLELISM} "
                                                               "when completion mode is Indexed"))
    name = obj["metadata"].get("name") or ""
    if isinstance(completions, int) and completions > 0 and name and dns_label(f"{name}-{completions - 1}"):
        errors.append(invalid("metadata.name", name, f"will not able to create pod with invalid DNS label: "
                                                     f"{name}-{completions - 1}"))
    return errors


def job_update(new: dict, old: dict) -> list[FieldError]:
    """Job: completions (unless elastic Indexed), selector, completionMode and template are immutable."""
    errors = []
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    for field in ("selector", "template", "completionMode"):
        if ns.get(field) != os_.get(field):
            errors.append(invalid(f"spec.{field}", ns.get(field), IMMUTABLE))
    elastic = ns.get("completionMode") == "Indexed" and ns.get("completions") == ns.get("parallelism")
    if ns.get("completions") != os_.get("completions") and not elastic:
        errors.append(invalid("spec.completions", ns.get("completions"), IMMUTABLE))
    return errors


def deployment(obj: dict) -> list[FieldError]:
    """ValidateDeployment: selector matches template, restartPolicy Always, counts, strategy."""
    spec = obj.get("spec") or {}
    errors = _selector_matches_template(spec, "spec", "deployment")
    for field in ("replicas", "minReadySeconds", "revisionHistoryLimit"):
        errors += _nonnegative(spec, field, "spec")
    errors += validate_pod_template(spec.get("template") or {}, "spec.template") + _always_restart(spec, "spec")
    strategy = spec.get("strategy") or {}
    if strategy.get("type") not in (None, "Recreate", "RollingUpdate"):
        errors.append(not_supported("spec.strategy.type", strategy["type"], ["Recreate", "RollingUpdate"]))
    if strategy.get("type") == "Recreate" and strategy.get("rollingUpdate"):
        errors.append(forbidden("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'"))
    deadline = spec.get("progressDeadlineSeconds")
    if deadline is not None and deadline <= spec.get("minReadySeconds", 0):
        errors.append(invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"))
    return errors


def selector_update(new: dict, old: dict) -> list[FieldError]:
    """apps/v1 controllers: the selector is immutable."""
    if (new.get("spec") or {}).get("selector") != (old.get("spec") or {}).get("selector"):
        return [invalid("spec.selector", (new.get("spec") or {}).get("selector"), IMMUTABLE)]
    return []


def replicaset(obj: dict) -> list[FieldError]:
    """ValidateReplicaSet."""
    spec = obj.get("spec") or {}
    errors = _selector_matches_template(spec, "spec", "replicaset") + _nonnegative(spec, "replicas", "spec")
    return errors + validate_pod_template(spec.get("template") or {}, "spec.template") + _always_restart(spec, "spec")


def statefulset(obj: dict) -> list[FieldError]:
    """ValidateStatefulSet."""
    spec = obj.get("spec") or {}
    errors = _selector_matches_template(spec, "spec", "statefulset") + _nonnegative(spec, "replicas", "spec")
    template = copy.deepcopy(spec.get("template") or {})
    volumes = (template.get("spec") or {}).setdefault("volumes", []) if template.get("spec") is not None else []
    for claim in spec.get("volumeClaimTemplates") or []:  # claims count as volumes of the template
        volumes.append({"name": (claim.get("metadata") or {}).get("name", ""),
                        "persistentVolumeClaim": {"claimName": "placeholder"}})
    errors += validate_pod_template(template, "spec.template") + _always_restart(spec, "spec")
    policy = spec.get("podManagementPolicy")
    if policy not in ("OrderedReady", "Parallel"):
        errors.append(not_supported("spec.podManagementPolicy", policy, ["OrderedReady", "Parallel"]))
    for i, claim in enumerate(spec.get("volumeClaimTemplates") or []):
        errors += _pvc_spec(claim.get("spec") or {}, f"spec.volumeClaimTemplates[{i}].spec")
    return errors


def statefulset_update(new: dict, old: dict) -> list[FieldError]:
    """Only replicas, ordinals, template, updateStrategy and a few more may change."""
    mutable = {"replicas", "ordinals", "template", "updateStrategy", "revisionHistoryLimit",
               "persistentVolumeClaimRetentionPolicy", "minReadySeconds"}
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    if any(ns.get(k) != os_.get(k) for k in set(ns) | set(os_) if k not in mutable):
        return [forbidden("spec", STS_UPDATE_MSG)]
    return []


def _service_port(port: dict, path: str, named: bool) -> list[FieldError]:
    errors = []
    if named and not port.get("name"):
        errors.append(required(f"{path}.name"))
    elif port.get("name"):
        errors += [invalid(f"{path}.name", port["name"], m) for m in dns_label(port["name"])]
    number = port.get("port")
    if not isinstance(number, int) or not 1 <= number <= 65535:
        errors.append(invalid(f"{path}.port", number, "must be between 1 and 65535, inclusive"))
    if port.get("protocol", "TCP") not in ("TCP", "UDP", "SCTP"):
        errors.append(not_supported(f"{path}.protocol", port["protocol"], ["SCTP", "TCP", "UDP"]))
    target = port.get("targetPort")
    if isinstance(target, int) and not 1 <= target <= 65535:
        errors.append(invalid(f"{path}.targetPort", target, "must be between 1 and 65535, inclusive"))
    return errors


def service(obj: dict) -> list[FieldError]:
    """ValidateService: type, ports (named when several, unique), selector labels."""
    spec = obj.get("spec") or {}
    errors = []
    kind = spec.get("type", "ClusterIP")
    if kind not in ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort"):
        errors.append(not_supported("spec.type", kind, ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]))
    ports = spec.get("ports") or []
    if not ports and kind != "ExternalName" and spec.get("clusterIP") != "None":
        errors.append(required("spec.ports"))
    names = set()
    for i, port in enumerate(ports):
        errors += _service_port(port, f"spec.ports[{i}]", len(ports) > 1)
        if port.get("name") in names:
            errors.append(FieldError(f"spec.ports[{i}].name", "Duplicate", port.get("name", "")))
        names.add(port.get("name"))
    return errors + validate_labels(spec.get("selector"), "spec.selector")


def service_update(new: dict, old: dict) -> list[FieldError]:
    """A Service keeps its ClusterIP."""
    old_ip, new_ip = (old.get("spec") or {}).get("clusterIP"), (new.get("spec") or {}).get("clusterIP")
    if old_ip and new_ip != old_ip:
        return [invalid("spec.clusterIPs[0]", new_ip, "may not change once set")]
    return []


def _pvc_spec(spec: dict, path: str) -> list[FieldError]:
    errors = []
    if not spec.get("accessModes"):
        errors.append(required(f"{path}.accessModes", "at least 1 access mode is required"))
    for i, mode in enumerate(spec.get("accessModes") or []):
        if mode not in ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"):
            errors.append(not_supported(f"{path}.accessModes[{i}]", mode,
                                        ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"]))
    if not ((spec.get("resources") or {}).get("requests") or {}).get("storage"):
        errors.append(required(f"{path}.resources[storage]"))
    return errors


def pvc(obj: dict) -> list[FieldError]:
    """ValidatePersistentVolumeClaim."""
    return _pvc_spec(obj.get("spec") or {}, "spec")


def pvc_update(new: dict, old: dict) -> list[FieldError]:
    """A claim's spec is immutable except its storage request."""
    ns, os_ = dict(new.get("spec") or {}), dict(old.get("spec") or {})
    ns.pop("resources", None), os_.pop("resources", None)
    ns.pop("volumeName", None), os_.pop("volumeName", None)
    if ns != os_:
        return [forbidden("spec", "spec is immutable after creation except resources.requests and "
                                  "volumeAttributesClassName for bound claims")]
    return []


def pod(obj: dict) -> list[FieldError]:
    """ValidatePod."""
    return validate_pod_spec(obj.get("spec") or {}, "spec")


def pod_update(new: dict, old: dict) -> list[FieldError]:
    """Pods may change only images, activeDeadlineSeconds and tolerations (additions)."""
    def strip(spec):
        spec = dict(spec or {})
        for key in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds", "schedulingGates"):
            spec.pop(key, None)
        for field in ("containers", "initContainers"):
            spec[field] = [{k: v for k, v in c.items() if k != "image"} for c in spec.get(field) or []]
        return spec
    if strip(new.get("spec")) != strip(old.get("spec")):
        return [forbidden("spec", POD_UPDATE_MSG)]
    return []


def config_data(obj: dict) -> list[FieldError]:
    """ConfigMap and Secret keys."""
    errors = []
    for section in ("data", "binaryData"):
        for key in obj.get(section) or {}:
            if not CONFIG_KEY_RE.fullmatch(key) or len(key) > 253:
                errors.append(invalid(f"{section}[{key}]", key, CONFIG_KEY_MSG))
    return errors


def immutable_data(new: dict, old: dict) -> list[FieldError]:
    """`immutable: true` ConfigMaps and Secrets keep their data."""
    if not old.get("immutable"):
        return []
    errors = []
    if not new.get("immutable"):
        errors.append(forbidden("immutable", "field is immutable when `immutable` is set"))
    for section in ("data", "binaryData"):
        if new.get(section) != old.get(section):
            errors.append(forbidden(section, "field is immutable when `immutable` is set"))
    return errors


METRIC_SOURCES = {"Object": "object", "Pods": "pods", "Resource": "resource", "External": "external",
                  "ContainerResource": "containerResource"}


def _metric_target(target: dict, path: str) -> list[FieldError]:
    """validateMetricTarget."""
    errors = []
    kind = target.get("type")
    if not kind:
        errors.append(required(f"{path}.type", "must specify a metric target type"))
    if kind not in ("Utilization", "Value", "AverageValue"):
        errors.append(invalid(f"{path}.type", kind or "", "must be either Utilization, Value, or AverageValue"))
    for field in ("value", "averageValue"):
        if target.get(field) is not None:
            try:
                positive = value_of(target[field]) > 0
            except QuantityError:
                positive = True  # decoding already answered 400
            if not positive:
                errors.append(invalid(f"{path}.{field}", target[field], "must be positive"))
    utilization = target.get("averageUtilization")
    if utilization is not None and utilization < 1:
        errors.append(invalid(f"{path}.averageUtilization", utilization, "must be greater than 0"))
    return errors


def _resource_metric(source: dict, path: str, container: bool) -> list[FieldError]:
    """validateResourceSource / validateContainerResourceSource (cpu/memory averages only)."""
    errors = []
    if not source.get("name"):
        errors.append(required(f"{path}.name", "must specify a resource name"))
    if container and not source.get("container"):
        errors.append(required(f"{path}.container", "must specify a container"))
    target = source.get("target") or {}
    errors += _metric_target(target, f"{path}.target")
    if target.get("averageUtilization") is None and target.get("averageValue") is None:
        errors.append(required(f"{path}.target.averageUtilization", "must set either a target raw value or a target utilization"))
    if target.get("averageUtilization") is not None and target.get("averageValue") is not None:
        errors.append(forbidden(f"{path}.target.averageValue", "may not set both a target raw value and a target utilization"))
    return errors


def _metrics(metrics: list, path: str) -> list[FieldError]:
    """validateMetrics / validateMetricSpec for every metric source type."""
    errors = []
    for i, metric in enumerate(metrics):
        p = f"{path}[{i}]"
        kind = metric.get("type")
        if not kind:
            errors.append(required(f"{p}.type", "must specify a metric source type"))
        if kind not in METRIC_SOURCES:
            errors.append(not_supported(f"{p}.type", kind or "", list(METRIC_SOURCES)))
            continue
        expected = METRIC_SOURCES[kind]
        present = [field for field in METRIC_SOURCES.values() if metric.get(field) is not None]
        if expected not in present:
            errors.append(required(f"{p}.{expected}", "must populate information for the given metric source"))
        errors += [forbidden(f"{p}.{field}", "must populate the given metric source only")
                   for field in sorted(present) if field != expected]
        if kind in ("Resource", "ContainerResource") and isinstance(metric.get(expected), dict):
            errors += _resource_metric(metric[expected], f"{p}.{expected}", kind == "ContainerResource")
    return errors


def hpa(obj: dict) -> list[FieldError]:
    """validateHorizontalPodAutoscalerSpec (autoscaling/v2): replica bounds, scale target, then metrics."""
    spec = obj.get("spec") or {}
    errors = []
    low, high = spec.get("minReplicas", 1), spec.get("maxReplicas", 0)
    if low < 1:
        errors.append(invalid("spec.minReplicas", low, "must be greater than or equal to 1"))
    if high < 1:
        errors.append(invalid("spec.maxReplicas", high, "must be greater than 0"))
    if high < low:
        errors.append(invalid("spec.maxReplicas", high, "must be greater than or equal to `minReplicas`"))
    ref = spec.get("scaleTargetRef") or {}
    ref_errors = []
    for field in ("kind", "name"):
        if not ref.get(field):
            ref_errors.append(required(f"spec.scaleTargetRef.{field}"))
        elif "/" in ref[field] or "%" in ref[field] or ref[field] in (".", ".."):
            ref_errors.append(invalid(f"spec.scaleTargetRef.{field}", ref[field], "may not contain '/'"))
    # The Go code checks metrics only when the reference is valid (else-if chain).
    return errors + (ref_errors or _metrics(spec.get("metrics") or [], "spec.metrics"))


def node(obj: dict) -> list[FieldError]:
    """Node taints: keys are qualified names, effects known."""
    errors = []
    for i, taint in enumerate((obj.get("spec") or {}).get("taints") or []):
        errors += [invalid(f"spec.taints[{i}].key", taint.get("key", ""), m) for m in qualified_name(taint.get("key", ""))]
        if taint.get("effect") not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            errors.append(not_supported(f"spec.taints[{i}].effect", taint.get("effect"),
                                        ["NoSchedule", "PreferNoSchedule", "NoExecute"]))
    return errors


CREATE = {"Job": job, "Deployment": deployment, "ReplicaSet": replicaset, "StatefulSet": statefulset,
          "Service": service, "PersistentVolumeClaim": pvc, "Pod": pod, "ConfigMap": config_data,
          "Secret": config_data, "HorizontalPodAutoscaler": hpa, "Node": node}
UPDATE = {"Job": [job_update], "Deployment": [selector_update], "ReplicaSet": [selector_update],
          "StatefulSet": [selector_update, statefulset_update], "Service": [service_update],
          "PersistentVolumeClaim": [pvc_update], "Pod": [pod_update], "ConfigMap": [immutable_data],
          "Secret": [immutable_data]}


def validate_kind(obj: dict) -> list[FieldError]:
    """Kind-specific create/update validation of the whole new object."""
    fn = CREATE.get(obj.get("kind", ""))
    return fn(obj) if fn else []


def validate_kind_update(new: dict, old: dict) -> list[FieldError]:
    """Kind-specific immutability rules of an update."""
    errors = []
    for fn in UPDATE.get(new.get("kind", ""), []):
        errors += fn(new, old)
    return errors
