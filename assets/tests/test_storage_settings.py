"""The environment chooses the artifact store: a folder under var/ by default, an S3 bucket when one is named."""
import os
import subprocess
import sys
from pathlib import Path

import boto3

from assets.tests.conftest import S3_KEYS, s3_bucket

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import django
django.setup()
from django.core.files.base import ContentFile
from django.core.files.storage import storages
store = storages["artifacts"]
print(type(store).__name__, store.save("probe/hello", ContentFile(b"hello")))
"""


def run_probe(tmp_path, **env) -> str:
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "controlplane.settings", "DOCKYARD_VAR_DIR": str(tmp_path), **env}
    result = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=environment, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def test_the_default_store_is_a_folder_under_var(tmp_path):
    assert run_probe(tmp_path) == "FileSystemStorage probe/hello"
    stored = tmp_path / "artifacts" / "probe" / "hello"
    assert stored.read_bytes() == b"hello"
    assert stored.stat().st_mode & 0o777 == 0o600  # only Dockyard's own user reads artifacts


def test_a_bucket_in_the_environment_selects_s3(tmp_path, s3_server):
    bucket = s3_bucket(s3_server)
    answer = run_probe(tmp_path, DOCKYARD_ARTIFACT_S3_BUCKET=bucket, DOCKYARD_ARTIFACT_S3_ENDPOINT_URL=s3_server,
                       DOCKYARD_ARTIFACT_S3_REGION=S3_KEYS["region_name"], DOCKYARD_ARTIFACT_S3_PREFIX="dockyard",
                       DOCKYARD_ARTIFACT_S3_ACCESS_KEY_ID=S3_KEYS["access_key"],
                       DOCKYARD_ARTIFACT_S3_SECRET_ACCESS_KEY=S3_KEYS["secret_key"])
    assert answer == "S3Storage probe/hello"
    client = boto3.client("s3", endpoint_url=s3_server, aws_access_key_id=S3_KEYS["access_key"],
                          aws_secret_access_key=S3_KEYS["secret_key"], region_name=S3_KEYS["region_name"])
    assert client.get_object(Bucket=bucket, Key="dockyard/probe/hello")["Body"].read() == b"hello"
    assert not (tmp_path / "artifacts").exists()
