"""Local jobs with data: resolved inputs written into the run folder before the command (read-only in the sandbox),
./outputs collected into storage when the job ends (whatever the end), named outputs registered as assets."""
import os
import shutil
import ssl

import pytest

from assets import folders
from assets.models import Data, Model, Snapshot
from assets.specs.snapshots import Limits
from jobs import fetch, files, staging
from jobs.models import Job
from jobs.tests.test_job_inputs import uploaded
from jobs.tests.test_local_jobs import ended, events_of, job_dir, log_of, submit, worker  # noqa: F401 (fixtures)

RUNS = pytest.mark.usefixtures("worker")

pytestmark = pytest.mark.usefixtures("local_compute")
URL = "/api/v1/workspaces/team-a/jobs/"


def messages(api, name: str, reason: str) -> list[str]:
    return [event["message"] for event in events_of(api, name) if event["reason"] == reason]


@RUNS
def test_inputs_arrive_and_outputs_are_kept_and_registered(owner_api):
    folder = uploaded(owner_api, {"a.txt": b"alpha\n", "sub/b.txt": b"beta\n"})
    single = uploaded(owner_api, {"train.csv": b"x,y\n1,2\n"})
    name = submit(owner_api, name="train", command=(
        "cat ${{inputs.data}}/a.txt ${{inputs.data}}/sub/b.txt ${{inputs.table}}; "
        "touch ${{inputs.data}}/written 2>/dev/null || echo read-only; "
        "mkdir -p ${{outputs.model}} && cp ${{inputs.table}} ${{outputs.model}}/copy.csv && echo 1 > outputs/score"),
        inputs={"data": {"type": "uri_folder", "path": folder},
                "table": {"type": "uri_file", "path": single, "mode": "download"}},
        outputs={"model": {"type": "custom_model", "name": "clf"}})
    job = ended(owner_api, name)
    assert job["status"] == "Completed", (job["status_reason"], log_of(owner_api, name))
    assert log_of(owner_api, name) == ["alpha", "beta", "x,y", "1,2", "read-only"]
    [arrived] = messages(owner_api, name, "InputsFetched")
    assert "data: 2 files, 11 bytes" in arrived and "table: 1 file, 8 bytes" in arrived
    record = Job.objects.get(name=name)
    assert record.outputs_snapshot is not None
    assert sorted(row[0] for row in record.outputs_snapshot.files) == ["model/copy.csv", "score"]
    # listed and served from storage, not from the run folder
    shutil.rmtree(files.run_folder(record))
    listed = owner_api.get(f"{URL}{name}/outputs/").json()
    assert listed == [{"name": "copy.csv", "path": "model/copy.csv", "size": 8, "output": "model"},
                      {"name": "score", "path": "score", "size": 2, "output": None}]
    response = owner_api.get(f"{URL}{name}/outputs/", {"path": "model/copy.csv"})
    assert b"".join(response.streaming_content) == b"x,y\n1,2\n"
    [registered] = messages(owner_api, name, "OutputRegistered")
    assert registered == "Output model is registered as azureml:clf:1."
    model = Model.objects.get(name="clf")
    assert [row[0] for row in model.snapshot.files] == ["copy.csv"]


@RUNS
def test_a_clash_with_an_existing_version_is_said_on_the_job(owner_api):
    other = uploaded(owner_api, {"x": b"other"})
    assert owner_api.post("/api/v1/workspaces/team-a/data/", {"name": "features", "version": "7", "path": other},
                          format="json").status_code == 201
    name = submit(owner_api, name="features", command="echo f > ${{outputs.out}}/f.txt",
                  outputs={"out": {"type": "uri_folder", "name": "features", "version": "7"}})
    job = ended(owner_api, name)
    assert job["status"] == "Completed"
    [said] = messages(owner_api, name, "OutputNotRegistered")
    assert "already has a version 7" in said
    assert Data.objects.filter(name="features").count() == 1


@RUNS
def test_a_failed_job_keeps_its_outputs_but_registers_nothing(owner_api):
    name = submit(owner_api, command="echo partial > outputs/p.txt; exit 2",
                  outputs={"out": {"type": "uri_folder", "name": "never"}})
    job = ended(owner_api, name)
    assert job["status"] == "Failed"
    assert owner_api.get(f"{URL}{name}/outputs/").json()[0]["path"] == "p.txt"
    assert Job.objects.get(name=name).outputs_snapshot is not None
    assert not Data.objects.filter(name="never").exists()


@RUNS
def test_an_input_url_to_a_non_public_address_fails_the_job_with_the_reason(owner_api):
    name = submit(owner_api, command="cat ${{inputs.f}}",
                  inputs={"f": {"type": "uri_file", "path": "https://127.0.0.1:9/secret.txt"}})
    job = ended(owner_api, name)
    assert job["status"] == "Failed"
    assert "Input f was not fetched" in job["status_reason"] and "127.0.0.1" in job["status_reason"]


# https files, from a TLS server on loopback that the test trusts (tls_server: jobs/tests/support.py)


@RUNS
def test_an_https_file_is_fetched_into_the_inputs_folder(owner_api, tls_server):
    name = submit(owner_api, command="cat ${{inputs.iris}}",
                  inputs={"iris": {"type": "uri_file", "path": f"{tls_server}/data/iris.csv"}})
    job = ended(owner_api, name)
    assert job["status"] == "Completed", job["status_reason"]
    assert log_of(owner_api, name) == ["sepal,petal"]
    assert "iris: 1 file, 12 bytes" in messages(owner_api, name, "InputsFetched")[0]


def test_an_oversized_file_a_redirect_inward_or_a_bad_certificate_is_refused(tls_server, tmp_path, monkeypatch):
    with pytest.raises(fetch.FetchRefused, match="more than 1000"):
        fetch.fetch(f"{tls_server}/big.bin", tmp_path / "big", 1000, 30)
    with pytest.raises(fetch.FetchRefused, match="not a public address|loopback"):
        fetch.fetch(f"{tls_server}/moved", tmp_path / "moved", 1000, 30)
    monkeypatch.setattr(fetch, "tls_context", ssl.create_default_context)  # the system's CAs do not know the server
    with pytest.raises(fetch.FetchRefused, match="CERTIFICATE_VERIFY_FAILED|certificate"):
        fetch.fetch(f"{tls_server}/iris.csv", tmp_path / "iris", 1000, 30)


@pytest.mark.parametrize("url", ["https://10.0.0.1/a", "https://169.254.169.254/latest", "https://[::1]/a",
                                 "https://0x7f000001/a", "https://localhost/a"])
def test_internal_addresses_are_never_fetched(url, tmp_path):
    with pytest.raises(fetch.FetchRefused):
        fetch.fetch(url, tmp_path / "x", 1000, 5)
    assert not (tmp_path / "x").exists()


# the inputs folder, again after a crash


@pytest.mark.usefixtures("job_dir")
def test_staging_again_keeps_what_arrived_and_redoes_what_was_half_written(owner_api, tmp_path):
    path = uploaded(owner_api, {"a.txt": b"a"})
    response = owner_api.post(URL, {"name": "again", "compute": "local", "command": "ls ${{inputs.d}} ${{inputs.e}}",
                                    "inputs": {"d": {"path": path}, "e": {"path": path}}}, format="json")
    assert response.status_code == 201, response.json()
    job = Job.objects.get(name="again")
    folder = tmp_path / "run"
    folder.mkdir()
    first = staging.stage_inputs(job, folder)
    assert [(item.name, item.files, item.kept) for item in first] == [("d", 1, False), ("e", 1, False)]
    os.rename(folder / "inputs" / "e", folder / "inputs" / ".e.partial")  # as if the worker died while writing e
    (folder / "inputs" / ".e.partial" / "junk").write_text("half")
    again = staging.stage_inputs(job, folder)
    assert [(item.name, item.files, item.kept) for item in again] == [("d", 1, True), ("e", 1, False)]
    assert sorted(os.listdir(folder / "inputs" / "e")) == ["a.txt"]


# collecting a hostile outputs folder


def test_collecting_leaves_out_links_and_special_files_and_says_what_is_over_the_bounds(workspace, tmp_path):
    top = tmp_path / "outputs"
    (top / "deep" / "er").mkdir(parents=True)
    (top / "a.txt").write_text("a")
    (top / "deep" / "er" / "z.txt").write_text("z")
    (top / "big.bin").write_bytes(b"x" * 100)
    os.symlink("/etc/passwd", top / "passwd")
    os.symlink("/etc", top / "etc")
    os.mkfifo(top / "pipe")
    (top / "bad\name").write_text("b")
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        collected = folders.collect_folder(workspace, fd, Limits(max_files=10, max_total_bytes=50, max_depth=2,
                                                                 max_path_chars=100))
    finally:
        os.close(fd)
    assert [row[0] for row in collected.snapshot.files] == ["a.txt"]
    said = " ".join(collected.left_out)
    assert "big.bin" in said and "deeper than 2" in said
    assert "3 links, special files" in said and "1 files whose names cannot be stored" in said
    again = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert folders.collect_folder(workspace, again, Limits(10, 50, 2, 100)).snapshot == collected.snapshot
    finally:
        os.close(again)
    assert Snapshot.objects.count() == 1


@pytest.mark.usefixtures("job_dir")
def test_outputs_from_storage_take_a_bounded_number_of_queries(owner_api, django_assert_max_num_queries):
    from jobs.outputs import record_outputs

    response = owner_api.post(URL, {"name": "kept", "compute": "local", "command": "echo"}, format="json")
    assert response.status_code == 201
    path = uploaded(owner_api, {f"f{index}.txt": b"x" for index in range(50)})
    record_outputs(Job.objects.get(name="kept"), Snapshot.objects.get(sha256=path.rsplit("/", 1)[-1]))
    with django_assert_max_num_queries(9):
        listed = owner_api.get(f"{URL}kept/outputs/").json()
    assert len(listed) == 50
    with django_assert_max_num_queries(9):
        response = owner_api.get(f"{URL}kept/outputs/", {"path": "f7.txt"})
    assert b"".join(response.streaming_content) == b"x"
    assert owner_api.get(f"{URL}kept/outputs/", {"path": "../f7.txt"}).status_code == 400
    assert owner_api.get(f"{URL}kept/outputs/", {"path": "nope"}).status_code == 404


@RUNS
def test_outputs_over_the_bounds_are_said_on_the_job(owner_api, settings):
    settings.DOCKYARD_SNAPSHOT_MAX_FILES = 2
    name = submit(owner_api, command="for n in 1 2 3; do echo $n > outputs/f$n; done; ln -s /etc/passwd outputs/link")
    assert ended(owner_api, name)["status"] == "Completed"
    said = " ".join(messages(owner_api, name, "OutputsLeftOut"))
    assert "f3 and later files (more than 2 files)" in said and "1 links, special files" in said
    assert [row["path"] for row in owner_api.get(f"{URL}{name}/outputs/").json()] == ["f1", "f2"]
    assert messages(owner_api, name, "OutputsKept") == ["Kept 2 files (4 bytes) of ./outputs in storage."]
