"""What every object Dockyard creates shares: deterministic names, our labels, the field manager (pure)."""
import hashlib
import re

MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGER = "dockyard"
FIELD_MANAGER = "dockyard"
LABEL_PREFIX = "dockyard.dev/"
GPU = "nvidia.com/gpu"


def object_name(base: str, unique: str, limit: int = 63) -> str:
    """A deterministic DNS-label name: a slug of `base` plus a short hash of `unique` (a retry never duplicates)."""
    slug = re.sub(r"[^a-z0-9-]+", "-", base.lower()).strip("-") or "obj"
    digest = hashlib.sha256(unique.encode()).hexdigest()[:8]
    return f"{slug[: limit - len(digest) - 1].rstrip('-')}-{digest}"


def labels(kind: str, **extra: str) -> dict[str, str]:
    """The labels every object we create carries, so resync can find (and garbage-collect) ours."""
    return {MANAGED_BY: MANAGER, f"{LABEL_PREFIX}kind": kind, **{f"{LABEL_PREFIX}{key}": value for key, value in extra.items()}}


def managed_selector(kind: str) -> str:
    return f"{MANAGED_BY}={MANAGER},{LABEL_PREFIX}kind={kind}"
