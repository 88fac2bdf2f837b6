"""Fixtures of the CLI's tests: a token, a private config file, and `dockyard` logged in to the live server."""
from pathlib import Path

import pytest

from cli.tests.support import Cli
from workspaces.services import token_create


@pytest.fixture
def token(owner) -> str:
    return token_create(user=owner, name="cli")[1]


@pytest.fixture
def config_file(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "home" / "dockyard" / "config.yaml"
    monkeypatch.setenv("DOCKYARD_CONFIG", str(path))
    for name in ("DOCKYARD_URL", "DOCKYARD_TOKEN", "DOCKYARD_WORKSPACE", "DOCKYARD_COMPUTE"):
        monkeypatch.delenv(name, raising=False)
    return path


@pytest.fixture
def dockyard(live_server, workspace, token, config_file, monkeypatch) -> Cli:
    """Logged in through the environment, with team-a as the workspace."""
    monkeypatch.setenv("DOCKYARD_URL", live_server.url)
    monkeypatch.setenv("DOCKYARD_TOKEN", token)
    monkeypatch.setenv("DOCKYARD_WORKSPACE", workspace.name)
    return Cli(token)
