"""Benchmark: shipping a code folder (issue #12) against `tar -czf` and a plain recursive copy of the same folder.

Run:  DATABASE_URL=postgres://... .venv/bin/python bench/uploads.py [--files 10000] [--megabytes 200] [--rounds 3]
It generates a code folder (text files of source-like words, in folders of 100, one in 50 executable), creates a
throwaway database (test_<name>) and, per round, times through the real CLI code (cli.resources.uploads, over httpx
into Dockyard's WSGI application in this process: middleware, token, view, service, storage):
- the first submit: pack (hash every file, honour the ignore files), ask whether the snapshot is known (404), build
  the .tar.gz and POST it; the server reads and checks it, stores the blobs (a new workspace and an empty store each
  round, so every byte is really stored) and records the snapshot;
- the second submit of the same folder: pack again, the snapshot is known, nothing is sent;
- the server's resolve: the snapshot written out as a folder (what a local job gets) and streamed as the .tar.gz a
  pod fetches;
and, in the same rounds, `tar -czf` of the folder and `cp -r` of it. Goals (ratios of medians): first submit ÷ (tar +
copy) <= 2, second submit ÷ tar <= 0.5, written out ÷ copy <= 2, fetch stream ÷ tar <= 1.5.
"""
import argparse
import logging
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.support.bootstrap import bootstrap  # noqa: E402

bootstrap(database="postgres://postgres@127.0.0.1:5432/dockyard_bench")

import httpx  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.test.utils import override_settings  # noqa: E402

from assets import delivery  # noqa: E402
from assets.models import Snapshot  # noqa: E402
from bench.support.databases import throwaway_database  # noqa: E402
from bench.support.report import load, verdict  # noqa: E402
from bench.support.seeding import seed_workspace  # noqa: E402
from cli.client import ApiClient  # noqa: E402
from cli.config import Connection  # noqa: E402
from cli.resources.uploads import upload_local_path  # noqa: E402
from workspaces.services import workspace_create  # noqa: E402

GOALS = {"first": 2.0, "second": 0.5, "written": 2.0, "fetch": 1.5}
WORDS = ("def return import self value data model train loss batch for in if else while with as class "
         "numpy torch config path open read write print range len list dict args kwargs epoch").split()


class CountingTransport(httpx.WSGITransport):
    """The WSGI transport, noting each request's method and body size (what the CLI sent)."""

    def __init__(self, app):
        super().__init__(app=app)
        self.sent: list[tuple[str, int]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.read()
        self.sent.append((request.method, len(request.content)))
        return super().handle_request(request)


def generate(folder: Path, files: int, total_bytes: int) -> None:
    """`files` distinct text files adding up to about `total_bytes`, 100 a folder, one in 50 executable."""
    rng = random.Random(12)
    mean = max(1, total_bytes // files)
    pool = " ".join(rng.choices(WORDS, k=mean * 2 // 4 + 1024)).encode()
    while len(pool) < 2 * mean:
        pool += pool
    for number in range(files):
        path = folder / f"pkg{number // 100:03d}" / f"module_{number:05d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        size = rng.randint(mean // 2, mean + mean // 2)
        start = rng.randrange(0, len(pool) - size)
        path.write_bytes(f"# module {number}\n".encode() + pool[start:start + size])
        if number % 50 == 0:
            path.chmod(0o755)


def timed(action) -> tuple[float, object]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def run(command: list[str]) -> None:
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def one_round(number: int, folder: Path, scratch: Path, user, transport: CountingTransport, api: ApiClient) -> dict:
    """Each measurement once (baselines first in even rounds, last in odd ones); seconds by name."""
    seconds: dict[str, float] = {}

    def baselines():
        seconds["tar"] = timed(lambda: run(["tar", "-czf", str(scratch / f"tar-{number}.tgz"), "-C", str(folder), "."]))[0]
        seconds["copy"] = timed(lambda: run(["cp", "-r", str(folder), str(scratch / f"copy-{number}")]))[0]

    def dockyard():
        workspace = workspace_create(user=user, name=f"bench-{number}")
        store = {"BACKEND": "django.core.files.storage.FileSystemStorage",
                 "OPTIONS": {"location": str(scratch / f"store-{number}")}}
        with override_settings(STORAGES={"default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
                                         "artifacts": store}):
            transport.sent.clear()
            seconds["first"], reference = timed(lambda: upload_local_path(api, workspace.name, folder))
            first_sent = sum(size for _, size in transport.sent)
            transport.sent.clear()
            seconds["second"], again = timed(lambda: upload_local_path(api, workspace.name, folder))
            assert again == reference and [method for method, _ in transport.sent] == ["GET"], transport.sent
            snapshot = Snapshot.objects.get(workspace=workspace)
            seconds["written"] = timed(lambda: delivery.materialise(snapshot, scratch / f"written-{number}",
                                                                    1 << 30, 1 << 40))[0]
            seconds["fetch"] = timed(lambda: sum(len(chunk) for chunk in delivery.archive_stream(snapshot)))[0]
        seconds["first_sent"] = first_sent
        seconds["second_sent"] = sum(size for _, size in transport.sent)

    for part in ((baselines, dockyard) if number % 2 == 0 else (dockyard, baselines)):
        part()
    for leftover in scratch.iterdir():
        if leftover.name.endswith(f"-{number}") or leftover.name == f"tar-{number}.tgz":
            shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()
    return seconds


def report(rounds: list[dict], files: int, size: int) -> None:
    median = {name: statistics.median(r[name] for r in rounds) for name in rounds[0]}
    print(f"code folder: {files} files, {size / 1e6:.1f} MB; {len(rounds)} rounds; load average {load()}")
    for name, meaning in [("tar", "tar -czf of the folder"), ("copy", "cp -r of the folder"),
                          ("first", "first submit: pack + upload + stored"), ("second", "second submit: pack, known"),
                          ("written", "resolve: snapshot written out"), ("fetch", "resolve: the pod's .tar.gz stream")]:
        print(f"  {meaning:<40}: median {median[name]:7.2f} s   (rounds: "
              + ", ".join(f"{r[name]:.2f}" for r in rounds) + ")")
    print(f"  bytes sent: first submit {int(median['first_sent'])}, second submit {int(median['second_sent'])} "
          "(one GET: the snapshot is known)")
    ratios = {"first": median["first"] / (median["tar"] + median["copy"]), "second": median["second"] / median["tar"],
              "written": median["written"] / median["copy"], "fetch": median["fetch"] / median["tar"]}
    labels = {"first": "first submit ÷ (tar + copy)", "second": "second submit ÷ tar",
              "written": "resolve, written out ÷ copy", "fetch": "resolve, fetch stream ÷ tar"}
    for name, ratio in ratios.items():
        print(f"  ratio {labels[name]:<29}: {ratio:5.2f}x (goal <= {GOALS[name]}x) {verdict(ratio <= GOALS[name])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10000)
    parser.add_argument("--megabytes", type=float, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="dockyard-bench-uploads-") as temporary:
        scratch = Path(temporary)
        folder = scratch / "code"
        generate(folder, args.files, int(args.megabytes * 1e6))
        size = sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())
        with throwaway_database():
            user, _, token = seed_workspace()
            transport = CountingTransport(get_wsgi_application())  # (which configures logging again: quiet it after)
            logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
            logging.getLogger("django.request").setLevel(logging.ERROR)  # the first submit's 404 (not known yet)
            api = ApiClient(Connection(url="http://testserver", token=token), transport=transport)
            rounds = [one_round(number, folder, scratch, user, transport, api) for number in range(args.rounds)]
            api.close()
        report(rounds, args.files, size)


if __name__ == "__main__":
    main()
