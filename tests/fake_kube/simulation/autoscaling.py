"""The HorizontalPodAutoscaler controller, as it behaves on a cluster without a metrics server.

It keeps the scale target's replicas within [minReplicas, maxReplicas] (the controller does this before it looks
at metrics) and reports that it cannot compute utilisation (no metrics API in the fake), with the real status shape.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from ..clock import stamp
from ..store import clone

SYNC_SECONDS = 15.0  # kube-controller-manager's --horizontal-pod-autoscaler-sync-period
TARGETS = {"Deployment": "deployments", "StatefulSet": "statefulsets", "ReplicaSet": "replicasets"}
NO_METRICS = ("the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics "
              "for resource cpu: no metrics returned from resource metrics API")


def _due(sim, hpa: dict) -> datetime:
    """The HPA's next sync: its queue adds every key with the sync period's delay, the first one too."""
    synced = sim.state.setdefault("hpa_synced", {})
    seen = sim.state.setdefault("hpa_seen", {}).setdefault(hpa["metadata"]["uid"], sim.now())
    return synced.get(hpa["metadata"]["uid"], seen) + timedelta(seconds=SYNC_SECONDS)


def next_due(sim) -> datetime | None:
    """The next HPA sync."""
    moments = [_due(sim, hpa) for hpa in sim.items("horizontalpodautoscalers", "autoscaling")
               if not hpa["metadata"].get("deletionTimestamp")]
    return min(moments) if moments else None


def horizontal_pod_autoscalers(sim) -> None:
    """Every SYNC_SECONDS (the first time SYNC_SECONDS after creation; until then the status is the server's
    `desiredReplicas: 0`): clamp the target's replicas into the HPA's bounds; write currentReplicas/desiredReplicas
    and conditions."""
    for hpa in sim.items("horizontalpodautoscalers", "autoscaling"):
        if hpa["metadata"].get("deletionTimestamp") or sim.now() < _due(sim, hpa):
            continue
        sim.state["hpa_synced"][hpa["metadata"]["uid"]] = sim.now()
        spec, namespace = hpa["spec"], hpa["metadata"]["namespace"]
        ref = spec.get("scaleTargetRef") or {}
        plural = TARGETS.get(ref.get("kind", ""))
        target = sim.store.get(("apps", plural), namespace, ref.get("name", "")) if plural else None
        now = stamp(sim.now())
        old = hpa.get("status") or {}
        if target is None:
            what = f'{plural or ref.get("kind", "").lower()}/scale.apps "{ref.get("name", "")}" not found'
            conditions = [("AbleToScale", "False", "FailedGetScale",
                           f"the HPA controller was unable to get the target's current scale: {what}")]
            sim.set_status(sim.rt("horizontalpodautoscalers", "autoscaling"), hpa, {
                **{k: v for k, v in old.items() if k in ("currentReplicas", "lastScaleTime")},
                "desiredReplicas": old.get("desiredReplicas", 0), "conditions": _conditions(old, conditions, now)})
            continue
        current = target["spec"].get("replicas", 1)
        low, high = spec.get("minReplicas", 1), spec.get("maxReplicas", 1)
        # Without metrics the controller keeps the desiredReplicas it had (0 until it first rescaled): it only
        # rescales, before looking at metrics, a target outside the bounds.
        desired, reason = current, ""
        if current > high:
            desired, reason = high, "Current number of replicas above Spec.MaxReplicas"
        elif current < low and current != 0:
            desired, reason = low, "Current number of replicas below Spec.MinReplicas"
        status = {"currentReplicas": (target.get("status") or {}).get("replicas", 0),
                  "desiredReplicas": desired if reason else old.get("desiredReplicas", 0)}
        if not status["currentReplicas"]:
            del status["currentReplicas"]  # omitempty
        if "lastScaleTime" in old:
            status["lastScaleTime"] = old["lastScaleTime"]
        if desired != current:
            new = clone(target)
            new["spec"]["replicas"] = desired
            sim.api._finish(_call(sim, target), target, new, "Update")
            sim.changed = True
            sim.events.record(hpa, "SuccessfulRescale", f"New size: {desired}; reason: {reason}",
                              component="horizontal-pod-autoscaler")
            status["lastScaleTime"] = now
        able = ("True", "SucceededRescale", f"the HPA controller was able to update the target scale to {desired}") \
            if desired != current else ("True", "SucceededGetScale", "the HPA controller was able to get the target's "
                                                                    "current scale")
        if current == 0 and low != 0:
            active = ("False", "ScalingDisabled", "scaling is disabled since the replica count of the target is zero")
        else:
            active = ("False", "FailedGetResourceMetric", NO_METRICS)
        conditions = [("AbleToScale",) + able, ("ScalingActive",) + active]
        if reason:
            conditions.append(("ScalingLimited", "True", "TooFewReplicas" if desired == low else "TooManyReplicas",
                               f"the desired replica count is {'less' if desired == low else 'more'} than the "
                               f"{'minimum' if desired == low else 'maximum'} replica count"))
        status["conditions"] = _conditions(old, conditions, now)
        sim.set_status(sim.rt("horizontalpodautoscalers", "autoscaling"), hpa, status)


def _call(sim, target: dict):
    from ..request import Call

    rt = sim.rt(TARGETS[target["kind"]] if target.get("kind") in TARGETS else "deployments", "apps")
    return Call(rt, target["metadata"]["namespace"], target["metadata"]["name"], None,
                {"fieldManager": "horizontal-pod-autoscaler"}, b"", "application/json",
                "system:serviceaccount:kube-system:horizontal-pod-autoscaler", "kube-controller-manager/v1.36.0")


def _conditions(old: dict, wanted: list[tuple], now: str) -> list[dict]:
    """setCondition: the given types are replaced (transition time kept while the status stays), others kept."""
    existing = {c["type"]: c for c in old.get("conditions") or []}
    for kind, status, reason, message in wanted:
        previous = existing.get(kind)
        moved = previous["lastTransitionTime"] if previous and previous.get("status") == status else now
        existing[kind] = {"type": kind, "status": status, "lastTransitionTime": moved, "reason": reason, "message": message}
    return list(existing.values())
