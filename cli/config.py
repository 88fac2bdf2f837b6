"""Where the CLI finds its server, token and defaults (workspace, compute): flags, then environment, then the config file."""
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .errors import EXIT_USAGE, CliError, InvalidInput, NotLoggedIn

CONFIG_ENV = "DOCKYARD_CONFIG"
URL_ENV = "DOCKYARD_URL"
TOKEN_ENV = "DOCKYARD_TOKEN"
WORKSPACE_ENV = "DOCKYARD_WORKSPACE"
COMPUTE_ENV = "DOCKYARD_COMPUTE"
API_SUFFIX = "/api/v1"
DEFAULT_KEYS = ("workspace", "compute")


def config_path() -> Path:
    override = os.environ.get(CONFIG_ENV)
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "dockyard" / "config.yaml"


@dataclass
class Config:
    """The saved settings: server URL, API token and defaults such as the workspace."""

    url: str | None = None
    token: str | None = None
    defaults: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        data = {"url": self.url, "token": self.token, "defaults": self.defaults}
        return {key: value for key, value in data.items() if value}


def load_config(path: Path | None = None) -> Config:
    path = path or config_path()
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError:
        return Config()
    except (OSError, yaml.YAMLError) as exc:
        raise InvalidInput(f"Cannot read the config file {path}: {exc}", code="InvalidConfig") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"The config file {path} is not a YAML mapping.", code="InvalidConfig")
    defaults = data.get("defaults") if isinstance(data.get("defaults"), dict) else {}
    return Config(url=data.get("url"), token=data.get("token"), defaults=dict(defaults))


def save_config(config: Config, path: Path | None = None) -> Path:
    """Write the file readable by its owner only (it holds a token), replacing it atomically."""
    path = path or config_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".config-", suffix=".yaml")
    try:
        # mkstemp already creates the file 0600; the chmod keeps that true under unusual umasks too.
        os.chmod(temporary, 0o600)
        with os.fdopen(descriptor, "w") as stream:
            yaml.safe_dump(config.as_dict(), stream, sort_keys=False)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def normalise_url(url: str) -> str:
    """The server's base URL: no trailing slash, no /api/v1 (the client adds it)."""
    url = url.strip().rstrip("/")
    if url.endswith(API_SUFFIX):
        url = url[: -len(API_SUFFIX)]
    if not url.startswith(("http://", "https://")):
        raise InvalidInput(f"'{url}' is not an http:// or https:// URL.", target="url", exit_code=EXIT_USAGE)
    return url


@dataclass(frozen=True)
class Connection:
    """What a request needs: the base URL and the bearer token."""

    url: str
    token: str


def resolve_connection(config: Config) -> Connection:
    """The environment overrides the file; both URL and token are needed."""
    url = os.environ.get(URL_ENV) or config.url
    token = os.environ.get(TOKEN_ENV) or config.token
    if not url:
        raise NotLoggedIn("the server URL")
    if not token:
        raise NotLoggedIn("the token")
    return Connection(url=normalise_url(url), token=token)


def resolve_workspace(flag: str | None, config: Config) -> str:
    """-w beats DOCKYARD_WORKSPACE, which beats `configure --defaults workspace=...`."""
    workspace = flag or os.environ.get(WORKSPACE_ENV) or config.defaults.get("workspace")
    if not workspace:
        raise CliError(
            "No workspace given: pass -w/--workspace NAME, set DOCKYARD_WORKSPACE, "
            "or run `dockyard configure --defaults workspace=NAME`.",
            code="NoWorkspace",
            exit_code=EXIT_USAGE,
        )
    return workspace


def resolve_compute(flag: str | None, config: Config) -> str:
    """--compute beats DOCKYARD_COMPUTE, which beats `configure --defaults compute=...` (instance types live on one)."""
    compute = flag or os.environ.get(COMPUTE_ENV) or config.defaults.get("compute")
    if not compute:
        raise CliError(
            "No compute given: instance types belong to a kubernetes compute; pass --compute NAME, set DOCKYARD_COMPUTE, "
            "or run `dockyard configure --defaults compute=NAME`.",
            code="NoCompute",
            exit_code=EXIT_USAGE,
        )
    return compute
