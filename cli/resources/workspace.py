"""Workspaces as the CLI knows them: the fields a document may set, and apply."""
from ..client import ApiClient, path_of
from .base import Outcome, changed, created, read_if_exists, required_name

FIELDS = ("display_name", "description", "tags")


def apply_workspace(client: ApiClient, body: dict, dry_run: bool) -> Outcome:
    """Create a workspace, or update its display name, description and tags."""
    name = required_name(body)
    resource = f"workspace/{name}"
    path = path_of("workspaces", name)
    current = read_if_exists(client, path)
    wanted = {key: body[key] for key in FIELDS if key in body}
    if current is None:
        return created(resource, dry_run, lambda: client.post(path_of("workspaces"), {"name": name, **wanted}))
    changes = [key for key, value in wanted.items() if current.body.get(key) != value]
    if changes and not dry_run:
        client.patch(path, {key: wanted[key] for key in changes}, etag=current.etag)
    return changed(resource, changes, dry_run)
