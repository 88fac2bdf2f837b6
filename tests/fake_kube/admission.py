"""Admission plugins of kube-apiserver that the fake runs: ServiceAccount (pods need theirs) and Priority (a pod's
priority from its PriorityClass; one global default PriorityClass)."""
from __future__ import annotations

from .errors import forbidden_request
from .store import Store

PREEMPT_LOWER = "PreemptLowerPriority"


def admission_name(meta: dict, requested: str | None) -> str:
    """The name admission errors show: the requested name, else the generateName (names are generated later)."""
    return requested or meta.get("generateName") or meta.get("name") or ""


def admit(store: Store, plural: str, group: str, namespace: str | None, obj: dict, requested: str | None,
          require_serviceaccount: bool) -> None:
    """Run the admission plugins for a create (403 Forbidden as the plugins answer)."""
    if plural == "pods" and group == "":
        if require_serviceaccount:
            _serviceaccount(store, namespace or "", obj, requested)
        _priority(store, obj, requested)
    elif plural == "priorityclasses" and group == "scheduling.k8s.io":
        _one_default(store, obj, creating=True)


def admit_update(store: Store, plural: str, group: str, obj: dict, old: dict) -> None:
    """Update-time admission: the pod keeps its admitted priority; a second global default is refused."""
    if plural == "pods" and group == "":
        for key in ("priority", "preemptionPolicy"):
            if key not in obj["spec"] and key in old["spec"]:
                obj["spec"][key] = old["spec"][key]
    elif plural == "priorityclasses" and group == "scheduling.k8s.io":
        _one_default(store, obj, creating=False)


def _forbidden(plural: str, name: str, message: str):
    return forbidden_request(f'{plural} "{name}" is forbidden: {message}', plural, "", name)


def _serviceaccount(store: Store, namespace: str, obj: dict, requested: str | None) -> None:
    account = obj["spec"].get("serviceAccountName", "default")
    if store.get(("", "serviceaccounts"), namespace, account) is None:
        raise _forbidden("pods", admission_name(obj["metadata"], requested), (
            f'error looking up service account {namespace}/{account}: serviceaccount "{account}" not found'))


def default_class(store: Store) -> dict | None:
    """The globalDefault PriorityClass (the lowest value wins if several are)."""
    defaults = [pc for pc in store.items(("scheduling.k8s.io", "priorityclasses")) if pc.get("globalDefault")]
    return min(defaults, key=lambda pc: pc.get("value", 0)) if defaults else None


def _priority(store: Store, pod: dict, requested: str | None) -> None:
    """The Priority plugin's admitPod: resolve priorityClassName (or the default) into priority/preemptionPolicy."""
    spec, name = pod["spec"], admission_name(pod["metadata"], requested)
    class_name = spec.get("priorityClassName") or ""
    if not class_name:
        found = default_class(store)
        if found is not None:
            spec["priorityClassName"] = found["metadata"]["name"]
        value, policy = (found.get("value", 0), found.get("preemptionPolicy")) if found else (0, PREEMPT_LOWER)
    else:
        found = store.get(("scheduling.k8s.io", "priorityclasses"), "", class_name)
        if found is None:
            raise _forbidden("pods", name, f"no PriorityClass with name {class_name} was found")
        value, policy = found.get("value", 0), found.get("preemptionPolicy")
    if spec.get("priority") is not None and spec["priority"] != value:
        raise _forbidden("pods", name, f"the integer value of priority ({spec['priority']}) must not be provided in "
                                       f"pod spec; priority admission controller computed {value} from the given "
                                       f"PriorityClass name")
    spec["priority"] = value
    if policy is not None:
        if spec.get("preemptionPolicy") is not None and spec["preemptionPolicy"] != policy:
            raise _forbidden("pods", name, f"the string value of PreemptionPolicy ({spec['preemptionPolicy']}) must "
                                           f"not be provided in pod spec; priority admission controller computed "
                                           f"{policy} from the given PriorityClass name")
        spec["preemptionPolicy"] = policy


def _one_default(store: Store, pc: dict, creating: bool) -> None:
    if not pc.get("globalDefault"):
        return
    current = default_class(store)
    if current is not None and (creating or current["metadata"]["name"] != pc["metadata"]["name"]):
        name = pc["metadata"]["name"]
        raise forbidden_request(f'priorityclasses.scheduling.k8s.io "{name}" is forbidden: PriorityClass '
                                f'{current["metadata"]["name"]} is already marked as default. Only one default can '
                                f'exist', "priorityclasses", "scheduling.k8s.io", name)
