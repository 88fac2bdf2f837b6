"""A job on a compute cluster (amlcompute): what it may ask of the cluster, and why it waits (pure).

Azure ML's compute cluster runs one VM size: every instance of a job takes one whole node of it, so
`resources.instance_type` can only repeat that size and `instance_count` can never pass `max_instances`. While the
pods wait, the reason comes from the pool the autoscaler grows (`ComputeTarget.status`, written by the compute
cluster's reconcile), not from the scheduler's "0/3 nodes are available", which is about nodes that do not exist yet.
"""
FAILED = "Failed"


def request_problems(name: str, size: str, instance_type: str | None, instance_count: int,
                     max_instances: int) -> list[tuple[str, str]]:
    """(field path, reason) for what a job asks of compute cluster `name` that it can never give."""
    errors = []
    if instance_type and instance_type.strip().lower() != size.lower():
        errors.append(("resources.instance_type",
                       f"Compute cluster '{name}' runs {size} nodes only (Azure ML's clusters run their own size): "
                       f"leave instance_type out or give {size}, not {instance_type!r}."))
    if instance_count > max_instances:
        errors.append(("resources.instance_count",
                       f"Compute cluster '{name}' can never have {instance_count} nodes (max_instances is "
                       f"{max_instances}); each instance of a job takes one node: ask for at most {max_instances}."))
    return errors


def not_ready_reason(name: str, state: str, errors: list, status: dict) -> str:
    """Why a job cannot be submitted to the cluster yet ("" once it can): its pool is not declared, or it failed."""
    if state == FAILED:
        why = "; ".join(str(error.get("message", error) if isinstance(error, dict) else error).rstrip(". ")
                        for error in errors)
        return (f"Waiting for compute cluster '{name}', which is Failed" + (f": {why}" if why else "")
                + ". The job is submitted once the cluster is ready.")
    if not status.get("pool") or not status.get("engine"):
        return (f"Waiting for compute cluster '{name}' to be ready (its node pool is not declared yet); "
                "the job is submitted once it is.")
    return ""


def _nodes(count: int) -> str:
    return "a node" if count == 1 else f"{count} nodes"


def pool_wait_reason(name: str, status: dict, max_instances: int) -> str:
    """Why a job's pods wait on a compute cluster, from its pool's observed state: the autoscaler refused (its own
    sentence), nodes are launching, the pool is at max_instances with every node busy, or a launch is about to start."""
    where = f"Waiting for a node: compute cluster '{name}'"
    refusals = [str(sentence).strip() for sentence in status.get("autoscaler_errors") or [] if str(sentence).strip()]
    if refusals:
        return f"{where} cannot add a node: " + " ".join(refusals)
    maximum = status.get("max_node_count") or max_instances
    current = status.get("current_node_count") or 0
    launching = max((status.get("target_node_count") or 0) - current, 0)
    if launching:
        return f"{where} is adding {_nodes(launching)} ({launching} of at most {maximum} launching)."
    if status.get("scaling") == "at_limit" or current >= maximum:
        return (f"{where} is at max_instances ({maximum} nodes), all busy; the job starts when one frees up.")
    return f"{where} is about to add a node ({current} of at most {maximum} nodes now)."


def scheduler_message(pods: list[dict]) -> str:
    """The scheduler's own words for the first pod it could not place ("" when none waits on it)."""
    for pod in pods:
        for condition in (pod.get("status") or {}).get("conditions") or []:
            if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
                return condition.get("message") or condition.get("reason") or "Unschedulable"
    return ""
