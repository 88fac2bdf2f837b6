"""Azure ML's environment YAML → a validated, normalised environment spec (pure: no Django, no I/O).

Fields are Azure ML's (azure-ai-ml's EnvironmentSchema): name, version, image, conda_file, build, os_type,
inference_config, description, tags, properties. An environment runs an image: `image` alone, `image` with a
`conda_file` realised on top of it when a job starts, or `build` (a Docker context) when a builder is configured.
Every accepted field is acted on, refused by name with the reason, or listed in STORED_ONLY.
"""
import re
from collections.abc import Callable

from assets.specs.common import (
    COMMON,
    DATASTORE_REFUSED,
    common_fields,
    drop_read_only,
    finish,
    local_path,
    local_path_problem,
)
from assets.specs.conda import CondaFileError, check_conda_file
from controlplane.specs import SpecErrors, canonical_enum, limit_errors, string_map, unknown_fields

IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,1023}", re.ASCII)
FIELDS = COMMON | {"image", "conda_file", "build", "os_type", "inference_config", "properties"}
RESERVED_PREFIXES = ("azureml", "microsoft")
BUILD_FIELDS = {"path", "dockerfile_path"}
ROUTES = ("liveness_route", "readiness_route", "scoring_route")
BUILD_REFUSED = ("Docker builds are not configured here: give a ready `image` (optionally with a `conda_file` realised "
                 "on top of it when the job starts). An administrator can enable builds with a builder (BuildKit or "
                 "Kaniko run as a Kubernetes Job pushing to a configured registry).")
REFUSED = {
    "datastore": DATASTORE_REFUSED,
    "channels": "channels belongs in the conda file, not the environment YAML: put it under conda_file.",
    "dependencies": "dependencies belongs in the conda file, not the environment YAML: put it under conda_file.",
}
STORED_ONLY: dict[str, str] = {
    "properties": "Descriptive key/value pairs, kept and shown with the environment like tags; Dockyard reads none.",
    "inference_config": "Kept with the environment; a deployment whose environment has custom routes is refused until "
                        "custom container routes are supported (Dockyard runs Azure ML's inference server).",
}


def parse_environment(body: object, *, builder: bool = False,
                      read_conda_file: Callable[[str], object] | None = None) -> dict:
    """Validate an environment body; returns the normalised spec or raises SpecErrors.

    `builder` says a Docker builder is configured (else `build` is refused); `read_conda_file` reads a conda file named
    by a path relative to the YAML (the CLI's job: without it such a path is refused, as the server reads no files).
    """
    if not isinstance(body, dict):
        raise SpecErrors([("", "The body must be a mapping of environment fields (Azure ML environment YAML).")])
    errors: list[tuple[str, str]] = []
    body = drop_read_only(body)
    unknown_fields(body, FIELDS, errors, "'{key}' is not an environment field.", refused=REFUSED)
    spec = common_fields(body, errors, "environment")
    _reserved_name(spec["name"], errors)
    spec["image"] = _image(body.get("image"), errors)
    spec["conda_file"] = _conda_file(body.get("conda_file"), errors, read_conda_file)
    spec["build"] = _build(body.get("build"), builder, errors)
    spec["os_type"] = _os_type(body.get("os_type"), errors)
    spec["inference_config"] = _inference_config(body.get("inference_config"), errors)
    spec["properties"] = string_map(body.get("properties"), "properties", errors)
    _image_or_build(body, spec, errors)
    errors.extend(row for row in limit_errors(spec) if row not in errors)
    if errors:
        raise SpecErrors(errors)
    return finish(spec)


def _reserved_name(name: str | None, errors: list) -> None:
    """Azure ML keeps names starting AzureML or Microsoft for its curated environments."""
    if name and name.lower().startswith(RESERVED_PREFIXES):
        errors.append(("name", f"Names starting with AzureML or Microsoft are kept for Azure ML's curated environments "
                               f"(azureml:{name}@latest names one): choose another name."))


def _image(value: object, errors: list) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or not IMAGE.fullmatch(value):
        errors.append(("image", "image is an image reference such as python:3.11-slim or registry.example/team/app:1.2 "
                                "(no spaces, at most 1024 characters)."))
        return None
    return value


def _conda_file(value: object, errors: list, read: Callable[[str], object] | None) -> dict | None:
    """An inline conda file, or one read (by the caller's reader) from a path beside the YAML."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        if local_path(value, "conda_file", errors, "conda_file") is None:
            return None
        if read is None:
            errors.append(("conda_file", "conda_file names a file: the CLI sends its content (dockyard environment "
                                         "create -f reads it beside the YAML); send the conda file inline here."))
            return None
        value = read(value)
    try:
        return check_conda_file(value)
    except CondaFileError as exc:
        errors.extend(exc.errors)
        return None


def _build(value: object, builder: bool, errors: list) -> dict | None:
    if value is None:
        return None
    if not builder:
        errors.append(("build", BUILD_REFUSED))
        return None
    if not isinstance(value, dict):
        errors.append(("build", "build is a mapping with path (the Docker context) and dockerfile_path."))
        return None
    unknown_fields(value, BUILD_FIELDS, errors, "'{key}' is not a build field (path, dockerfile_path).", "build.")
    result = {"path": local_path(value.get("path"), "build.path", errors, "build.path")}
    dockerfile = value.get("dockerfile_path", "Dockerfile")
    problem = local_path_problem(dockerfile)
    if problem:
        errors.append(("build.dockerfile_path", f"build.dockerfile_path (inside the context): {problem}"))
    else:
        result["dockerfile_path"] = dockerfile
    return result


def _os_type(value: object, errors: list) -> str | None:
    if value is None:
        return None
    kind = canonical_enum(value, {"linux", "windows"})
    if kind == "windows":
        errors.append(("os_type", "Windows environments cannot run here: jobs and deployments run in Linux containers."))
    elif kind is None:
        errors.append(("os_type", "os_type is linux (or windows, which does not run here)."))
    return "linux" if kind == "linux" else None


def _inference_config(value: object, errors: list) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        errors.append(("inference_config", "inference_config is a mapping of liveness_route, readiness_route and "
                                           "scoring_route, each {port, path}."))
        return None
    unknown_fields(value, ROUTES, errors, "'{key}' is not an inference_config field.", "inference_config.")
    for route in ROUTES:
        _route(value.get(route), f"inference_config.{route}", errors)
    return dict(value)


def _route(value: object, path: str, errors: list) -> None:
    if not isinstance(value, dict):
        errors.append((path, f"{path} is required: {{port, path}}."))
        return
    unknown_fields(value, {"port", "path"}, errors, "'{key}' is not a route field (port, path).", f"{path}.")
    port = value.get("port")
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        errors.append((f"{path}.port", "port is a whole number from 1 to 65535."))
    if not isinstance(value.get("path"), str) or not value["path"].startswith("/"):
        errors.append((f"{path}.path", "path is a URL path starting with '/'."))


def _image_or_build(body: dict, spec: dict, errors: list) -> None:
    """Azure ML's rule: an environment has an image or a build context, not both; a conda file goes with an image."""
    if "build" in body and ("image" in body or "conda_file" in body):
        errors.append(("build", "build is an alternative to image and conda_file: give one or the other."))
    elif not body.get("image") and "build" not in body and not any(key == "image" for key, _ in errors):
        errors.append(("image", "image is required: the image the environment runs (a conda_file is realised on top of "
                                "it)."))

