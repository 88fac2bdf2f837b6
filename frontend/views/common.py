"""What every studio page shares: the workspace it is in, the user's permissions there, error rows."""
from django.core.exceptions import PermissionDenied
from django.http import Http404
from rest_framework import exceptions

from compute import selectors as compute_selectors
from compute.models import ComputeTarget
from controlplane.api import BadRequest, Conflict, flatten_details
from workspaces import access, selectors

# What services raise for a person to fix; anything else is a bug and gets the 500 page.
USER_ERRORS = (exceptions.ValidationError, Conflict, BadRequest)
REMEMBERED = "workspace"


def workspace_page(request, name: str) -> dict:
    """Context for a page inside a workspace: 404 unless the user is a member (names must not leak)."""
    workspace = access.workspace_for(request.user, name)
    if request.session.get(REMEMBERED) != workspace.name:
        request.session[REMEMBERED] = workspace.name  # pages outside a workspace keep its navigation
    return {"workspace": workspace, "perms": access.permissions_for(request.user, workspace)}


def remembered_workspace(request) -> dict:
    """Context for pages outside a workspace: the last one visited, if the user may still see it."""
    name = request.session.get(REMEMBERED)
    workspace = selectors.workspace_visible(user=request.user, name=name) if name else None
    return {"workspace": workspace, "perms": access.permissions_for(request.user, workspace) if workspace else {}}


def require(user, workspace, action: str) -> None:
    """access.require for HTML views: Django's PermissionDenied renders the 403 page, DRF's would be a 500."""
    try:
        access.require(user, workspace, action)
    except exceptions.PermissionDenied as exc:
        raise PermissionDenied(str(exc.detail)) from None


def paste_submit(request, create, text: str = "") -> tuple[str, object, list[dict]]:
    """A Paste YAML post: the text (typed or uploaded), what `create(text)` made of it, and the errors that stopped it."""
    upload = request.FILES.get("yaml_file")
    try:
        text = upload.read().decode("utf-8") if upload else request.POST.get("yaml", "")
        return text, create(text), []
    except UnicodeDecodeError:
        return text, None, [{"target": "", "message": "The file is not UTF-8 text."}]
    except ValueError as exc:  # not YAML, or not one document
        return text, None, [{"target": "", "message": str(exc)}]
    except USER_ERRORS as exc:
        return text, None, error_rows(exc)


def error_rows(exc: Exception, target: str = "") -> list[dict]:
    """A service's exception as [{target, message}]; `target` is where errors without a field path belong."""
    if isinstance(exc, exceptions.ValidationError):
        return flatten_details(exc.detail)
    if isinstance(exc, BadRequest) and exc.details:  # every problem, each at its field path
        return [{"target": row.get("target") or target, "message": row["message"]} for row in exc.details]
    return [{"target": target, "message": str(exc.detail)}]


def compute_of_type(workspace, name: str, compute_type: str) -> ComputeTarget:
    """A compute of the workspace of that type, or 404: the pages of one type have nothing to show for another."""
    try:
        compute = compute_selectors.compute_get(workspace=workspace, name=name)
    except ComputeTarget.DoesNotExist:
        raise Http404 from None
    if compute.type != compute_type:
        raise Http404
    return compute
