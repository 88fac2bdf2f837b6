"""Read paths for compute records and the static catalogs."""
from django.conf import settings
from django.db.models import F, QuerySet
from django.utils import timezone

from workspaces.models import Workspace

from . import capabilities, vmsizes
from .models import ComputeTarget


def compute_list(*, workspace: Workspace, load_creators: bool = True) -> QuerySet[ComputeTarget]:
    """A workspace's compute records, secrets left in the database."""
    computes = ComputeTarget.objects.filter(workspace=workspace).defer("secrets_encrypted")
    if load_creators:
        return computes.select_related("created_by")
    # API pages need only the name (compute_as_dict reads it): a User built per row took a third of the list's time.
    return computes.annotate(created_by_name=F("created_by__username"))


def compute_get(*, workspace: Workspace, name: str) -> ComputeTarget:
    return ComputeTarget.objects.select_related("created_by", "workspace").get(workspace=workspace, name=name)


def vm_series_list(*, series: str = "", category: str = "", gpu: bool | None = None, supported_in: str = "", size: str = "") -> list[dict]:
    """The VM-size catalog, filtered like the other lists."""
    rows = vmsizes.series_rows(timezone.now().date())
    wanted_series = vmsizes.series_of_size(size) if size else None
    if size and wanted_series is None:
        return []

    def keep(row: dict) -> bool:
        return (
            (not series or series.lower() in [row["series"].lower(), *map(str.lower, row["aliases"])])
            and (not category or category.lower() in (row["category"], row["category_display"].lower()))
            and (gpu is None or row["gpu"] == gpu)
            and (not supported_in or supported_in in row["supported_in"])
            and (wanted_series is None or row["series"] == wanted_series.name)
        )

    return [row for row in rows if keep(row)]


def compute_type_list() -> list[dict]:
    return capabilities.capability_rows()


def local_compute() -> dict | None:
    """The built-in `local` target (no record), unless DOCKYARD_LOCAL_COMPUTE turns it off."""
    if not settings.DOCKYARD_LOCAL_COMPUTE:
        return None
    return {
        "name": "local", "type": "local", "description": "Runs on the worker's host.", "tags": {},
        "provisioning_state": "Succeeded", "provisioning_errors": [], "secrets_set": [],
        "created_by": None, "created_on": None, "updated_on": None,
    }
