"""The studio's Jobs pages through the Django test client: the list and its filters, the submit form, a job's tabs.

Jobs are created through jobs.services (as the form does); no worker runs here, so they stay where the test puts them.
"""
import html
import re
from datetime import timedelta

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from django.utils.html import escape

from compute.models import Cluster, ComputeTarget, InstanceType
from controlplane.reconciling import ProvisioningState
from jobs.models import Job, JobEvent, JobLogLine
from jobs.services import job_create

pytestmark = pytest.mark.usefixtures("local_compute")  # off by default: enabled as staff would

JOBS = "/w/team-a/jobs/"
FORM = "/w/team-a/jobs/new/form/"
PASTE = "/w/team-a/jobs/new/paste/"
LOCAL_FORM = {"command": "echo hello", "compute": "local", "instance_count": "1", "experiment_name": "Default"}


def text(response) -> str:
    return response.content.decode()


def field_block(body: str, field: str) -> str:
    """The rendered block of one form field: label, input, its errors and help."""
    return next(block for block in body.split('<div class="mb-3 field ') if f'id="id_{field}"' in block)


@pytest.fixture
def kubernetes_compute(workspace, owner):
    """A Kubernetes compute whose cluster has one instance type besides the default (no cluster is contacted)."""
    cluster = Cluster.objects.create(server="https://k8s.example.internal:6443")
    InstanceType.objects.create(cluster=cluster, name="gpu-small", requests={"cpu": "1", "memory": "4Gi"},
                                limits={"cpu": "2", "memory": "8Gi"}, gpu=1, provisioning_state=ProvisioningState.SUCCEEDED)
    return ComputeTarget.objects.create(
        workspace=workspace, name="k8s", type="kubernetes", cluster=cluster, created_by=owner,
        provisioning_state=ProvisioningState.SUCCEEDED, properties={"server": cluster.server, "namespace": "ml"},
    )


@pytest.fixture
def submit(owner, workspace):
    """submit(**fields) -> a job created through job_create (compute local unless given), left NotStarted."""
    def make(**fields):
        return job_create(user=owner, workspace=workspace, data={"command": "echo hi", "compute": "local", **fields})

    return make


def finish(job: Job, status: str = "Completed", exit_code: int | None = 0, lines=()) -> Job:
    """Put a job where a worker would leave it: ended, with its lines."""
    now = timezone.now()
    for seq, (source, line) in enumerate(lines):
        JobLogLine.objects.create(job=job, seq=seq, source=source, text=line, time=now)
    Job.objects.filter(pk=job.pk).update(status=status, exit_code=exit_code, start_time=now - timedelta(seconds=75),
                                         end_time=now, log_line_count=len(lines))
    return Job.objects.get(pk=job.pk)


# The list


def test_nav_points_to_the_jobs_page(client_as, workspace):
    body = text(client_as("reader").get("/w/team-a/compute/"))
    assert f'href="{JOBS}"' in body
    page = text(client_as("reader").get(JOBS))
    assert "coming release" not in page and "No jobs yet" in page


@pytest.mark.parametrize("role, sees_new", [("reader", False), ("contributor", True), ("owner", True), ("staff", True)])
def test_new_job_button_only_for_roles_that_may_use_the_workspace(client_as, submit, role, sees_new):
    submit(name="first")
    body = text(client_as(role).get(JOBS))
    assert ('href="/w/team-a/jobs/new/form/"' in body) is sees_new
    assert 'data-job="first"' in body


def test_outsiders_get_404_on_every_jobs_page(client_as, submit):
    submit(name="first")
    client = client_as("outsider")
    for url in (JOBS, FORM, PASTE, f"{JOBS}first/", f"{JOBS}first/logs/", f"{JOBS}first/status/"):
        assert client.get(url).status_code == 404, url
    assert client.post(f"{JOBS}first/cancel/").status_code == 404


def test_anonymous_is_sent_to_login(client_as, workspace):
    response = client_as("anonymous").get(JOBS)
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_list_shows_the_azure_ml_columns(client_as, submit, kubernetes_compute):
    job = finish(submit(name="train-1", display_name="Train v1", experiment_name="mnist"))
    submit(name="k8s-job", compute="azureml:k8s", environment={"image": "python:3.11"})
    submit(name="anywhere", environment={"image": "python:3.11"}, compute=None)
    body = text(client_as("reader").get(JOBS))
    for header in ("Display name", "Name", "Status", "Compute", "Experiment", "Created", "Duration", "Created by"):
        assert f"<th>{header}</th>" in body
    row = re.search(r'<tr data-job="train-1">(.*?)</tr>', body, re.S).group(1)
    assert f'href="{JOBS}train-1/"' in row and "Train v1" in row and "mnist" in row and "olivia" in row
    assert 'data-state="Completed"' in row and "state-success" in row and "1m 15s" in row
    k8s_row = re.search(r'<tr data-job="k8s-job">(.*?)</tr>', body, re.S).group(1)
    assert "k8s" in k8s_row and "defaultinstancetype" in k8s_row and 'data-state="NotStarted"' in k8s_row
    assert "serverless (not placed yet)" in body
    assert job.name in body and "3 jobs" in body


@pytest.mark.parametrize("status, colour", [("NotStarted", "secondary"), ("Queued", "warning"), ("Starting", "info"),
                                            ("Running", "primary"), ("CancelRequested", "warning"),
                                            ("Completed", "success"), ("Failed", "danger"), ("Canceled", "secondary")])
def test_status_badges_have_a_colour_per_status(client_as, submit, status, colour):
    Job.objects.filter(pk=submit(name="one").pk).update(status=status)
    body = text(client_as("reader").get(JOBS))
    assert re.search(rf'class="badge rounded-pill state state-{colour}" data-state="{status}"', body)


def test_filters_narrow_the_list_and_stay_in_the_url(client_as, submit, kubernetes_compute):
    finish(submit(name="done-mnist", experiment_name="mnist"))
    submit(name="new-mnist", experiment_name="mnist")
    submit(name="k8s-cifar", experiment_name="cifar", compute="k8s", environment={"image": "python:3.11"})
    client = client_as("reader")

    def listed(query: str) -> set[str]:
        return set(re.findall(r'<tr data-job="([^"]+)"', text(client.get(JOBS + query))))

    assert listed("") == {"done-mnist", "new-mnist", "k8s-cifar"}
    assert listed("?status=Completed") == {"done-mnist"}
    assert listed("?status=NotStarted,Completed&experiment_name=mnist") == {"done-mnist", "new-mnist"}
    assert listed("?compute=k8s") == {"k8s-cifar"}
    assert listed("?compute=local&experiment_name=mnist") == {"done-mnist", "new-mnist"}
    assert listed("?compute=serverless") == set()
    body = text(client.get(JOBS + "?status=Completed&experiment_name=mnist"))
    assert '<option value="Completed" selected>' in body and '<option value="mnist" selected>' in body
    assert '<option value="cifar">' in body and '<option value="k8s">' in body and "Clear filters" in body
    assert "1 job<" in body
    assert "No jobs match these filters" in text(client.get(JOBS + "?status=Failed"))


def test_htmx_filtering_returns_just_the_list_card(client_as, submit):
    submit(name="one")
    body = text(client_as("reader").get(JOBS + "?status=NotStarted", HTTP_HX_REQUEST="true"))
    assert body.lstrip().startswith('<div class="card" id="job-list">') and "<html" not in body
    assert 'data-job="one"' in body


def test_paging_loads_older_jobs_with_the_filters_kept(client_as, submit, django_assert_max_num_queries):
    names = [submit(name=f"job-{index:02d}", experiment_name="sweep").name for index in range(27)]
    client = client_as("reader")
    with django_assert_max_num_queries(12):
        body = text(client.get(JOBS + "?experiment_name=sweep"))
    first_page = re.findall(r'<tr data-job="([^"]+)"', body)
    assert first_page == names[::-1][:25] and "27 jobs" in body
    more = re.search(r'hx-get="([^"]+)" hx-target="#load-older"', body).group(1).replace("&amp;", "&")
    assert "experiment_name=sweep" in more and "before=" in more
    older = text(client.get(more, HTTP_HX_REQUEST="true"))
    assert re.findall(r'<tr data-job="([^"]+)"', older) == names[::-1][25:] and "Load older" not in older


def test_list_queries_do_not_grow_with_the_page(client_as, submit, django_assert_max_num_queries):
    for index in range(25):
        submit(name=f"job-{index:02d}")
    client = client_as("reader")
    with django_assert_max_num_queries(12):
        assert client.get(JOBS).status_code == 200


def test_deleting_jobs_are_not_listed(client_as, submit):
    Job.objects.filter(pk=submit(name="going").pk).update(deleting=True)
    assert 'data-job="going"' not in text(client_as("reader").get(JOBS))


# The submit form


def test_form_offers_local_the_kubernetes_computes_and_serverless(client_as, kubernetes_compute):
    body = text(client_as("contributor").get(FORM))
    options = re.findall(r'<option value="([^"]*)"', body.split('id="id_compute"')[1].split("</select>")[0])
    assert options == ["local", "k8s", "serverless"]
    assert re.search(r'<option value="k8s" selected>', body)  # a Kubernetes compute first, when there is one
    # requests/limits and GPUs: limits alone read the same for types that reserve different amounts
    assert "gpu-small — 1/2 cpu, 4Gi/8Gi, 1 GPU" in body and "defaultinstancetype — 100m/2 cpu, 2Gi/2Gi" in body
    assert "compute: azureml:k8s" in body and "$schema: https://azuremlschemas" in body


def test_form_offers_compute_clusters_with_their_size_and_submits_to_one(client_as, kubernetes_compute, workspace, owner):
    ComputeTarget.objects.create(workspace=workspace, name="gpu-cluster", type="amlcompute", created_by=owner,
                                 provisioning_state=ProvisioningState.SUCCEEDED,
                                 properties={"size": "Standard_NC6s_v3", "max_instances": 2, "kubernetes_compute": "k8s"})
    client = client_as("contributor")
    body = text(client.get(FORM))
    options = re.findall(r'<option value="([^"]*)"', body.split('id="id_compute"')[1].split("</select>")[0])
    assert options == ["local", "k8s", "gpu-cluster", "serverless"]
    assert "gpu-cluster — compute cluster (Standard_NC6s_v3)" in body
    menu = text(client.get("/w/team-a/jobs/new/instance-types/?compute=gpu-cluster"))
    assert "Standard_NC6s_v3 (the cluster&#x27;s size)" in menu and "gpu-small" not in menu
    data = {**LOCAL_FORM, "compute": "gpu-cluster", "image": "python:3.11", "instance_type": ""}
    response = client.post(FORM, data)
    assert response.status_code == 302, text(response)
    job = Job.objects.get()
    assert (job.target, job.compute.name, job.instance_type) == ("kubernetes", "gpu-cluster", "Standard_NC6s_v3")


def test_form_leaves_local_out_when_the_server_turns_it_off(client_as, workspace, settings):
    settings.DOCKYARD_LOCAL_COMPUTE = False
    body = text(client_as("contributor").get(FORM))
    assert '<option value="local"' not in body and '<option value="serverless" selected>' in body


@pytest.mark.parametrize("url", [FORM, PASTE])
def test_reader_gets_403_on_the_submit_pages_and_their_posts(client_as, workspace, url):
    client = client_as("reader")
    assert client.get(url).status_code == 403
    assert client.post(url, {**LOCAL_FORM, "yaml": "command: echo hi\ncompute: local\n"}).status_code == 403
    assert client.post("/w/team-a/jobs/new/preview/", LOCAL_FORM).status_code == 403
    assert client.get("/w/team-a/jobs/new/instance-types/?compute=local").status_code == 403
    assert not Job.objects.exists()


def test_a_valid_form_submits_the_job_and_opens_its_page(client_as, workspace):
    data = {**LOCAL_FORM, "display_name": "Hello", "experiment_name": "greetings", "command": "echo $WHO\r\necho done\r\n",
            "environment_variables": "WHO=world\nMODE = fast\n", "timeout": "60", "tags": "team=vision"}
    response = client_as("contributor").post(FORM, data)
    job = Job.objects.get()
    assert response.status_code == 302 and response["Location"] == f"{JOBS}{job.name}/"
    assert job.created_by.username == "contributor-user" and job.display_name == "Hello"
    assert job.experiment_name == "greetings" and job.target == "local" and job.tags == {"team": "vision"}
    assert job.spec["command"] == "echo $WHO\necho done"
    assert job.spec["environment_variables"] == {"WHO": "world", "MODE": "fast"}
    assert job.spec["limits"] == {"timeout": 60} and job.spec["resources"]["instance_count"] == 1


def test_a_kubernetes_job_gets_the_chosen_instance_type(client_as, kubernetes_compute):
    data = {**LOCAL_FORM, "compute": "k8s", "image": "python:3.11", "instance_type": "gpu-small", "instance_count": "2"}
    assert client_as("owner").post(FORM, data).status_code == 302
    job = Job.objects.get()
    assert (job.target, job.compute, job.instance_type) == ("kubernetes", kubernetes_compute, "gpu-small")
    assert job.spec["environment"] == {"image": "python:3.11"} and job.spec["resources"]["instance_count"] == 2


def test_serverless_leaves_compute_out(client_as, workspace):
    assert client_as("owner").post(FORM, {**LOCAL_FORM, "compute": "serverless", "image": "python:3.11"}).status_code == 302
    job = Job.objects.get()
    assert job.target == "serverless" and not job.spec.get("compute")


@pytest.mark.parametrize("change, field, message", [
    ({"command": "  "}, "command", "command is required"),
    ({"instance_count": "0"}, "instance_count", "must be an integer of at least 1"),
    ({"instance_count": "two"}, "instance_count", "must be an integer of at least 1"),
    ({"instance_count": "2"}, "instance_count", "instance_count must be 1"),
    ({"timeout": "-5"}, "timeout", "must be an integer of at least 1"),
    ({"environment_variables": "1BAD=x"}, "environment_variables", "is not a valid name"),
    ({"environment_variables": "no equals sign"}, "environment_variables", "is not key=value"),
    ({"name": "bad name!"}, "name", "A job name has"),
    ({"compute": "k8s"}, "image", "environment.image is required"),
    ({"compute": "k8s", "image": "python:3.11", "instance_type": "huge"}, "instance_type", "has no instance type"),
    ({"compute": "nowhere"}, "compute", "There is no compute"),
])
def test_errors_show_next_to_their_field_and_nothing_is_created(client_as, kubernetes_compute, change, field, message):
    response = client_as("contributor").post(FORM, {**LOCAL_FORM, **change})
    body = text(response)
    assert response.status_code == 200 and not Job.objects.exists()
    block = field_block(body, field)
    assert "is-invalid" in block and re.search(rf'<div class="invalid-feedback d-block">[^<]*{re.escape(message)}', block)
    assert "Nothing was submitted" not in body  # every error found its field


def test_a_taken_name_is_shown_at_the_name_field(client_as, submit):
    submit(name="taken")
    body = text(client_as("contributor").post(FORM, {**LOCAL_FORM, "name": "taken"}))
    assert "A job named &#x27;taken&#x27; already exists" in body and Job.objects.count() == 1


def test_the_form_keeps_what_was_typed_after_an_error(client_as, workspace):
    body = text(client_as("contributor").post(FORM, {**LOCAL_FORM, "command": "echo keep me", "instance_count": "0",
                                                         "environment_variables": "A=1"}))
    assert "echo keep me</textarea>" in body and "A=1</textarea>" in body
    assert '<option value="local" selected>' in body


def test_preview_renders_the_job_yaml(client_as, kubernetes_compute):
    response = client_as("contributor").post("/w/team-a/jobs/new/preview/", {
        **LOCAL_FORM, "compute": "k8s", "image": "python:3.11", "command": "python train.py\n--epochs 3",
        "environment_variables": "A=1", "timeout": "600"})
    document = yaml.safe_load(response.content)
    assert response["Content-Type"].startswith("text/plain")
    assert document["compute"] == "azureml:k8s" and document["environment"] == {"image": "python:3.11"}
    assert document["command"] == "python train.py\n--epochs 3" and document["limits"] == {"timeout": 600}
    assert "command: |-\n  python train.py" in response.content.decode()  # a block, as people write it
    assert not Job.objects.exists()


def test_instance_type_menu_follows_the_compute(client_as, kubernetes_compute):
    client = client_as("contributor")
    k8s = client.get("/w/team-a/jobs/new/instance-types/?compute=k8s")
    assert k8s["HX-Trigger-After-Settle"] == "instance-types-loaded"
    assert '<option value="gpu-small">' in text(k8s) and 'id="instance-type-field"' in text(k8s)
    local = text(client.get("/w/team-a/jobs/new/instance-types/?compute=local"))
    assert "it has no pod shape" in local and "gpu-small" not in local
    serverless = text(client.get("/w/team-a/jobs/new/instance-types/?compute=serverless"))
    assert "the smallest that fits" in serverless and '<option value="gpu-small">' in serverless


# Paste YAML


def test_pasted_yaml_is_submitted_as_is(client_as, workspace):
    pasted = "name: pasted\ncommand: echo ${{inputs.who}}\ncompute: local\ninputs:\n  who: world\ntags: {a: b}\n"
    response = client_as("contributor").post(PASTE, {"yaml": pasted})
    assert response.status_code == 302 and response["Location"] == f"{JOBS}pasted/"
    job = Job.objects.get()
    assert job.spec["inputs"] == {"who": "world"} and job.tags == {"a": "b"}


def test_a_yaml_file_can_be_uploaded(client_as, workspace):
    upload = SimpleUploadedFile("job.yml", b"name: uploaded\ncommand: echo hi\ncompute: local\n")
    assert client_as("contributor").post(PASTE, {"yaml": "", "yaml_file": upload}).status_code == 302
    assert Job.objects.get().name == "uploaded"


@pytest.mark.parametrize("pasted, message", [
    ("command: [unclosed", "This is not valid YAML (line 1"),
    ("", "Paste a command job"),
    ("command: a\n---\ncommand: b\n", "one job per submission"),
    ("- just\n- a list\n", "The body must be a mapping"),
    ("command: echo\ncompute: local\ncolour: blue\n", "&#x27;colour&#x27; is not a command-job field"),
    ("command: echo\ncompute: local\ndistribution: {type: pytorch}\n", "Distributed training needs a Kubernetes compute"),
])
def test_pasted_yaml_errors_are_listed_at_the_top(client_as, workspace, pasted, message):
    response = client_as("contributor").post(PASTE, {"yaml": pasted})
    body = text(response)
    assert response.status_code == 200 and not Job.objects.exists()
    errors = body.split('id="yaml-errors"')[1].split("</ul>")[0]
    assert "Nothing was submitted" in errors and message in errors
    assert f">{escape(pasted)}</textarea>" in body  # the text stays, to be fixed


def test_clone_opens_paste_with_the_job_yaml_without_its_name(client_as, submit):
    submit(name="original", display_name="Original", environment_variables={"A": "1"})
    body = text(client_as("contributor").get(PASTE + "?from=original"))
    pasted = yaml.safe_load(html.unescape(re.search(r'<textarea[^>]*id="id_yaml"[^>]*>(.*?)</textarea>', body, re.S).group(1)))
    assert "name" not in pasted and pasted["display_name"] == "Original" and pasted["compute"] == "local"
    assert pasted["environment_variables"] == {"A": "1"} and pasted["command"] == "echo hi"


# A job's page


def test_every_tab_renders_for_a_reader_without_action_buttons(client_as, submit):
    job = submit(name="look")
    client = client_as("reader")
    for section in ("", "logs/", "outputs/", "yaml/", "manifest/", "events/"):
        body = text(client.get(f"{JOBS}look/{section}"))
        assert 'id="job-header"' in body and 'class="nav-link active"' in body
        assert "/cancel/" not in body and 'data-bs-target="#delete-modal"' not in body and "Clone" not in body
    assert client.get(f"{JOBS}look/metrics/").status_code == 404
    assert job.name in text(client.get(f"{JOBS}look/"))


def test_outputs_tab_lists_the_files_with_download_links(client_as, submit, settings, tmp_path):
    from jobs import files

    settings.DOCKYARD_JOB_DIR = tmp_path / "jobs"
    job = submit(name="made")
    outputs = files.run_folder(job) / files.WORKDIR / files.OUTPUTS
    (outputs / "model").mkdir(parents=True)
    (outputs / "model" / "w <1>.bin").write_bytes(b"12345")
    body = text(client_as("reader").get(f"{JOBS}made/outputs/"))
    assert 'data-path="model/w &lt;1&gt;.bin"' in body and "5\xa0bytes" in body
    assert 'href="/api/v1/workspaces/team-a/jobs/made/outputs/?path=model%2Fw+%3C1%3E.bin" download' in body
    empty = text(client_as("reader").get(f"{JOBS}made/outputs/".replace("made", submit(name="nothing").name)))
    assert "No output files" in empty and "${{outputs.NAME}}" in empty


def test_outputs_tab_of_a_kubernetes_job_says_none_are_kept(client_as, kubernetes_compute, owner, workspace):
    job_create(user=owner, workspace=workspace, data={"name": "pod", "command": "echo", "compute": "k8s",
                                                      "environment": {"image": "python:3.11"}})
    body = text(client_as("reader").get(f"{JOBS}pod/outputs/"))
    assert "No outputs kept" in body and "Kubernetes" in body


def test_overview_shows_status_times_placement_command_environment_and_tags(client_as, submit):
    job = submit(name="ov", command="python train.py --lr 0.1", environment_variables={"SEED": "7"}, tags={"team": "cv"},
                 limits={"timeout": 3600})
    finish(job, "Failed", exit_code=3)
    Job.objects.filter(pk=job.pk).update(status_reason="The command exited with code 3.")
    body = text(client_as("reader").get(f"{JOBS}ov/"))
    header, props = body.split('id="job-properties"')
    assert 'data-state="Failed"' in props and "The command exited with code 3." in header
    assert "<th>Exit code</th><td class=\"font-monospace\">3</td>" in props and "1m 15s" in props
    assert "local" in props and "1h 00m" in props
    assert "python train.py --lr 0.1" in body and "SEED" in body and "team: cv" in body
    assert 'class="alert alert-danger' in body  # the reason of a failure stands out under the title


def test_cancel_button_only_while_the_job_can_be_cancelled(client_as, submit):
    job = submit(name="c1")
    client = client_as("contributor")
    for status, shown in (("NotStarted", True), ("Queued", True), ("Starting", True), ("Running", True),
                          ("CancelRequested", False), ("Completed", False), ("Failed", False), ("Canceled", False)):
        Job.objects.filter(pk=job.pk).update(status=status)
        assert ("/w/team-a/jobs/c1/cancel/" in text(client.get(f"{JOBS}c1/"))) is shown, status


def test_cancel_as_contributor_requests_it_and_returns_to_the_tab(client_as, submit):
    job = submit(name="c2")
    Job.objects.filter(pk=job.pk).update(status="Running")
    response = client_as("contributor").post(f"{JOBS}c2/cancel/", {"section": "logs"})
    assert response.status_code == 302 and response["Location"] == f"{JOBS}c2/logs/"
    job.refresh_from_db()
    assert job.status == "CancelRequested" and "contributor-user" in job.status_reason


def test_cancel_as_reader_is_403_and_changes_nothing(client_as, submit):
    job = submit(name="c3")
    assert client_as("reader").post(f"{JOBS}c3/cancel/").status_code == 403
    job.refresh_from_db()
    assert job.status == "NotStarted"


def test_cancelling_an_ended_job_says_why_not(client_as, submit):
    finish(submit(name="c4"))
    body = text(client_as("contributor").post(f"{JOBS}c4/cancel/", follow=True))
    assert "has already ended (Completed)" in body


def test_delete_through_the_shared_dialog(client_as, submit):
    submit(name="d1")
    client = client_as("contributor")
    body = text(client.get(f"{JOBS}d1/"))
    assert 'id="delete-modal"' in body and 'action="/w/team-a/jobs/d1/delete/"' in body
    assert client_as("reader").post(f"{JOBS}d1/delete/").status_code == 403
    assert not Job.objects.get(name="d1").deleting
    response = client.post(f"{JOBS}d1/delete/", follow=True)
    assert response.redirect_chain[-1][0] == JOBS and "Job d1 is being deleted." in text(response)
    assert Job.objects.get(name="d1").deleting and 'data-job="d1"' not in text(response)


def test_logs_of_a_finished_job_are_its_lines_with_their_source(client_as, submit):
    finish(submit(name="l1"), lines=[("rank-0", "epoch 1"), ("rank-1", "epoch 1 <b>"), ("", "plain")])
    body = text(client_as("reader").get(f"{JOBS}l1/logs/"))
    assert "data-follow" not in body
    assert '<span class="log-source">[rank-1]</span> epoch 1 &lt;b&gt;' in body and '<div class="log-line" data-seq="2">plain' in body
    assert 'href="/api/v1/workspaces/team-a/jobs/l1/logs?download=true"' in body


def test_logs_of_a_running_job_follow_the_api_stream(client_as, submit):
    Job.objects.filter(pk=submit(name="l2").pk).update(status="Running")
    body = text(client_as("reader").get(f"{JOBS}l2/logs/"))
    assert 'data-follow="/api/v1/workspaces/team-a/jobs/l2/logs?follow=true"' in body and "Waiting for output" in body


def test_the_log_stream_accepts_the_browser_session_and_eventsource_accept_header(client_as, submit, settings):
    finish(submit(name="l3"), lines=[("", "one"), ("", "two")])
    response = client_as("reader").get("/api/v1/workspaces/team-a/jobs/l3/logs?follow=true", HTTP_ACCEPT="text/event-stream")
    assert response.status_code == 200 and response["Content-Type"] == "text/event-stream"
    stream = b"".join(response.streaming_content).decode()
    assert 'event: line\ndata: {"seq": 0' in stream and "event: end" in stream and '"status": "Completed"' in stream
    download = client_as("reader").get("/api/v1/workspaces/team-a/jobs/l3/logs?download=true")
    assert download.status_code == 200 and download.content == b"one\ntwo\n"


def test_yaml_tab_shows_the_spec_as_yaml(client_as, kubernetes_compute, submit):
    submit(name="y1", compute="azureml:k8s", environment={"image": "python:3.11"}, resources={"instance_type": "gpu-small"})
    body = text(client_as("reader").get(f"{JOBS}y1/yaml/"))
    document = yaml.safe_load(html.unescape(re.search(r'id="job-yaml"><code>(.*?)</code>', body, re.S).group(1)))
    assert document["name"] == "y1" and document["compute"] == "azureml:k8s"
    assert document["resources"]["instance_type"] == "gpu-small" and document["environment"] == {"image": "python:3.11"}


def test_manifest_tab(client_as, kubernetes_compute, submit):
    submit(name="local-one")
    assert "Not a Kubernetes job" in text(client_as("reader").get(f"{JOBS}local-one/manifest/"))
    job = submit(name="k1", compute="k8s", environment={"image": "python:3.11"})
    assert "No manifest yet" in text(client_as("reader").get(f"{JOBS}k1/manifest/"))
    manifests = [{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "k1-abc", "namespace": "ml"}},
                 {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "k1-abc"}}]
    Job.objects.filter(pk=job.pk).update(manifests=manifests)
    body = text(client_as("reader").get(f"{JOBS}k1/manifest/"))
    rendered = html.unescape(re.search(r'id="job-manifest"><code>(.*?)</code>', body, re.S).group(1))
    assert list(yaml.safe_load_all(rendered)) == manifests
    assert rendered.startswith("apiVersion: batch/v1\nkind: Job\nmetadata:")  # kubectl's order, whatever the database kept


def test_events_tab_lists_what_happened(client_as, submit):
    job = submit(name="e1")
    JobEvent.objects.create(job=job, time=timezone.now(), type="Warning", reason="Failed", message="exit code 1")
    body = text(client_as("reader").get(f"{JOBS}e1/events/"))
    assert '<tr data-reason="NotStarted">' in body and "Submitted, on the worker" in body
    assert "text-bg-warning" in body and "exit code 1" in body
    assert re.search(r'Events <span class="badge rounded-pill count">2</span>', body)


def test_status_polls_while_active_and_stops_once_ended(client_as, submit):
    job = submit(name="p1")
    client = client_as("reader")
    page = text(client.get(f"{JOBS}p1/logs/"))
    assert 'hx-get="/w/team-a/jobs/p1/status/?section=logs" hx-trigger="every 2s"' in page
    polled = text(client.get(f"{JOBS}p1/status/?section=logs"))
    assert 'hx-trigger="every 2s"' in polled and "hx-swap-oob" not in polled  # the log pane is left alone
    overview = text(client.get(f"{JOBS}p1/status/?section=overview"))
    assert 'id="job-section" hx-swap-oob="true"' in overview and 'id="job-properties"' in overview
    finish(job)
    ended = text(client.get(f"{JOBS}p1/status/?section=overview"))
    assert 'data-state="Completed"' in ended and "hx-trigger" not in ended.split('id="job-section"')[0]


def test_a_compute_cluster_job_says_where_it_runs(client_as, owner, workspace, kubernetes_compute):
    cluster = ComputeTarget.objects.create(
        workspace=workspace, name="cpu-cluster", type="amlcompute", created_by=owner,
        provisioning_state=ProvisioningState.SUCCEEDED,
        properties={"size": "Standard_DS3_v2", "min_instances": 0, "max_instances": 4, "kubernetes_compute": "k8s"})
    job_create(user=owner, workspace=workspace, data={"name": "on-cluster", "command": "echo", "compute": "azureml:cpu-cluster",
                                                      "environment": {"image": "python:3.11"}})
    props = text(client_as("reader").get(f"{JOBS}on-cluster/")).split('id="job-properties"')[1]
    assert f'href="/w/team-a/compute/{cluster.name}/"' in props
    assert "whole nodes of a compute cluster, on Kubernetes" in props and "Standard_DS3_v2" in props
