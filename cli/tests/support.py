"""What the CLI's tests share: running `dockyard` in-process, and writing YAML files."""
import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from cli.main import cli
from tests.fake_kube.server import ADMIN_TOKEN, RESTRICTED_TOKEN

KUBE_SECRET = "kube-bearer-token-must-never-be-printed"
# Secrets that appear in the tests' files and must never reach the CLI's output.
SECRETS = (KUBE_SECRET, "never-printed", ADMIN_TOKEN, RESTRICTED_TOKEN)


class Cli:
    """Runs `dockyard ...` in-process and checks that no secret ever reaches the output."""

    def __init__(self, token: str):
        self.token = token

    def __call__(self, *args: str, input: str | None = None):
        result = CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)
        for secret in (self.token, *SECRETS):
            assert secret not in result.stdout and secret not in result.stderr
        return result

    def json(self, *args: str):
        result = self(*args, "-o", "json")
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)


def write_yaml(path: Path, *documents: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return path
