"""The compute-cluster form's pickers: the catalog's VM sizes a cluster can use, the workspace's Kubernetes computes."""
from django.utils import timezone

from compute import selectors, vmsizes
from controlplane.reconciling import ProvisioningState
from workspaces import selectors as workspace_selectors
from workspaces.choices import Role


def size_rows(target: str = vmsizes.CLUSTER) -> list[dict]:
    """The catalog's sizes a compute cluster (or instance: `target`) accepts today (the server's own rule: none retired), each with the words
    the picker shows and filters on: its category's label, its GPUs in a few words, the lower-case text search matches."""
    rows, today = [], timezone.now().date()
    for row in selectors.vm_size_list(supported_in=target):
        if row["retired"] or vmsizes.size_problem(row["name"], target, today):
            continue
        gpus = f"{row['gpus']} × {row['gpu_model']}" if row["gpus"] else ""
        words = (row["name"], row["series"], row["gpu_model"] or "", vmsizes.CATEGORIES.get(row["category"], ""))
        rows.append({**row, "category_label": vmsizes.CATEGORIES.get(row["category"], row["category"]),
                     "gpu_text": gpus, "search": " ".join(words).lower()})
    return rows


def host_choices(workspace) -> list[tuple[str, str]]:
    """(name, label) of each Kubernetes compute a cluster can live on; the label says its server and any unsettled state."""
    choices = []
    for compute in selectors.kubernetes_compute_list(workspace=workspace):
        state = "" if compute.provisioning_state == ProvisioningState.SUCCEEDED else f" ({compute.provisioning_state})"
        server = compute.properties.get("server") or "in-cluster"
        choices.append((compute.name, f"{compute.name} — {server}{state}"))
    return choices


def member_choices(workspace) -> list[tuple[str, str]]:
    """(user name, label) of the members a compute instance can be for: contributors and owners (they start and stop it)."""
    rows = workspace_selectors.member_list(workspace=workspace).filter(role__in=(Role.CONTRIBUTOR, Role.OWNER))
    return [(row.user.username, f"{row.user.username} ({row.role})") for row in rows]


def instance_type_suggestions(workspace) -> list[tuple[str, str]]:
    """(instance type, label) of the workspace's Kubernetes computes, for the compute-instance form's datalist."""
    suggestions = []
    for compute in selectors.kubernetes_compute_list(workspace=workspace):
        if compute.cluster_id:
            suggestions += [(row["name"], f"on {compute.name}") for row in selectors.instance_type_list(compute=compute)]
    return suggestions
