"""The studio's uploads: an archive (or a folder the browser packed) stored as a snapshot through the service the
API's `uploads/` calls, and which files of a picked folder the browser packs (its ignore files read on the server)."""
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.views.decorators.http import require_POST

from assets import services

from ..forms import uploads
from .common import USER_ERRORS, error_rows, require, workspace_page

NOT_AN_ARCHIVE = "Choose a folder, a .zip or a .tar.gz: this file is neither a zip nor a gzip-compressed tar."


def stored_upload(user, workspace, uploaded, target: str) -> tuple[str | None, list[dict]]:
    """An uploaded archive stored as a snapshot: (its `azureml://uploads/<sha256>`, errors at `target`)."""
    if uploaded.size > settings.DOCKYARD_ARTIFACT_BODY_MAX_BYTES:
        return None, [{"target": target, "message": f"The archive has {uploaded.size} bytes; an upload has at most "
                                                    f"{settings.DOCKYARD_ARTIFACT_BODY_MAX_BYTES}."}]
    kind = uploads.media_type(uploaded)
    if kind is None:
        return None, [{"target": target, "message": NOT_AN_ARCHIVE}]
    try:
        snapshot, _ = services.upload_create(user=user, workspace=workspace, body=uploaded, content_type=kind)
    except USER_ERRORS as exc:
        return None, [{"target": target, "message": row["message"]} for row in error_rows(exc)]
    return snapshot.path, []


@login_required
@require_POST
def plan(request, ws):
    """A folder's file list and ignore files → the files to pack, and what would refuse the upload (contributors up)."""
    context = workspace_page(request, ws)
    require(request.user, context["workspace"], "use")
    listing = request.FILES.get("listing")
    return JsonResponse(uploads.plan(listing or [], request.POST.get("ignores", "")))
