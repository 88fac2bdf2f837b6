"""What every resource's apply shares: its outcome, the scope documents go to, and the lookups behind plain 404s."""
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from ..client import ApiClient, Response, path_of
from ..errors import EXIT_NOT_LOGGED_IN, ApiError, CliError, ConnectionFailed, InvalidInput

T = TypeVar("T")


@dataclass
class Outcome:
    """What apply did (or would do) to one resource; `error` when it failed (an item of an InstanceTypeList)."""

    resource: str
    action: str
    dry_run: bool = False
    changes: list[str] = field(default_factory=list)
    note: str = ""
    error: CliError | None = None
    keys: dict = field(default_factory=dict)  # an endpoint's keys, in the one answer that shows them

    def line(self) -> str:
        """`compute/NAME configured`, plus `(dry run: changed fields; notes)` when planning."""
        notes = []
        if self.dry_run:
            notes.append("dry run: " + ", ".join(self.changes) if self.changes else "dry run")
        if self.note:
            notes.append(self.note)
        suffix = f" ({'; '.join(notes)})" if notes else ""
        return f"{self.resource} {self.action}{suffix}"

    def as_dict(self) -> dict:
        if self.error is not None:
            return {"resource": self.resource, "action": "failed", "error": self.error.as_dict()}
        result = {"resource": self.resource, "action": self.action, "dry_run": self.dry_run, "changes": self.changes}
        return {**result, "keys": self.keys} if self.keys else result


def changed(resource: str, changes: list[str], dry_run: bool = False, **extra) -> Outcome:
    """`configured` when something changed (or would), else `unchanged`."""
    return Outcome(resource, "configured" if changes else "unchanged", dry_run, changes, **extra)


def created(resource: str, dry_run: bool, write: Callable[[], object]) -> Outcome:
    """A new resource: written unless this is a dry run."""
    if not dry_run:
        write()
    return Outcome(resource, "created", dry_run)


@dataclass
class Scope:
    """Where documents go, asked only by the documents that need it: the workspace, and the compute of instance types."""

    workspace: Callable[[], str]
    compute: Callable[[], str]
    checked: dict = field(default_factory=dict)  # (workspace, compute) -> the error that it is missing, or None
    # Steps to take once every document is applied: an endpoint's traffic to deployments applied after it.
    later: list[tuple[str, Callable[[], list[Outcome]]]] = field(default_factory=list)
    # What a dry run would have created, so that what depends on it is planned too (a new endpoint's deployments).
    planned: set = field(default_factory=set)


def is_fatal(error: CliError) -> bool:
    """Errors that every later document would hit too: stop at once instead of repeating them."""
    return (
        isinstance(error, ConnectionFailed) or error.exit_code == EXIT_NOT_LOGGED_IN
        or error.code in ("NoWorkspace", "NoCompute")
    )


def once_more_if_stale(attempt: Callable[[], T]) -> T:
    """Read, then write with If-Match; when the record changed in between (412), read and write once more."""
    try:
        return attempt()
    except ApiError as error:
        if error.status != 412:
            raise
    return attempt()


def required_name(body: dict) -> str:
    name = body.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidInput("The document has no name.", target="name", code="InvalidDocument")
    return name


def being_deleted(what: str) -> CliError:
    return CliError(f"{what} is being deleted; apply again once it is gone.", code="Conflict")


def read_if_exists(client: ApiClient, path: str) -> Response | None:
    try:
        return client.get(path)
    except ApiError as error:
        if error.status == 404:
            return None
        raise


def workspace_not_found(workspace: str) -> ApiError:
    return ApiError(404, f"Workspace '{workspace}' was not found, or you are not a member of it.", code="NotFound")


def workspace_exists(client: ApiClient, workspace: str) -> bool:
    return read_if_exists(client, path_of("workspaces", workspace)) is not None


def ensure_workspace_exists(client: ApiClient, workspace: str) -> None:
    """Say so plainly when the target workspace is the thing missing (the API's 404 can't tell you which)."""
    if not workspace_exists(client, workspace):
        raise workspace_not_found(workspace)


def missing_in_workspace(client: ApiClient, workspace: str, error: ApiError, missing: ApiError) -> ApiError:
    """Turn the API's bare 404 under a workspace into which one is missing: the workspace, or `missing`."""
    if error.status != 404:
        return error
    return missing if workspace_exists(client, workspace) else workspace_not_found(workspace)


def contains(current, desired) -> bool:
    """True when `desired` is already in `current`; mappings may hold more (the API fills in defaults)."""
    if isinstance(desired, dict) and isinstance(current, dict):
        return all(contains(current.get(key), value) for key, value in desired.items())
    if isinstance(desired, list) and isinstance(current, list):
        return len(desired) == len(current) and all(map(contains, current, desired))
    return current == desired


def as_strings(mapping) -> dict:
    """A mapping's values as the API stores them (tags, environment variables): strings, booleans as true/false."""
    if not isinstance(mapping, dict):
        return mapping
    return {key: ("true" if value else "false") if isinstance(value, bool) else str(value) for key, value in mapping.items()}
