"""Assets: a workspace's environments, models and data — the latest version of each name, a name's versions, one
version with its fields (and, for models and data, the files of its upload), registering one from Azure ML's YAML
(a model's or data's files sent with it), archiving and restoring.

Reads go through the selectors the API's lists use, writes through assets.registry (the API's create and archive
services), so the errors shown are the API's. Registering, archiving and restoring need the role the API asks (`use`).
"""
import re
from dataclasses import dataclass

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from assets import registry, selectors
from assets.models import AssetVersion, Data, Environment, Model
from assets.specs.common import is_name, is_version

from ..forms import assets as asset_forms
from ..forms import uploads
from ..forms.yaml import as_yaml
from .common import USER_ERRORS, error_rows, require, workspace_page
from .uploads import stored_upload

# A `path` with a scheme (azureml:, https://, wasbs://) names something the server judges; anything else is a path on
# the user's machine, which the studio can send only as the files picked with the YAML.
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass(frozen=True)
class Kind:
    """One kind of asset as the studio shows it."""

    collection: str
    title: str
    noun: str
    record_type: type[AssetVersion]
    create: object
    has_files: bool


KINDS = {
    "environments": Kind("environments", "Environments", "environment", Environment, registry.environment_create, False),
    "models": Kind("models", "Models", "model", Model, registry.model_create, True),
    "data": Kind("data", "Data", "data", Data, registry.data_create, True),
}


def kind_or_404(kind: str) -> Kind:
    if kind not in KINDS:
        raise Http404
    return KINDS[kind]


def assets_page(request, ws: str, kind: str) -> dict:
    context = workspace_page(request, ws)
    return {**context, "nav": "assets", "kind": kind_or_404(kind)}


def _section(workspace, kind: Kind) -> dict:
    rows = list(selectors.asset_list(record_type=kind.record_type, workspace=workspace))
    counts = selectors.asset_version_counts(record_type=kind.record_type, workspace=workspace)
    for row in rows:
        row.version_count = counts.get(row.name, 1)
    return {"kind": kind, "collection": kind.collection, "title": kind.title, "rows": rows,
            "api_path": f"/api/v1/workspaces/{workspace.name}/{kind.collection}/"}


@login_required
@require_GET
def asset_list(request, ws):
    """Environments, models and data: the latest version of each name, how many versions it has, what it runs or holds."""
    context = workspace_page(request, ws)
    workspace = context["workspace"]
    context.update(nav="assets", sections=[_section(workspace, kind) for kind in KINDS.values()])
    return render(request, "frontend/assets/list.html", context)


@login_required
@require_GET
def versions(request, ws, kind, name):
    """Every version of a name, newest first, archived ones marked (and restorable)."""
    context = assets_page(request, ws, kind)
    record_type = context["kind"].record_type
    if not is_name(name):
        raise Http404
    rows = [*selectors.asset_list(record_type=record_type, workspace=context["workspace"], name=name),
            *selectors.asset_list(record_type=record_type, workspace=context["workspace"], name=name, archived=True)]
    if not rows:
        raise Http404
    rows.sort(key=lambda row: row.sort_key, reverse=True)
    context.update(name=name, rows=rows)
    return render(request, "frontend/assets/versions.html", context)


def version_or_404(kind: Kind, workspace, name: str, version: str) -> AssetVersion:
    if not is_name(name) or not is_version(version):
        raise Http404  # no such asset can exist (and no NUL reaches the database)
    try:
        return selectors.asset_get(record_type=kind.record_type, workspace=workspace, name=name, version=version)
    except kind.record_type.DoesNotExist:
        raise Http404 from None


@login_required
@require_GET
def version(request, ws, kind, name, version):
    """One version: its fields as Azure ML names them, its YAML, and for models and data the files it holds."""
    context = assets_page(request, ws, kind)
    record = version_or_404(context["kind"], context["workspace"], name, version)
    files = None
    if context["kind"].has_files and record.path.startswith("azureml://uploads/"):
        files = selectors.snapshot_file_rows(workspace=context["workspace"], reference=record.path)
    context.update(record=record, files=files, total=sum(row["size"] or 0 for row in files or []),
                   yaml=as_yaml(asset_forms.spec_document(context["kind"].noun, record.spec)),
                   conda_yaml=as_yaml(record.conda_file) if getattr(record, "conda_file", None) else "")
    return render(request, "frontend/assets/version.html", context)


@login_required
def create(request, ws, kind):
    """Register a version from Azure ML's YAML (pasted or a file); a model's or data's files come with it."""
    context = assets_page(request, ws, kind)
    require(request.user, context["workspace"], "use")
    kind = context["kind"]
    text, errors = next_version_text(kind, context["workspace"], request.GET.get("from", "")), []
    if request.method == "POST":
        text, record, errors = submitted(request, context["workspace"], kind)
        if not errors:
            messages.success(request, f"{kind.noun.capitalize()} {record.name}:{record.version} was registered.")
            return redirect("frontend:asset-version", ws=ws, kind=kind.collection, name=record.name, version=record.version)
    files = asset_forms.files_field(kind.noun, errors)
    context.update(yaml_text=text, example=asset_forms.EXAMPLES[kind.noun], upload_limits=uploads.limits(),
                   files_field=files, yaml_errors=[row for row in errors if not (files and row["target"] == "path")])
    return render(request, "frontend/assets/create.html", context)


def next_version_text(kind: Kind, workspace, name: str) -> str:
    """The latest version's YAML without its version (and, for files, with its path to pick again): a new version's
    starting point ("" when there is no such name)."""
    if not is_name(name):
        return ""
    try:
        record = selectors.asset_get(record_type=kind.record_type, workspace=workspace, name=name, version="latest")
    except kind.record_type.DoesNotExist:
        return ""
    document = asset_forms.spec_document(kind.noun, {**record.spec, "version": None})
    return as_yaml(document)


def submitted(request, workspace, kind: Kind) -> tuple[str, AssetVersion | None, list[dict]]:
    """The posted YAML (typed or a file) and files: (the text, the version registered, the errors that stopped it)."""
    upload = request.FILES.get("yaml_file")
    try:
        text = upload.read().decode("utf-8") if upload else request.POST.get("yaml", "")
    except UnicodeDecodeError:
        return "", None, [{"target": "", "message": "The file is not UTF-8 text."}]
    try:
        document = asset_forms.pasted_asset(text, kind.noun)
    except ValueError as exc:  # not YAML, or not one document
        return text, None, [{"target": "", "message": str(exc)}]
    document, errors = with_files(request, workspace, kind, document)
    if errors:
        return text, None, errors
    try:
        return text, kind.create(user=request.user, workspace=workspace, data=document), []
    except USER_ERRORS as exc:
        return text, None, error_rows(exc)


def with_files(request, workspace, kind: Kind, document) -> tuple[object, list[dict]]:
    """The document with `path` naming the files sent with it (stored first); a local path without files is refused."""
    archive = request.FILES.get("files_archive") if kind.has_files else None
    if not isinstance(document, dict):
        return document, []  # the service says what a body is
    if archive is None:
        path = document.get("path")
        if kind.has_files and isinstance(path, str) and path and not SCHEME.match(path):
            return document, [{"target": "path", "message": f"{path} is a path on your machine: pick that folder or "
                                                            "file below (as a folder or an archive) to send it."}]
        return document, []
    reference, errors = stored_upload(request.user, workspace, archive, "path")
    return ({**document, "path": reference} if reference else document), errors


def _changed(request, ws, kind, name, version, change, verb: str):
    context = assets_page(request, ws, kind)
    require(request.user, context["workspace"], "use")
    record = version_or_404(context["kind"], context["workspace"], name, version)
    try:
        change(user=request.user, record=record)
    except USER_ERRORS as exc:
        messages.error(request, error_rows(exc)[0]["message"])
    else:
        messages.success(request, f"{context['kind'].noun.capitalize()} {name}:{version} was {verb}.")
    return redirect("frontend:asset-version", ws=ws, kind=kind, name=name, version=version)


@login_required
@require_POST
def archive(request, ws, kind, name, version):
    """Archive a version (the API's DELETE): it leaves lists and @latest; naming its version still works."""
    return _changed(request, ws, kind, name, version, registry.asset_archive, "archived")


@login_required
@require_POST
def restore(request, ws, kind, name, version):
    """Restore an archived version: listed again, and @latest again if it is the highest."""
    return _changed(request, ws, kind, name, version, registry.asset_restore, "restored")
