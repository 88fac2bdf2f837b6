"""What still needs a snapshot: each app registers, in its AppConfig.ready, functions that list the ones it names.

The assets app imports neither jobs nor endpoints; they tell it instead. A provider takes no argument and returns
(workspace id, snapshot sha256) pairs; the collector keeps every snapshot some provider names, whatever its age.
"""
from collections.abc import Callable, Iterable, Iterator

from .models import Data, Model
from .specs.snapshots import upload_sha256

Provider = Callable[[], Iterable[tuple[int, str]]]

_providers: list[Provider] = []


def register(*providers: Provider) -> None:
    """Add providers (once each: a second ready() in tests registers nothing new)."""
    for provider in providers:
        if provider not in _providers:
            _providers.append(provider)


def registered() -> list[Provider]:
    return list(_providers)


def snapshots_in_use() -> set[tuple[int, str]]:
    """Every (workspace id, sha256) some registered provider names."""
    return {pair for provider in _providers for pair in provider()}


def named_uploads(rows: Iterable[tuple[int, object]]) -> Iterator[tuple[int, str]]:
    """(workspace id, `azureml://uploads/<sha256>`) rows → (workspace id, sha256), other values left out."""
    for workspace_id, value in rows:
        sha256 = upload_sha256(value)
        if sha256:
            yield workspace_id, sha256


def model_snapshots():
    """Model.snapshot (a foreign key, PROTECT)."""
    return Model.objects.values_list("workspace_id", "snapshot__sha256").iterator()


def data_snapshots():
    """Data.snapshot (a foreign key, PROTECT; none for an https:// URL)."""
    return Data.objects.exclude(snapshot=None).values_list("workspace_id", "snapshot__sha256").iterator()


ASSET_PROVIDERS = (  # one line a reference
    model_snapshots,
    data_snapshots,
)
