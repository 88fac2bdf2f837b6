"""The studio's asset pages: a name's versions, one version (its fields, its files), registering from YAML with the
files sent along, archiving and restoring — through assets.registry, so the API's errors, shown on the form."""
import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils.html import escape

from assets import registry
from assets.models import Data, Environment, Model, Snapshot
from assets.services import upload_create
from assets.tests.support import targz, zipped
from workspaces.models import AuditEvent

ASSETS = "/w/team-a/assets/"
MODEL_FILES = {"model/MLmodel": b"flavors: {}\n", "model/weights.bin": b"\x00" * 2048}


@pytest.fixture
def own_store(settings, tmp_path):
    settings.STORAGES = {**settings.STORAGES, "artifacts": {
        "BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(tmp_path / "store")}}}


@pytest.fixture
def model(owner, workspace, own_store):
    """Model credit:1 and credit:2, an upload of MODEL_FILES."""
    snapshot, _ = upload_create(user=owner, workspace=workspace, body=io.BytesIO(targz(MODEL_FILES)),
                                content_type="application/gzip")
    for version in ("1", "2"):
        registry.model_create(user=owner, workspace=workspace, data={"name": "credit", "version": version,
                                                                      "path": snapshot.path, "tags": {"team": "risk"}})
    return snapshot


def text(response) -> str:
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def test_a_names_versions_are_listed_newest_first_archived_ones_marked(client_as, users, model):
    Model.objects.filter(version="1").update(archived=True)
    page = text(client_as("reader").get(f"{ASSETS}models/credit/"))
    assert page.index('data-version="2"') < page.index('data-version="1"')
    assert "Archived" in page
    assert "Restore" not in page and "Archive</button>" not in page  # a reader changes nothing


def test_a_version_shows_its_fields_and_files_with_sizes(client_as, users, model):
    page = text(client_as("reader").get(f"{ASSETS}models/credit/versions/2/"))
    assert "azureml:credit:2" in page and model.path in page and "custom_model" in page
    assert "model/weights.bin" in page and "2.0\xa0KB" in page and "model/MLmodel" in page
    assert "team: risk" in page and "$schema: https://azuremlschemas.azureedge.net/latest/model.schema.json" in page


def test_an_environment_version_shows_its_image_and_conda_file(client_as, users, owner, workspace):
    registry.environment_create(user=owner, workspace=workspace, data={
        "name": "sk", "version": "3", "image": "python:3.11-slim",
        "conda_file": {"name": "sk", "dependencies": ["python=3.11", {"pip": ["scikit-learn==1.5.0"]}]}})
    page = text(client_as("reader").get(f"{ASSETS}environments/sk/versions/3/"))
    assert "python:3.11-slim" in page and "scikit-learn==1.5.0" in page


@pytest.mark.parametrize("path", ["models/nope/", "models/credit/versions/9/", "widgets/credit/", "models/credit/versions/1%00/"])
def test_unknown_assets_are_404(client_as, users, model, path):
    assert client_as("reader").get(f"{ASSETS}{path}").status_code == 404


def test_an_outsider_gets_404_everywhere(client_as, users, model):
    for path in ("models/credit/", "models/credit/versions/1/", "models/new/yaml/"):
        assert client_as("outsider").get(f"{ASSETS}{path}").status_code == 404


def register(client, collection: str, yaml_text: str, files=None):
    data = {"yaml": yaml_text}
    if files is not None:
        data["files_archive"] = files
    return client.post(f"{ASSETS}{collection}/new/yaml/", data)


def test_a_contributor_registers_an_environment_from_yaml(client_as, users):
    response = register(client_as("contributor"), "environments", "name: sk\nimage: python:3.11-slim\n")
    assert response.status_code == 302 and response["Location"] == f"{ASSETS}environments/sk/versions/1/"
    assert Environment.objects.get().image == "python:3.11-slim"


def test_a_yaml_file_works_as_well_as_a_paste(client_as, users):
    upload = SimpleUploadedFile("env.yml", b"name: sk\nversion: '7'\nimage: python:3.11\n")
    response = client_as("contributor").post(f"{ASSETS}environments/new/yaml/", {"yaml": "", "yaml_file": upload})
    assert response.status_code == 302 and Environment.objects.get().version == "7"


@pytest.mark.parametrize("archive_name, body", [("model.zip", zipped(MODEL_FILES)), ("model.tar.gz", targz(MODEL_FILES))])
def test_a_model_is_registered_with_its_files(client_as, users, own_store, archive_name, body):
    yaml_text = "name: credit\ntype: custom_model\npath: ./model\n"
    response = register(client_as("contributor"), "models", yaml_text, SimpleUploadedFile(archive_name, body))
    assert response.status_code == 302
    record = Model.objects.get()
    assert record.path == Snapshot.objects.get().path and record.spec["path"] == record.path


def test_data_from_an_https_url_needs_no_files(client_as, users):
    response = register(client_as("contributor"), "data", "name: iris\ntype: uri_file\npath: https://example.org/iris.csv\n")
    assert response.status_code == 302 and Data.objects.get().path == "https://example.org/iris.csv"


ERRORS = [
    ("environments", "name: sk\n", "image"),  # the API's own message: an environment needs an image
    ("environments", "name: [\n", "not valid YAML"),
    ("environments", "name: a\nimage: x\n---\nname: b\nimage: y\n", "Paste one environment per registration"),
    ("environments", "name: sk\nimage: python:3.11\nbuild: {path: ./ctx}\n", "build"),
    ("models", "name: credit\npath: ./model\n", "is a path on your machine"),
    ("data", "name: d\ntype: uri_folder\npath: azureml://datastores/x/paths/y\n", "no datastores"),
]


@pytest.mark.parametrize("collection, yaml_text, message", ERRORS)
def test_the_apis_errors_are_shown_on_the_form_and_nothing_is_written(client_as, users, collection, yaml_text, message):
    events = AuditEvent.objects.count()
    page = text(register(client_as("contributor"), collection, yaml_text))
    assert message in page or escape(message) in page, page[:3000]
    assert 'role="alert"' in page or "invalid-feedback" in page  # on top, or at the files field (errors at `path`)
    assert (Environment.objects.count(), Model.objects.count(), Data.objects.count()) == (0, 0, 0)
    assert AuditEvent.objects.count() == events


def test_a_taken_version_is_the_apis_conflict(client_as, users, model):
    page = text(register(client_as("contributor"), "models", "name: credit\nversion: '2'\npath: ./m\n",
                         SimpleUploadedFile("m.zip", zipped({"m.bin": b"x"}))))
    assert "already has a version 2" in page and Model.objects.count() == 2


def test_hostile_files_are_refused_at_the_files_field(client_as, users, own_store):
    page = text(register(client_as("contributor"), "models", "name: credit\npath: ./model\n",
                         SimpleUploadedFile("m.zip", zipped({"../../etc/evil": b"x"}))))
    assert "go up" in page and not Model.objects.exists() and not Snapshot.objects.exists()


def test_archive_and_restore(client_as, users, model):
    client = client_as("contributor")
    response = client.post(f"{ASSETS}models/credit/versions/2/archive/")
    assert response.status_code == 302 and Model.objects.get(version="2").archived
    assert "Archived" in text(client.get(response["Location"]))
    listing = text(client.get(ASSETS))
    assert 'href="/w/team-a/assets/models/credit/versions/1/"' in listing  # @latest went back to 1
    client.post(f"{ASSETS}models/credit/versions/2/restore/")
    assert not Model.objects.get(version="2").archived
    verbs = list(AuditEvent.objects.filter(target_type="model").values_list("verb", flat=True))
    assert "archive" in verbs and "restore" in verbs


@pytest.mark.parametrize("path, data", [
    ("models/new/yaml/", {"yaml": "name: x\npath: https://example.org/x\n"}),
    ("models/credit/versions/1/archive/", {}),
    ("models/credit/versions/1/restore/", {}),
])
def test_posts_need_the_contributor_role(client_as, users, model, path, data):
    Model.objects.filter(version="1").update(archived=True)
    assert client_as("outsider").post(f"{ASSETS}{path}", data).status_code == 404
    assert client_as("reader").post(f"{ASSETS}{path}", data).status_code == 403
    assert Model.objects.count() == 2 and Model.objects.get(version="1").archived


def test_readers_see_no_register_button(client_as, users, model):
    assert "Register model" not in text(client_as("reader").get(ASSETS))
    assert "Register model" in text(client_as("contributor").get(ASSETS))


def test_the_pages_take_few_queries(client_as, users, model, django_assert_max_num_queries):
    client = client_as("reader")
    for path in ("models/credit/", "models/credit/versions/2/"):
        client.get(f"{ASSETS}{path}")
        with django_assert_max_num_queries(12):
            client.get(f"{ASSETS}{path}")


@pytest.fixture
def kubernetes_compute(workspace, owner):
    from compute.models import Cluster, ComputeTarget
    from controlplane.reconciling import ProvisioningState

    cluster = Cluster.objects.create(server="https://k8s.example.internal:6443")
    return ComputeTarget.objects.create(
        workspace=workspace, name="k8s", type="kubernetes", cluster=cluster, created_by=owner,
        provisioning_state=ProvisioningState.SUCCEEDED, properties={"server": cluster.server, "namespace": "ml"})


def test_a_job_page_links_the_assets_it_names(client_as, users, owner, workspace, kubernetes_compute):
    from jobs.services import job_create

    registry.environment_create(user=owner, workspace=workspace, data={"name": "sk", "version": "1", "image": "python:3.11"})
    registry.data_create(user=owner, workspace=workspace, data={"name": "iris", "version": "2", "type": "uri_file",
                                                                "path": "https://example.org/iris.csv"})
    job = job_create(user=owner, workspace=workspace, data={
        "command": "python train.py --data ${{inputs.training}}", "compute": "azureml:k8s",
        "environment": "azureml:sk@latest",
        "inputs": {"training": {"type": "uri_file", "path": "azureml:iris:2"}, "epochs": 3}})
    page = text(client_as("reader").get(f"/w/team-a/jobs/{job.name}/"))
    assert 'href="/w/team-a/assets/environments/sk/"' in page
    assert 'href="/w/team-a/assets/data/iris/versions/2/"' in page
    curated = job_create(user=owner, workspace=workspace, data={
        "command": "python x.py", "compute": "azureml:k8s", "environment": "azureml:AzureML-sklearn-1.5@latest"})
    page = text(client_as("reader").get(f"/w/team-a/jobs/{curated.name}/"))
    assert "AzureML-sklearn-1.5@latest" in page and "curated" in page and "/assets/environments/" not in page


def test_new_version_starts_from_the_latest_ones_yaml(client_as, users, model):
    page = text(client_as("contributor").get(f"{ASSETS}models/new/yaml/?from=credit"))
    body = page.split('id="id_yaml"')[1].split(">", 1)[1].split("</textarea>")[0]
    assert "name: credit" in body and "version:" not in body and model.path in body
