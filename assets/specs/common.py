"""What the environment, model and data parsers share: Azure ML's asset name and version rules, safe local paths, and
the fields every asset has (pure: no Django, no I/O).

Azure ML's facts (azure-ai-ml's asset schemas and operation orchestrator; the REST API's asset containers):
- A name is case-sensitive text; the curated names (`AzureML-sklearn-1.5`) show that '.' belongs with letters, digits,
  '-' and '_'. Dockyard takes 1-255 of those, starting with a letter or digit (ASCII only: a look-alike letter from
  another script would make two names that read the same).
- A version is a string; the YAML loader turns a number into its text (`version: 1` is "1"). Azure ML's dataset
  service refuses versions longer than 30 characters; Dockyard applies that to every asset. `latest` is refused as a
  version: it is the label `@latest`, and `azureml:name:latest` then reads as that label.
- With no version the service picks the next one (auto-increment); `name` is required for a named asset.
"""
import re

from controlplane.specs import scalar_text, string_map

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}", re.ASCII)
VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,29}", re.ASCII)
LATEST = "latest"
MAX_PATH = 4096
NAME_RULE = "1-255 letters, digits, '.', '-' or '_', starting with a letter or digit"
VERSION_RULE = "1-30 letters, digits, '.', '-' or '_', starting with a letter or digit"
TAG_HINT = " (a tag name is text)"
URL_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
# Fields of `az ml <asset> show -o yaml` that Azure ML writes, not the user: accepted and dropped so a shown asset
# can be created again unchanged.
READ_ONLY = frozenset({"id", "creation_context", "latest_version", "auto_delete_setting"})
COMMON = frozenset({"$schema", "name", "version", "description", "tags"})
UPLOADS = re.compile(r"azureml://uploads/([0-9a-f]{64})/?", re.ASCII)
DATASTORE_REFUSED = ("There are no datastores here: assets are kept in Dockyard's own storage; leave datastore out.")


def is_name(value: object) -> bool:
    """True for a valid asset name (and for nothing that is not text)."""
    return isinstance(value, str) and NAME.fullmatch(value) is not None


def is_version(value: object) -> bool:
    """True for a valid asset version written as text."""
    return isinstance(value, str) and VERSION.fullmatch(value) is not None and value != LATEST


def asset_name(value: object, errors: list, kind: str) -> str | None:
    """The asset's name (required)."""
    if value is None or value == "":
        errors.append(("name", f"name is required: the {kind}'s name ({NAME_RULE})."))
        return None
    if not is_name(value):
        errors.append(("name", f"{_shown(value)} is not a valid {kind} name: use {NAME_RULE}."))
        return None
    return value


def asset_version(value: object, errors: list) -> str | None:
    """The version as text, or None when absent (the service then takes the next one)."""
    if value is None or value == "":
        return None
    text = None if isinstance(value, bool) else scalar_text(value)
    if isinstance(value, float) and text is not None and not re.fullmatch(r"[0-9.]+", text):
        text = None  # .nan, .inf, 1e+30: not what anyone typed as a version
    if text == LATEST:
        errors.append(("version", "'latest' is a label (azureml:<name>@latest), not a version: give another version or "
                                  "leave version out."))
        return None
    if text is None or not is_version(text):
        errors.append(("version", f"{_shown(value)} is not a valid version: use {VERSION_RULE}."))
        return None
    return text


def text_field(body: dict, key: str, errors: list) -> str:
    """A free-text field ('' when absent); its length is checked with the spec's other limits."""
    value = body.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        errors.append((key, f"{key} must be text."))
        return ""
    return value


def common_fields(body: dict, errors: list, kind: str) -> dict:
    """name, version, description and tags: what every asset has."""
    return {
        "name": asset_name(body.get("name"), errors, kind),
        "version": asset_version(body.get("version"), errors),
        "description": text_field(body, "description", errors),
        "tags": string_map(body.get("tags"), "tags", errors, key_hint=TAG_HINT),
    }


def uploaded_path(value: object) -> dict | None:
    """`azureml://uploads/<sha256>` (what uploads/ answers) → {'upload': sha256}; None for anything else."""
    match = UPLOADS.fullmatch(value) if isinstance(value, str) else None
    return {"upload": match.group(1)} if match else None


def local_path(value: object, path: str, errors: list, what: str) -> str | None:
    """A path relative to the YAML file's folder that stays inside it; None (and an error) otherwise."""
    problem = local_path_problem(value)
    if problem:
        errors.append((path, f"{what}: {problem}"))
        return None
    return _normalised(value)


def local_path_problem(value: object) -> str | None:
    """Why `value` is not a relative path inside the YAML file's folder, or None when it is one."""
    if not isinstance(value, str) or not value.strip():
        return "give a path relative to the YAML file's folder."
    if len(value) > MAX_PATH:
        return f"a path has at most {MAX_PATH} characters."
    if any(ord(char) < 32 or ord(char) == 127 for char in value):
        return "control characters (NUL, newlines, escapes) are not accepted in a path."
    if value.startswith(("/", "\\", "~")) or re.match(r"[A-Za-z]:", value):
        return f"{_shown(value)} is absolute: give a path relative to the YAML file's folder."
    if ".." in re.split(r"[/\\]", value):
        return f"{_shown(value)} leaves the YAML file's folder ('..'): give a path inside it."
    return None


def _normalised(value: str) -> str:
    """'./src//train/' → 'src/train/': one spelling per path (a trailing '/' is kept: it says 'folder')."""
    parts = [part for part in value.replace("\\", "/").split("/") if part not in ("", ".")]
    text = "/".join(parts) or "."
    return f"{text}/" if value.endswith(("/", "\\")) and parts else text


def drop_read_only(body: dict) -> dict:
    """The body without the fields Azure ML writes itself."""
    return {key: value for key, value in body.items() if key not in READ_ONLY}


def finish(spec: dict) -> dict:
    """The spec as stored: empty optional fields left out, `name` and `version` always present."""
    return {key: value for key, value in spec.items() if value not in (None, "", {}) or key in ("name", "version")}


def _shown(value: object) -> str:
    """A value quoted for a message, cut short and with its odd characters escaped."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "…"
