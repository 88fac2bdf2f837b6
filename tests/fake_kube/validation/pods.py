"""PodSpec validation (pods and the pod templates of Jobs, Deployments, StatefulSets)."""
from __future__ import annotations

from ..errors import FieldError, forbidden, invalid, not_supported, required
from ..quantity import QuantityError, value_of
from .meta import dns_label, dns_subdomain, qualified_name, validate_labels
from .probes import validate_probes

STANDARD_CONTAINER_RESOURCES = {"cpu", "memory", "ephemeral-storage"}
VOLUME_SOURCES = {
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret", "nfs", "iscsi",
    "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "downwardAPI", "fc",
    "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "projected",
    "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral", "image",
}
PORT_RANGE = "must be between 1 and 65535, inclusive"
# Downward API fields an env var may read (validEnvDownwardAPIFieldPathExpressions); labels and annotations by key.
ENV_FIELD_PATHS = ("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName",
                   "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs")
# What ConvertDownwardAPIFieldLabel knows at all (others fail conversion before the env check).
POD_FIELD_LABELS = {"metadata.annotations", "metadata.labels", "spec.restartPolicy", "spec.schedulerName",
                    "status.phase", "spec.host", *ENV_FIELD_PATHS}
ENV_SOURCES = ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef", "fileKeyRef")
ENV_NAME_MSG = "a valid environment variable name must consist only of printable ASCII characters other than '='"


def overcommit_allowed(name: str) -> bool:
    """Native resources (no domain, or kubernetes.io) other than hugepages may have requests < limits."""
    native = "/" not in name or name.split("/")[0].endswith("kubernetes.io")
    return native and not name.startswith("hugepages-")


def is_integer_resource(name: str) -> bool:
    """Extended resources (and hugepages-free native ones like pods) must be whole numbers."""
    return not overcommit_allowed(name) and not name.startswith("hugepages-")


def _resource_name(name: str, path: str) -> list[FieldError]:
    errors = [invalid(path, name, m) for m in qualified_name(name)]
    if "/" not in name:
        if name not in STANDARD_CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            errors.append(invalid(path, name, "must be a standard resource for containers"))
    elif not name.split("/")[0].endswith("kubernetes.io") and name.startswith("requests."):
        # an extended resource may not look like a quota key (IsExtendedResourceName)
        errors.append(invalid(path, name, "doesn't follow extended resource name standard"))
    return errors


def _quantity(name: str, value, path: str) -> list[FieldError]:
    try:
        amount = value_of(value)
    except QuantityError:
        return []  # decoding already answered 400
    errors = []
    if amount < 0:
        errors.append(invalid(path, value, "must be greater than or equal to 0"))
    if is_integer_resource(name) and amount.denominator != 1:
        errors.append(invalid(path, value, "must be an integer"))
    return errors


def validate_resources(resources: dict, path: str) -> list[FieldError]:
    """ValidateResourceRequirements: names, non-negative quantities, request vs limit."""
    limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
    lim_path, req_path = f"{path}.limits", f"{path}.requests"
    errors = []
    for name, value in limits.items():
        errors += _resource_name(name, f"{lim_path}[{name}]") + _quantity(name, value, f"{lim_path}[{name}]")
    for name, value in requests.items():
        errors += _resource_name(name, f"{req_path}[{name}]") + _quantity(name, value, f"{req_path}[{name}]")
        errors += _request_vs_limit(name, value, limits, req_path, lim_path)
    return errors


def _request_vs_limit(name, value, limits, req_path, lim_path) -> list[FieldError]:
    try:
        request = value_of(value)
        limit = value_of(limits[name]) if name in limits else None
    except QuantityError:
        return []
    if limit is None:
        if overcommit_allowed(name):
            return []
        return [required(lim_path, "Limit must be set for non overcommitable resources")]
    if request != limit and not overcommit_allowed(name):
        return [invalid(req_path, value, f"must be equal to {name} limit of {limits[name]}")]
    if request > limit:
        return [invalid(req_path, value, f"must be less than or equal to {name} limit of {limits[name]}")]
    return []


def _ports(ports: list, path: str) -> list[FieldError]:
    errors = []
    for i, port in enumerate(ports):
        p = f"{path}[{i}]"
        number = port.get("containerPort")
        if not number:
            errors.append(required(f"{p}.containerPort"))
        elif not 1 <= number <= 65535:
            errors.append(invalid(f"{p}.containerPort", number, PORT_RANGE))
        if port.get("protocol", "TCP") not in ("TCP", "UDP", "SCTP"):
            errors.append(not_supported(f"{p}.protocol", port["protocol"], ["SCTP", "TCP", "UDP"]))
        if port.get("name") and (len(port["name"]) > 15 or not port["name"].replace("-", "").isalnum()):
            errors.append(invalid(f"{p}.name", port["name"], "must be no more than 15 characters"
                                  if len(port["name"]) > 15 else "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"))
    return errors


def _subscripted(field_path: str) -> tuple[str, str | None]:
    """fieldpath.SplitMaybeSubscriptedPath: "metadata.labels['a']" -> ("metadata.labels", "a")."""
    if not field_path.endswith("']"):
        return field_path, None
    head, sep, subscript = field_path[:-2].partition("['")
    return (head, subscript) if sep and head else (field_path, None)


def _field_ref(ref: dict, path: str) -> list[FieldError]:
    """validateObjectFieldSelector with the env var's allowed expressions."""
    version, field_path = ref.get("apiVersion") or "v1", ref.get("fieldPath") or ""  # apiVersion defaults to v1
    if not field_path:
        return [required(f"{path}.fieldPath")]
    head, subscript = _subscripted(field_path)
    if version != "v1":
        return [invalid(f"{path}.fieldPath", field_path, f"error converting fieldPath: unsupported pod version: {version}")]
    if subscript is not None:
        if head not in ("metadata.annotations", "metadata.labels"):
            return [invalid(f"{path}.fieldPath", field_path,
                            f"error converting fieldPath: field label does not support subscript: {field_path}")]
        key = subscript.lower() if head == "metadata.annotations" else subscript
        return [invalid(path, key, m) for m in qualified_name(key)]
    if field_path not in POD_FIELD_LABELS:
        return [invalid(f"{path}.fieldPath", field_path, f"error converting fieldPath: field label not supported: {field_path}")]
    if field_path not in ENV_FIELD_PATHS and field_path != "spec.host":
        return [not_supported(f"{path}.fieldPath", field_path, sorted(ENV_FIELD_PATHS))]
    return []


def _env(env: list, path: str) -> list[FieldError]:
    """ValidateEnv: names (relaxed rule, GA in 1.34) and exactly one valueFrom source, without a value."""
    errors = []
    for i, var in enumerate(env):
        p = f"{path}[{i}]"
        name = var.get("name") or ""
        if not name:
            errors.append(required(f"{p}.name"))
        elif "=" in name or any(not " " <= ch <= "~" for ch in name):
            errors.append(invalid(f"{p}.name", name, ENV_NAME_MSG))
        source = var.get("valueFrom")
        if source is None:
            continue
        sources = [key for key in ENV_SOURCES if source.get(key) is not None]
        if "fieldRef" in sources:
            errors += _field_ref(source["fieldRef"], f"{p}.valueFrom.fieldRef")
        if not sources:
            errors.append(invalid(f"{p}.valueFrom", "", "must specify one of: `fieldRef`, `resourceFieldRef`, "
                                                       "`configMapKeyRef` or `secretKeyRef`"))
        elif var.get("value"):
            errors.append(invalid(f"{p}.valueFrom", "", "may not be specified when `value` is not empty"))
        elif len(sources) > 1:
            errors.append(invalid(f"{p}.valueFrom", "", "may not have more than one field specified at a time"))
    return errors


def validate_container(c: dict, path: str, volumes: set[str]) -> list[FieldError]:
    """One container: name, image, ports, env, resources, volume mounts, pull policy."""
    errors = []
    if not c.get("name"):
        errors.append(required(f"{path}.name"))
    else:
        errors += [invalid(f"{path}.name", c["name"], m) for m in dns_label(c["name"])]
    if not c.get("image"):
        errors.append(required(f"{path}.image"))
    errors += _ports(c.get("ports") or [], f"{path}.ports")
    errors += _env(c.get("env") or [], f"{path}.env")
    errors += validate_resources(c.get("resources") or {}, f"{path}.resources")
    errors += validate_probes(c, path)
    errors += _volume_mounts(c.get("volumeMounts") or [], f"{path}.volumeMounts", volumes)
    policy = c.get("imagePullPolicy")
    if policy and policy not in ("Always", "IfNotPresent", "Never"):
        errors.append(not_supported(f"{path}.imagePullPolicy", policy, ["Always", "IfNotPresent", "Never"]))
    return errors


def _volume_mounts(mounts: list, path: str, volumes: set[str]) -> list[FieldError]:
    """ValidateVolumeMounts: a known volume, a unique mountPath, a subPath that stays below the volume."""
    errors, paths = [], set()
    for i, mount in enumerate(mounts):
        mp = f"{path}[{i}]"
        if not mount.get("name"):
            errors.append(required(f"{mp}.name"))
        elif mount["name"] not in volumes:
            errors.append(FieldError(f"{mp}.name", "NotFound", mount["name"]))
        if not mount.get("mountPath"):
            errors.append(required(f"{mp}.mountPath"))
        elif mount["mountPath"] in paths:
            errors.append(invalid(f"{mp}.mountPath", mount["mountPath"], "must be unique"))
        paths.add(mount.get("mountPath"))
        errors += _descending_path(mount.get("subPath") or "", f"{mp}.subPath")
    return errors


def _descending_path(value: str, path: str) -> list[FieldError]:
    """validateLocalDescendingPath: relative, without '..' parts."""
    if not value:
        return []
    if value.startswith("/"):
        return [invalid(path, value, "must be a relative path")]
    if ".." in value.split("/"):
        return [invalid(path, value, "must not contain '..'")]
    return []


def _secret_source(source: dict, path: str) -> list[FieldError]:
    """validateSecretVolumeSource: a secretName, modes within 0777, items with a key and a descending path."""
    errors = []
    if not source.get("secretName"):
        errors.append(required(f"{path}.secretName"))
    else:
        errors += [invalid(f"{path}.secretName", source["secretName"], m) for m in dns_subdomain(source["secretName"])]
    mode = source.get("defaultMode")
    if mode is not None and not 0 <= mode <= 0o777:
        errors.append(invalid(f"{path}.defaultMode", mode, "must be a number between 0 and 0777 (octal), both inclusive"))
    for i, item in enumerate(source.get("items") or []):
        if not item.get("key"):
            errors.append(required(f"{path}.items[{i}].key"))
        if not item.get("path"):
            errors.append(required(f"{path}.items[{i}].path"))
        errors += _descending_path(item.get("path") or "", f"{path}.items[{i}].path")
    return errors


INIT_ONLY_WITH_ALWAYS = ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe")


def _restart_policy(c: dict, path: str, init: bool) -> list[FieldError]:
    """A container's restartPolicy: `Always` makes an init container a native sidecar (GA in 1.33); a regular
    init container may not carry a lifecycle or probes; a main container takes no restartPolicy."""
    policy = c.get("restartPolicy")
    if not init:
        return [forbidden(f"{path}.restartPolicy", "may not be set for non-init containers")] if policy else []
    if policy is not None and policy != "Always":
        return [not_supported(f"{path}.restartPolicy", policy, ["Always"])]
    if policy == "Always":
        return []
    return [forbidden(f"{path}.{field}", "may not be set for init containers without restartPolicy=Always")
            for field in INIT_ONLY_WITH_ALWAYS if c.get(field) is not None]


def _volumes(volumes: list, path: str) -> tuple[set[str], list[FieldError]]:
    names, errors = set(), []
    for i, vol in enumerate(volumes):
        p = f"{path}[{i}]"
        name = vol.get("name") or ""
        if not name:
            errors.append(required(f"{p}.name"))
        else:
            errors += [invalid(f"{p}.name", name, m) for m in dns_label(name)]
            if name in names:
                errors.append(FieldError(f"{p}.name", "Duplicate", name))
            names.add(name)
        sources = [k for k in vol if k in VOLUME_SOURCES]
        if not sources:
            errors.append(required(p, "must specify a volume type"))
        elif len(sources) > 1:
            errors.append(forbidden(f"{p}.{sources[1]}", "may not specify more than 1 volume type"))
        if vol.get("secret") is not None:
            errors += _secret_source(vol["secret"], f"{p}.secret")
        size = (vol.get("emptyDir") or {}).get("sizeLimit")
        if size is not None:
            errors += _quantity("ephemeral-storage", size, f"{p}.emptyDir.sizeLimit")
    return names, errors


def _tolerations(tolerations: list, path: str) -> list[FieldError]:
    errors = []
    for i, tol in enumerate(tolerations):
        p = f"{path}[{i}]"
        operator = tol.get("operator") or "Equal"
        if tol.get("key"):
            errors += [invalid(f"{p}.key", tol["key"], m) for m in qualified_name(tol["key"])]
        elif operator != "Exists":
            errors.append(invalid(f"{p}.operator", operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
        if operator not in ("Equal", "Exists"):
            errors.append(not_supported(f"{p}.operator", operator, ["Equal", "Exists"]))
        elif operator == "Exists" and tol.get("value"):
            errors.append(invalid(f"{p}.operator", tol["value"], "value must be empty when `operator` is 'Exists'"))
        effect = tol.get("effect")
        if effect and effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            errors.append(not_supported(f"{p}.effect", effect, ["NoExecute", "NoSchedule", "PreferNoSchedule"]))
    return errors


def validate_pod_spec(spec: dict, path: str) -> list[FieldError]:
    """ValidatePodSpec: containers (non-empty, unique names), volumes, restart/DNS policy, scheduling fields."""
    volumes, errors = _volumes(spec.get("volumes") or [], f"{path}.volumes")
    containers = spec.get("containers") or []
    if not containers:
        errors.append(required(f"{path}.containers"))
    seen: set[str] = set()
    for field in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(field) or []):
            errors += validate_container(c, f"{path}.{field}[{i}]", volumes)
            errors += _restart_policy(c, f"{path}.{field}[{i}]", field == "initContainers")
            if c.get("name") in seen:
                errors.append(FieldError(f"{path}.{field}[{i}].name", "Duplicate", c["name"]))
            seen.add(c.get("name"))
    policy = spec.get("restartPolicy")
    if not policy:
        errors.append(required(f"{path}.restartPolicy"))
    elif policy not in ("Always", "OnFailure", "Never"):
        errors.append(not_supported(f"{path}.restartPolicy", policy, ["Always", "OnFailure", "Never"]))
    dns = spec.get("dnsPolicy")
    if dns and dns not in ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"):
        errors.append(not_supported(f"{path}.dnsPolicy", dns, ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]))
    errors += validate_labels(spec.get("nodeSelector"), f"{path}.nodeSelector")
    if spec.get("serviceAccountName"):
        errors += [invalid(f"{path}.serviceAccountName", spec["serviceAccountName"], m)
                   for m in dns_subdomain(spec["serviceAccountName"])]
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and not 1 <= deadline <= 2**31 - 1:
        errors.append(invalid(f"{path}.activeDeadlineSeconds", deadline, "must be between 1 and 2147483647, inclusive"))
    for field in ("hostname", "subdomain"):
        if spec.get(field):
            errors += [invalid(f"{path}.{field}", spec[field], m) for m in dns_label(spec[field])]
    errors += _tolerations(spec.get("tolerations") or [], f"{path}.tolerations")
    return errors


def validate_pod_template(template: dict, path: str) -> list[FieldError]:
    """ValidatePodTemplateSpec: template labels/annotations and its spec."""
    meta = template.get("metadata") or {}
    errors = validate_labels(meta.get("labels"), f"{path}.labels")
    if template.get("spec") is None:
        return errors + [required(f"{path}.spec.containers")]
    errors += validate_pod_spec(template["spec"], f"{path}.spec")
    if template["spec"].get("ephemeralContainers"):
        errors.append(forbidden(f"{path}.spec.ephemeralContainers", "ephemeral containers not allowed in pod template"))
    return errors
