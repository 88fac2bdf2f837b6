"""docker-compose.yml cannot run here (no Docker engine): check that it parses and that what it runs exists."""
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
APP_SERVICES = ["migrate", "web", "worker", "beat"]


def test_compose_has_the_single_host_services():
    assert {"postgres", "redis", "migrate", "web", "worker", "beat"} <= set(SERVICES)
    assert {"postgres-data", "dockyard-data"} <= set(COMPOSE["volumes"])


@pytest.mark.parametrize("name", APP_SERVICES)
def test_app_services_build_the_project_image_in_production_mode(name):
    service = SERVICES[name]
    assert (ROOT / service["build"]["dockerfile"]).is_file()
    assert service["environment"]["DOCKYARD_MODE"] == "production"
    assert service["environment"]["DATABASE_URL"].startswith("postgres://")
    assert service["environment"]["CELERY_BROKER_URL"].startswith("redis://")


def _loads(dotted: str):
    module, _, name = dotted.replace(":", ".").rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_web_is_gunicorn_with_uvicorn_workers_after_migrations():
    web = SERVICES["web"]
    command = web["command"]
    assert command[0] == "gunicorn" and "runserver" not in command
    # ASGI, so a followed log holds no worker thread (tests/test_streams.py runs this very command)
    assert command[1] == "controlplane.asgi:application" and _loads(command[1]) is not None
    assert command[command.index("-k") + 1] == "uvicorn_worker.UvicornWorker"
    assert _loads("uvicorn_worker.UvicornWorker") is not None
    assert web["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert SERVICES["migrate"]["command"][-2:] == ["migrate", "--noinput"]


def test_the_image_serves_what_compose_serves():
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text()
    cmd = json.loads(next(line for line in dockerfile.splitlines() if line.startswith("CMD "))[4:])
    assert cmd == SERVICES["web"]["command"]


@pytest.mark.parametrize("name", ["worker", "beat"])
def test_celery_services_point_at_the_project_app(name):
    command = SERVICES[name]["command"]
    assert command[:3] == ["celery", "-A", "controlplane"] and command[3] == name
    assert importlib.import_module("controlplane").celery_app.main == "controlplane"


@pytest.mark.parametrize("program", ["gunicorn", "celery"])
def test_programs_the_compose_file_runs_are_installed(program):
    assert shutil.which(program, path=str(Path(sys.executable).parent)), program


def test_every_variable_the_compose_file_passes_is_read_by_settings():
    settings_source = (ROOT / "controlplane" / "settings.py").read_text()
    for name in SERVICES["web"]["environment"]:
        assert f'"{name}"' in settings_source, name


def test_production_mode_refuses_development_secrets():
    env = {**os.environ, "DOCKYARD_MODE": "production", "SECRET_KEY": "", "FIELD_ENCRYPTION_KEYS": ""}
    result = subprocess.run(
        [sys.executable, "-c", "import controlplane.settings"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode != 0 and "SECRET_KEY must be set in production mode" in result.stderr


def test_production_mode_turns_off_debug_and_local_compute():
    env = {
        **os.environ, "DOCKYARD_MODE": "production", "SECRET_KEY": "x" * 50, "DEBUG": "",
        "FIELD_ENCRYPTION_KEYS": "cHJvZHVjdGlvbi10ZXN0LWtleS1wcm9kdWN0aW9uLTAx", "DOCKYARD_LOCAL_COMPUTE": "",
    }
    code = "import controlplane.settings as s; print(s.DEBUG, s.DOCKYARD_LOCAL_COMPUTE, s.SESSION_COOKIE_SECURE)"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.stdout.split() == ["False", "False", "True"], result.stderr


ARTIFACT_SETTINGS = ["DOCKYARD_ARTIFACT_S3_BUCKET", "DOCKYARD_ARTIFACT_S3_ENDPOINT_URL", "DOCKYARD_ARTIFACT_S3_REGION",
                     "DOCKYARD_ARTIFACT_S3_ACCESS_KEY_ID", "DOCKYARD_ARTIFACT_S3_SECRET_ACCESS_KEY",
                     "DOCKYARD_ARTIFACT_S3_PREFIX", "DOCKYARD_ARTIFACT_S3_ADDRESSING_STYLE", "DOCKYARD_EXTERNAL_URL",
                     "DOCKYARD_ARTIFACT_URL_SECONDS", "DOCKYARD_FETCH_IMAGE", "DOCKYARD_UPLOAD_ABANDON_SECONDS",
                     "DOCKYARD_ARTIFACT_GRACE_SECONDS", "DOCKYARD_ARTIFACT_COLLECT_SECONDS"]
COMPOSE_TEXT = (ROOT / "docker-compose.yml").read_text()


def test_the_artifact_settings_settings_py_reads_are_all_passed():
    settings_source = (ROOT / "controlplane" / "settings.py").read_text()
    read = set(re.findall(r'os\.environ\.get\("(DOCKYARD_(?:ARTIFACT_S3_\w+|EXTERNAL_URL|FETCH_IMAGE))"', settings_source))
    assert read and read <= set(SERVICES["web"]["environment"]), read - set(SERVICES["web"]["environment"])
    assert set(ARTIFACT_SETTINGS) <= set(SERVICES["web"]["environment"])


def test_the_external_url_is_required_and_every_artifact_setting_is_explained():
    assert re.search(r"DOCKYARD_EXTERNAL_URL: \$\{DOCKYARD_EXTERNAL_URL:\?", COMPOSE_TEXT)
    block = COMPOSE_TEXT[COMPOSE_TEXT.index("# Artifacts"):COMPOSE_TEXT.index("services:")]
    assert all(name in block for name in ARTIFACT_SETTINGS)
    assert "DOCKYARD_EXTERNAL_URL=" in (ROOT / "deploy" / "env.example").read_text()


def test_the_compose_defaults_are_the_settings_defaults():
    """An empty or unset variable gives what settings.py gives without it (no second default that drifts)."""
    defaults = dict(re.findall(r"\$\{(DOCKYARD_ARTIFACT_\w+|DOCKYARD_FETCH_IMAGE|DOCKYARD_UPLOAD_\w+):-([^}]*)\}",
                               COMPOSE_TEXT))
    # the S3 options are read straight from the environment into the storage's options, "" meaning unset
    read_raw = {name for name in defaults if name.startswith("DOCKYARD_ARTIFACT_S3_") and name != "DOCKYARD_ARTIFACT_S3_BUCKET"}
    assert all(defaults[name] == "" for name in read_raw)
    names = sorted(set(defaults) - read_raw)
    env = {name: value for name, value in os.environ.items() if name not in defaults}
    code = f"import json, controlplane.settings as s; print(json.dumps({{n: str(getattr(s, n)) for n in {names!r}}}))"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {name: defaults[name] for name in names}
