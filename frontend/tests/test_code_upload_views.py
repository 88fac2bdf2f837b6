"""The job form's code: a folder (packed by the browser after the server read its ignore files) or a .zip/.tar.gz,
stored through assets.services as the API's uploads/ stores it, and used as the job's `code`.

The browser side (listing, packing) runs in tests/browser/test_assets_studio.py; here the posts the page makes.
"""
import io
import json
import stat

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils.html import escape

from assets.models import Blob, Snapshot
from assets.tests.support import targz, zipped
from assets.tests.test_hostile_zips import with_flags
from jobs.models import Job

pytestmark = pytest.mark.usefixtures("local_compute", "own_store")

FORM = "/w/team-a/jobs/new/form/"
PLAN = "/w/team-a/uploads/plan/"
PREVIEW = "/w/team-a/jobs/new/preview/"
LOCAL_FORM = {"command": "python train.py", "compute": "local", "instance_count": "1", "experiment_name": "Default"}
CODE = {"train.py": b"print('training')\n", "lib/util.py": b"X = 1\n"}


@pytest.fixture
def own_store(settings, tmp_path):
    settings.STORAGES = {**settings.STORAGES, "artifacts": {
        "BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(tmp_path / "store")}}}


def archive(name: str, body: bytes, content_type: str = "application/octet-stream") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, body, content_type=content_type)


def post_form(client, upload=None, **fields):
    data = {**LOCAL_FORM, **fields}
    if upload is not None:
        data["code_archive"] = upload
    return client.post(FORM, data)


def stored() -> tuple[int, int]:
    return Blob.objects.count(), Snapshot.objects.count()


@pytest.mark.parametrize("name, body", [("src.zip", zipped(CODE)), ("src.tar.gz", targz(CODE)), ("src.tgz", targz(CODE))])
def test_an_archive_becomes_the_jobs_code(client_as, users, name, body):
    response = post_form(client_as("contributor"), archive(name, body))
    assert response.status_code == 302, response.content.decode()[:2000]
    job = Job.objects.get()
    snapshot = Snapshot.objects.get()
    assert job.spec["code"] == snapshot.path
    assert sorted(row[0] for row in snapshot.files) == ["lib/util.py", "train.py"]


def test_the_same_code_again_stores_nothing_new(client_as, users):
    client = client_as("contributor")
    post_form(client, archive("src.zip", zipped(CODE)))
    before = stored()
    assert post_form(client, archive("src.tar.gz", targz(CODE))).status_code == 302
    assert stored() == before
    first, second = Job.objects.order_by("created_at")
    assert first.spec["code"] == second.spec["code"]


REFUSED = {
    "path-escape": (zipped({"../evil.py": b"x"}), "go up"),
    "link": (zipped({"link": b"/etc/passwd"}, modes={"link": stat.S_IFLNK | 0o777}), "links are not accepted"),
    "zip-bomb": (zipped({"zeros.bin": bytes(8 * 1024 * 1024)}), "add up to more than"),
    "encrypted": (with_flags(zipped({"a.py": b"x"}), 0x1), "is encrypted"),
    "not-an-archive": (b"just text", "neither a zip nor a gzip-compressed tar"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_refused_archive_is_said_at_the_code_field_and_nothing_is_kept(client_as, users, settings, case):
    settings.DOCKYARD_SNAPSHOT_MAX_BYTES = 1024 * 1024
    body, message = REFUSED[case]
    response = post_form(client_as("contributor"), archive("code.zip", body))
    assert response.status_code == 200
    page = response.content.decode()
    code_block = page.split('id="id_code_upload"')[1].split('<div class="mb-3 field')[0]
    assert escape(message) in code_block or message in code_block, code_block
    assert not Job.objects.exists() and stored() == (0, 0)


def test_too_many_files_and_an_oversized_archive_are_said_on_the_form(client_as, users, settings):
    client = client_as("contributor")
    settings.DOCKYARD_SNAPSHOT_MAX_FILES = 1
    assert "more than 1 files" in post_form(client, archive("src.zip", zipped(CODE))).content.decode()
    settings.DOCKYARD_ARTIFACT_BODY_MAX_BYTES = 10
    assert "an upload has at most 10" in post_form(client, archive("src.zip", zipped(CODE))).content.decode()
    assert not Job.objects.exists() and stored() == (0, 0)


def test_a_studio_post_over_the_body_limit_is_413_before_it_is_read(client_as, users, settings):
    settings.DOCKYARD_ARTIFACT_BODY_MAX_BYTES = 1000
    settings.DOCKYARD_MAX_BODY_BYTES = 1000
    response = post_form(client_as("contributor"), archive("big.zip", bytes(5000)))
    assert response.status_code == 413 and not Job.objects.exists()


def test_a_refused_job_keeps_its_stored_code_in_the_field(client_as, users):
    response = post_form(client_as("contributor"), archive("src.zip", zipped(CODE)), instance_count="-1")
    assert response.status_code == 200 and not Job.objects.exists()
    path = Snapshot.objects.get().path
    assert f'value="{path}"' in response.content.decode()
    assert post_form(client_as("contributor"), code=path).status_code == 302  # submitted again without sending it
    assert Job.objects.get().spec["code"] == path


def test_a_reader_cannot_post_code(client_as, users):
    assert post_form(client_as("reader"), archive("src.zip", zipped(CODE))).status_code == 403
    assert stored() == (0, 0)


def test_the_preview_names_a_picked_folder_as_the_cli_file_would(client_as, users):
    preview = client_as("contributor").post(PREVIEW, {**LOCAL_FORM, "code_name": "src"}).content.decode()
    assert "command: python train.py\ncode: ./src\n" in preview


def listing(rows: dict[str, int]) -> SimpleUploadedFile:
    return SimpleUploadedFile("listing.txt", "".join(f"{size}\t{path}\n" for path, size in rows.items()).encode())


def test_the_plan_reads_ignore_files_as_the_cli_does(client_as, users):
    rows = {"train.py": 10, ".amlignore": 20, "data/big.csv": 10**9, "logs/run.log": 5, "src/m.py": 3,
            "src/.gitignore": 8, "src/gen/out.txt": 4}
    ignores = {".amlignore": "data/\n*.log\n", "src/.gitignore": "gen/\n"}
    answer = client_as("contributor").post(PLAN, {"listing": listing(rows), "ignores": json.dumps(ignores)}).json()
    kept = [list(rows)[index] for index in answer["keep"]]
    assert kept == ["train.py", ".amlignore", "src/m.py", "src/.gitignore"]
    assert answer["left_out"] == 3 and answer["problems"] == [] and answer["bytes"] == 41


def test_the_plan_says_what_the_limits_refuse(client_as, users, settings):
    settings.DOCKYARD_SNAPSHOT_MAX_FILES = 2
    settings.DOCKYARD_SNAPSHOT_MAX_BYTES = 100
    rows = {"a.py": 60, "b.py": 60, "c\\..\\d.py": 1}
    problems = client_as("contributor").post(PLAN, {"listing": listing(rows), "ignores": "{}"}).json()["problems"]
    assert "at most 2" in problems[0] and "at most 100" in problems[1]
    assert any("backslash" in problem for problem in problems)
    huge = {f"f{index}.py": 1 for index in range(41)}
    problems = client_as("contributor").post(PLAN, {"listing": listing(huge), "ignores": "{}"}).json()["problems"]
    assert "far more files" in problems[0]


@pytest.mark.parametrize("role, status", [("outsider", 404), ("reader", 403), ("contributor", 200), ("owner", 200)])
def test_the_plan_is_for_those_who_may_submit(client_as, users, role, status):
    response = client_as(role).post(PLAN, {"listing": listing({"a.py": 1}), "ignores": "{}"})
    assert response.status_code == status


def test_the_form_offers_a_folder_and_an_archive(client_as, users):
    page = client_as("contributor").get(FORM).content.decode()
    assert "webkitdirectory" in page and 'name="code_archive"' in page
    assert 'formenctype="multipart/form-data"' in page
    assert io  # (the form posts multipart only from its button: htmx previews never carry the archive)


@pytest.mark.parametrize("raw, ignores, expected", [
    (b"5\ta\x00b.py\n", "{}", "control characters"),
    (b"5\t../up.py\n", "{}", "go up"),
    (b"5\t/etc/passwd\n", "{}", "may not start at a root"),
    (b"5\ta.py\n", "not json", "could not be read"),
    ("²\ta.py\n".encode(), "{}", ""),  # a digit int() does not read
    (b"5\ta.py\n", '{".amlignore": 3}', "could not be read"),
    (b"5\t\xff\xfe.py\n", "{}", ""),  # read as U+FFFD: a name, not a crash
    (b"x" * 100_000 + b"\n", "{}", ""),  # a line past the bound is cut, not held
])
def test_a_hostile_listing_is_answered_not_crashed_on(client_as, users, raw, ignores, expected):
    response = client_as("contributor").post(PLAN, {"listing": SimpleUploadedFile("l.txt", raw), "ignores": ignores})
    assert response.status_code == 200
    problems = " ".join(response.json()["problems"])
    assert expected in problems
