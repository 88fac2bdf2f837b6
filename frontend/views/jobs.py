"""Jobs: the list with its filters, the submit form (or pasted YAML) with its live YAML, and a job's tabs."""
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from compute.selectors import kubernetes_compute_list
from jobs import selectors, services
from jobs.choices import CANCELABLE, TERMINAL, JobStatus
from jobs.models import Job
from jobs.serializers import compute_reference

from ..forms import jobs as job_form
from ..forms import uploads
from ..forms.yaml import as_yaml, manifests_yaml
from .common import USER_ERRORS, error_rows, paste_submit, require, workspace_page
from .uploads import stored_upload

JOBS_PER_PAGE = 25
FILTERS = ("status", "compute", "experiment_name")
SECTIONS = (("overview", "Overview"), ("logs", "Logs"), ("outputs", "Outputs"), ("yaml", "YAML"),
            ("manifest", "Kubernetes manifest"), ("events", "Events"))
# Sections whose content changes while a job runs: the status poll refreshes them along with the header.
LIVE_SECTIONS = ("overview", "manifest", "events")


def filter_values(query) -> dict[str, str]:
    """The list's filters as given in the URL (empty ones dropped)."""
    return {key: query.get(key, "").strip() for key in FILTERS if query.get(key, "").strip()}


def filter_choices(workspace) -> dict:
    """The options of the three filter menus: statuses, where jobs run, the experiments jobs were filed under."""
    computes = kubernetes_compute_list(workspace=workspace, deleting=True)
    return {
        "statuses": JobStatus.values,
        "computes": [job_form.LOCAL, job_form.SERVERLESS, *(compute.name for compute in computes)],
        "experiments": selectors.experiment_list(workspace=workspace),
    }


@login_required
def job_list(request, ws):
    """Jobs newest first, filtered by status, compute and experiment (kept in the URL); htmx gets the card or rows."""
    context = workspace_page(request, ws)
    filters = filter_values(request.GET)
    before = request.GET.get("before", "")
    page = selectors.job_page(workspace=context["workspace"], filters=filters, before=before, size=JOBS_PER_PAGE + 1)
    context.update(
        nav="jobs", jobs=page[:JOBS_PER_PAGE], more=len(page) > JOBS_PER_PAGE, filters=filters,
        query=urlencode(filters),
    )
    if request.htmx and before:
        return render(request, "frontend/jobs/_rows.html", context)
    context.update(filter_choices(context["workspace"]), count=selectors.job_count(workspace=context["workspace"], filters=filters))
    template = "frontend/jobs/_list.html" if request.htmx else "frontend/jobs/list.html"
    return render(request, template, context)


def submit_page(request, ws: str) -> dict:
    """Context for the submit pages: contributors and owners only (re-checked on every POST)."""
    context = workspace_page(request, ws)
    require(request.user, context["workspace"], "use")
    return {**context, "nav": "jobs"}


def render_form(request, context: dict, data, errors: list[dict]):
    """The form with its values, each error at its field (the rest on top) and the YAML it amounts to."""
    fields, stray = job_form.bind(context["workspace"], data, errors)
    body, _ = job_form.job_body(data)
    context.update(mode="form", fields=fields, stray_errors=stray, yaml=as_yaml(body), upload_limits=uploads.limits())
    return render(request, "frontend/jobs/form.html", context)


@login_required
def create(request, ws):
    """The submit form; a valid post becomes a job through job_create, the one validation path."""
    context = submit_page(request, ws)
    data, errors = job_form.initial_data(context["workspace"]), []
    if request.method == "POST":
        data, errors = with_uploaded_code(request, context["workspace"])
        body, problems = job_form.job_body(data)
        errors += problems
        if not errors:
            try:
                job = services.job_create(user=request.user, workspace=context["workspace"], data=body)
            except USER_ERRORS as exc:
                errors = error_rows(exc, target="name")  # a bare conflict is about the name
            else:
                messages.success(request, f"Job {job.name} was submitted.")
                return redirect("frontend:job", ws=ws, name=job.name)
    return render_form(request, context, data, errors)


def with_uploaded_code(request, workspace) -> tuple[dict, list[dict]]:
    """The posted fields, `code` naming the folder or archive sent with them once it is stored (a refused form then
    keeps it without sending it again)."""
    data = request.POST.copy()
    upload = request.FILES.get("code_archive")
    if upload is None:
        return data, []
    path, errors = stored_upload(request.user, workspace, upload, "code")
    if path:
        data["code"] = path
    return data, errors


def clone_text(workspace, name: str) -> str:
    """A job's YAML without its name, to edit and submit again ("" when there is no such job)."""
    try:
        job = selectors.job_get(workspace=workspace, name=name)
    except Job.DoesNotExist:
        return ""
    return as_yaml(job_form.spec_document(job.spec, compute_reference(job), with_name=False))


@login_required
def paste(request, ws):
    """Paste (or upload) a command job's YAML and submit it as is; Clone opens this with a job's YAML."""
    context = submit_page(request, ws)
    text, errors = clone_text(context["workspace"], request.GET.get("from", "")), []
    if request.method == "POST":
        def submit(text):
            return services.job_create(user=request.user, workspace=context["workspace"], data=job_form.pasted_body(text))

        text, job, errors = paste_submit(request, submit, text)
        if not errors:
            messages.success(request, f"Job {job.name} was submitted.")
            return redirect("frontend:job", ws=ws, name=job.name)
    context.update(mode="yaml", yaml_text=text, yaml_errors=errors, example=job_form.YAML_EXAMPLE)
    return render(request, "frontend/jobs/form.html", context)


@login_required
@require_POST
def preview(request, ws):
    """The job YAML the form amounts to, re-rendered as the user types."""
    submit_page(request, ws)
    return HttpResponse(as_yaml(job_form.preview_body(request.POST)), content_type="text/plain; charset=utf-8")


@login_required
@require_GET
def instance_types(request, ws):
    """The instance-type menu for the compute just chosen; the form then refreshes its YAML."""
    context = submit_page(request, ws)
    fields, _ = job_form.bind(context["workspace"], {"compute": request.GET.get("compute", "")}, [])
    response = render(request, "frontend/jobs/_instance_type_field.html", {**context, "bound": fields["instance_type"]})
    response["HX-Trigger-After-Settle"] = "instance-types-loaded"
    return response


def job_or_404(workspace, name: str) -> Job:
    """A job of the workspace by name, or 404."""
    try:
        return selectors.job_get(workspace=workspace, name=name)
    except Job.DoesNotExist:
        raise Http404 from None


def section_or_404(section: str) -> str:
    """A tab's key from the URL, or 404 for a tab that does not exist."""
    if section not in dict(SECTIONS):
        raise Http404
    return section


def job_context(request, ws: str, name: str, section: str) -> dict:
    """What every tab of a job shows: the header (status, reason, buttons) and the tabs with their counts."""
    context = workspace_page(request, ws)
    job = job_or_404(context["workspace"], name)
    use = context["perms"]["use"] and not job.deleting
    events = selectors.event_list(job=job)
    return {
        **context, "nav": "jobs", "job": job, "section": section, "events": events,
        "active": job.status not in TERMINAL and not job.deleting,
        "can_cancel": use and job.status in CANCELABLE, "can_delete": use, "can_clone": use,
        "sections": [(key, label, {"logs": job.log_line_count, "events": len(events)}.get(key)) for key, label in SECTIONS],
    }


def section_context(job: Job, section: str) -> dict:
    """The content of one tab."""
    if section == "logs":
        return log_context(job)
    if section == "yaml":
        return {"yaml": as_yaml(job_form.spec_document(job.spec, compute_reference(job)))}
    if section == "manifest":
        return {"manifest_yaml": manifests_yaml(job.manifests) if job.manifests else ""}
    if section == "outputs":
        return outputs_context(job)
    return {}


def outputs_context(job: Job) -> dict:
    """The files a local job left in ./outputs, each with its download link (the API's); Kubernetes jobs keep none."""
    api = f"/api/v1/workspaces/{job.workspace.name}/jobs/{job.name}/outputs/"
    if not selectors.outputs_kept(job=job):
        return {"outputs_kept": False, "output_files": []}
    try:
        rows = selectors.output_list(job=job)
    except selectors.FileRefused as exc:
        return {"outputs_kept": True, "output_files": [], "outputs_problem": str(exc)}
    return {"outputs_kept": True, "output_files": [{**row, "url": f"{api}?{urlencode({'path': row['path']})}"} for row in rows]}


def log_context(job: Job) -> dict:
    """A finished job's lines as they are; a running one's pane follows the API's event stream instead."""
    api = f"/api/v1/workspaces/{job.workspace.name}/jobs/{job.name}/logs"
    context = {"download_url": f"{api}?download=true", "follow_url": "", "lines": []}
    if job.status in TERMINAL or job.deleting:
        context["lines"] = selectors.log_lines(job=job, after=0, limit=selectors.MAX_LOG_PAGE)
        context["truncated"] = job.log_line_count > len(context["lines"])
    else:
        context["follow_url"] = f"{api}?follow=true"
    return context


@login_required
def detail(request, ws, name, section="overview"):
    """One tab of a job: overview, logs (followed live), YAML, Kubernetes manifest, events."""
    context = job_context(request, ws, name, section_or_404(section))
    context.update(section_context(context["job"], section))
    return render(request, "frontend/jobs/detail.html", context)


@login_required
@require_GET
def status(request, ws, name):
    """The header, polled while the job is active; the tab's content comes along (out of band) unless it is the log."""
    section = request.GET.get("section", "overview")
    context = job_context(request, ws, name, section if section in dict(SECTIONS) else "overview")
    context["oob"] = context["section"] in LIVE_SECTIONS
    if context["oob"]:
        context.update(section_context(context["job"], context["section"]))
    return render(request, "frontend/jobs/_header.html", context)


def section_url(ws: str, name: str, section: str) -> str:
    """The URL of a job's tab (the overview for anything unknown)."""
    if section in dict(SECTIONS) and section != "overview":
        return reverse("frontend:job-section", args=[ws, name, section])
    return reverse("frontend:job", args=[ws, name])


@login_required
@require_POST
def cancel(request, ws, name):
    """Ask the job to stop (contributors and owners); back to the tab the button was on."""
    context = workspace_page(request, ws)
    require(request.user, context["workspace"], "use")
    job = job_or_404(context["workspace"], name)
    try:
        services.job_cancel(user=request.user, job=job)
    except USER_ERRORS as exc:
        messages.error(request, error_rows(exc)[0]["message"])
    else:
        messages.info(request, f"Cancel requested: job {job.name} is being stopped.")
    return redirect(section_url(ws, name, request.POST.get("section", "")))


@login_required
@require_POST
def delete(request, ws, name):
    """Delete a job (stopped first if it runs); its row goes once its Kubernetes objects are gone."""
    context = workspace_page(request, ws)
    require(request.user, context["workspace"], "use")
    job = services.job_delete(user=request.user, job=job_or_404(context["workspace"], name))
    messages.success(request, f"Job {job.name} is being deleted.")
    return redirect("frontend:jobs", ws=ws)

