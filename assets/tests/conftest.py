"""Artifact storage for the assets tests: a folder of the test's own, or a bucket on a real S3-compatible server.

The S3 server is moto's standalone server, started once per test process on loopback and spoken to over HTTP by
django-storages and boto3 exactly as a production store would be (no mocked client).
"""
import socket
import subprocess
import sys
import time
import uuid

import boto3
import httpx
import pytest
from django.core.files.storage import storages

S3_KEYS = {"access_key": "dockyard-test", "secret_key": "dockyard-test-secret", "region_name": "us-east-1"}
STORES = ["filesystem", "s3"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def s3_server():
    """moto's S3-compatible server on a free loopback port, for the whole test process; its URL."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(f"{url}/moto-api/", timeout=1)
            break
        except httpx.HTTPError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise RuntimeError("moto's S3 server did not start") from None
            time.sleep(0.1)
    yield url
    server.terminate()
    server.wait(timeout=10)


def s3_bucket(url: str) -> str:
    """A new, empty bucket on the server."""
    name = f"artifacts-{uuid.uuid4().hex[:12]}"
    client = boto3.client("s3", endpoint_url=url, aws_access_key_id=S3_KEYS["access_key"],
                          aws_secret_access_key=S3_KEYS["secret_key"], region_name=S3_KEYS["region_name"])
    client.create_bucket(Bucket=name)
    return name


@pytest.fixture(params=STORES)
def store(request, settings, tmp_path):
    """The "artifacts" storage as each kind of install has it: "filesystem" (embedded) or "s3" (production)."""
    if request.param == "filesystem":
        backend = {"BACKEND": "django.core.files.storage.FileSystemStorage",
                   "OPTIONS": {"location": str(tmp_path / "artifacts"), "file_permissions_mode": 0o600,
                               "directory_permissions_mode": 0o700}}
    else:
        url = request.getfixturevalue("s3_server")
        backend = {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": {
            "bucket_name": s3_bucket(url), "endpoint_url": url, "addressing_style": "path", "default_acl": None,
            "file_overwrite": True, **S3_KEYS}}
    settings.STORAGES = {**settings.STORAGES, "artifacts": backend}
    return request.param


@pytest.fixture
def own_store(settings, tmp_path):
    """A storage folder of this test's own, so "nothing stored" means exactly that."""
    settings.STORAGES = {**settings.STORAGES, "artifacts": {
        "BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(tmp_path / "store")}}}


def stored_keys(folder: str = "") -> set[str]:
    """Every key in the artifacts storage (both backends list folders the same way)."""
    storage = storages["artifacts"]
    try:
        folders, files = storage.listdir(folder)
    except FileNotFoundError:
        return set()
    keys = {f"{folder}{name}" for name in files}
    for name in folders:
        keys |= stored_keys(f"{folder}{name}/")
    return keys
