"""Assets and code uploads in a real browser: a job's code picked as a folder (its .amlignore read on the server, the
files packed into a .tar.gz by the page) or as an archive, and the asset pages — register a model with its folder,
an environment from YAML (its error first), archive and restore — with screenshots to look at.
"""
import stat
import zipfile

import pytest
from playwright.sync_api import expect

from assets.models import Blob, Environment, Model, Snapshot
from jobs.models import Job
from workspaces.choices import Role
from workspaces.models import Membership
from workspaces.services import workspace_create

from .conftest import sign_in

pytestmark = pytest.mark.browser

LONG_NAME = "a-rather-long-folder-name-for-the-pax-header/" * 3 + "model_config.py"  # > 100 bytes: a pax record


@pytest.fixture
def people(transactional_db, django_user_model, settings, tmp_path):
    """Olivia owns workspace "vision" (local compute on); Bob may only read it; artifacts under tmp_path."""
    settings.STORAGES = {**settings.STORAGES, "artifacts": {
        "BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(tmp_path / "store")}}}
    olivia = django_user_model.objects.create_user(username="olivia", password="correct-horse-battery")
    bob = django_user_model.objects.create_user(username="bob", password="correct-horse-battery")
    workspace = workspace_create(user=olivia, name="vision", display_name="Vision team")
    workspace.local_compute_enabled = True
    workspace.save(update_fields=["local_compute_enabled"])
    Membership.objects.create(workspace=workspace, user=bob, role=Role.READER)
    return olivia, bob


@pytest.fixture
def src(tmp_path):
    """A code folder: two files to send, one with a long path, and what its .amlignore and .gitignore leave behind."""
    folder = tmp_path / "picked" / "src"
    for path, text in {"train.py": "print('training')\n", "lib/util.py": "X = 1\n", LONG_NAME: "SIZE = 3\n",
                       ".amlignore": "data/\n*.log\n", "data/big.csv": "1,2,3\n" * 1000, "run.log": "old run\n",
                       "lib/.gitignore": "__pycache__/\n", "lib/__pycache__/util.pyc": "\x00\x01"}.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    return folder


@pytest.fixture
def shot(screenshot):
    def take(page, name: str) -> None:
        page.evaluate("window.scrollTo(0, 0)")
        screenshot(page, name)

    return take


def test_a_jobs_code_from_a_folder_then_again_then_a_hostile_zip(people, page, shot, src, tmp_path):
    sign_in(page, "olivia")
    page.goto("/w/vision/jobs/new/form/")
    page.get_by_label("Compute").select_option("local")
    page.get_by_label("Command").fill("python train.py")
    page.get_by_label("A folder").set_input_files(str(src))
    status = page.locator("#id_code_upload [data-upload-status]")
    expect(status).to_contain_text("src: 5 files", timeout=15_000)
    expect(status).to_contain_text("3 left behind by .amlignore/.gitignore")
    expect(page.locator("#yaml-preview")).to_contain_text("code: ./src")
    shot(page, "assets-01-job-form-folder")
    page.get_by_role("button", name="Submit").click()
    expect(page.locator("#job-code")).to_contain_text("azureml://uploads/")
    shot(page, "assets-02-job-with-code")
    snapshot = Snapshot.objects.get()
    assert Job.objects.get().spec["code"] == snapshot.path
    assert sorted(row[0] for row in snapshot.files) == sorted(
        [".amlignore", "lib/.gitignore", "lib/util.py", "train.py", LONG_NAME])
    blobs = Blob.objects.count()

    # The same folder again: a second job, nothing new stored
    page.goto("/w/vision/jobs/new/form/")
    page.get_by_label("Compute").select_option("local")
    page.get_by_label("Command").fill("python train.py --again")
    page.get_by_label("A folder").set_input_files(str(src))
    expect(status).to_contain_text("src: 5 files", timeout=15_000)
    page.get_by_role("button", name="Submit").click()
    expect(page.locator("#job-code")).to_contain_text(snapshot.path)
    assert (Snapshot.objects.count(), Blob.objects.count(), Job.objects.count()) == (1, blobs, 2)

    # An archive that tries to leave its folder: refused at the field, nothing kept
    hostile = tmp_path / "escape.zip"
    with zipfile.ZipFile(hostile, "w") as bundle:
        bundle.writestr("../../etc/cron.d/evil", "* * * * * root id\n")
        link = zipfile.ZipInfo("link")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        bundle.writestr(link, "/etc/passwd")
    page.goto("/w/vision/jobs/new/form/")
    page.get_by_label("Compute").select_option("local")
    page.get_by_label("Command").fill("python train.py")
    page.get_by_label("or a .zip / .tar.gz").set_input_files(str(hostile))
    expect(status).to_contain_text("escape.zip")
    page.get_by_role("button", name="Submit").click()
    expect(page.locator("#id_code_upload .invalid-feedback")).to_contain_text("go up")
    shot(page, "assets-03-job-form-hostile-zip")
    assert (Snapshot.objects.count(), Job.objects.count()) == (1, 2)


def test_register_a_model_and_an_environment_archive_and_restore(people, page, shot, tmp_path):
    model = tmp_path / "picked" / "credit-model"
    (model / "model").mkdir(parents=True)
    (model / "MLmodel").write_text("flavors:\n  python_function: {}\n")
    (model / "model" / "weights.bin").write_bytes(bytes(3000))
    sign_in(page, "olivia")
    page.goto("/w/vision/")
    page.locator(".sidenav").get_by_role("link", name="Assets").click()
    shot(page, "assets-04-empty")
    page.get_by_role("link", name="Register model").click()

    # Keyboard: from the YAML box, Tab reaches the YAML file, then the folder and archive pickers, then Register
    page.get_by_label("Model YAML").fill("name: credit\ntype: custom_model\npath: ./credit-model\ntags: {team: risk}\n")
    page.keyboard.press("Tab")
    expect(page.locator("#id_yaml_file")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.get_by_label("A folder")).to_be_focused()
    page.get_by_label("A folder").set_input_files(str(model))
    expect(page.locator("[data-upload-status]")).to_contain_text("credit-model: 2 files", timeout=15_000)
    shot(page, "assets-05-register-model")
    page.get_by_role("button", name="Register").click()
    expect(page.get_by_role("heading", name="credit")).to_be_visible()
    expect(page.locator("#asset-files")).to_contain_text("model/weights.bin")
    expect(page.locator("#asset-files")).to_contain_text("2.9\xa0KB")
    expect(page.locator("#asset-reference")).to_have_value("azureml:credit:1")
    shot(page, "assets-06-model-version")
    assert Model.objects.get().path == Snapshot.objects.get().path

    # An environment: the API's error on the form first, then registered; a second version
    page.goto("/w/vision/assets/environments/new/yaml/")
    page.get_by_label("Environment YAML").fill("name: sklearn-env\nbuild: {path: ./docker}\n")
    page.get_by_role("button", name="Register").click()
    expect(page.locator("#yaml-errors")).to_contain_text("build")
    shot(page, "assets-07-environment-error")
    assert not Environment.objects.exists()
    for image in ("python:3.11-slim", "python:3.12-slim"):
        page.goto("/w/vision/assets/environments/new/yaml/")
        page.get_by_label("Environment YAML").fill(f"name: sklearn-env\nimage: {image}\n")
        page.get_by_role("button", name="Register").click()
        expect(page.locator("#asset-properties")).to_contain_text(image)

    # The list, a name's versions, archive (confirmed) and restore
    page.locator(".crumbs").get_by_role("link", name="Assets").click()
    expect(page.locator('#environments tr[data-asset="sklearn-env"]')).to_contain_text("python:3.12-slim")
    shot(page, "assets-08-list")
    page.locator("#environments").get_by_role("link", name="sklearn-env").click()
    versions = page.locator("#asset-versions")
    expect(versions.locator("tbody tr")).to_have_count(2)
    page.once("dialog", lambda dialog: dialog.accept())
    versions.get_by_role("button", name="Archive sklearn-env:2").click()
    expect(page.locator(".badge", has_text="Archived")).to_be_visible()
    page.locator(".crumbs").get_by_role("link", name="sklearn-env").click()
    expect(versions.locator('tr[data-version="2"]')).to_contain_text("Archived")
    shot(page, "assets-09-versions-archived")
    versions.get_by_role("button", name="Restore sklearn-env:2").click()
    expect(page.locator(".alert-success")).to_contain_text("restored")
    assert not Environment.objects.filter(archived=True).exists()

    # Bob reads: no Register, Archive or Restore
    page.get_by_test_id("user-menu").click()
    page.get_by_role("button", name="Sign out").click()
    sign_in(page, "bob")
    page.goto("/w/vision/assets/models/credit/versions/1/")
    expect(page.locator("#asset-files")).to_contain_text("MLmodel")
    expect(page.get_by_role("button", name="Archive")).to_have_count(0)
    page.goto("/w/vision/assets/")
    expect(page.get_by_role("link", name="Register model")).to_have_count(0)
    shot(page, "assets-10-reader")
