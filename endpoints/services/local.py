"""What a local deployment needs of the Dockyard host (its files, absolute paths the sandbox may show), and whether a
model is an MLflow model (its folder on this host holds an `MLmodel` file)."""
from pathlib import Path

from assets.specs.snapshots import upload_sha256
from compute.runners import sandbox

from ..model_spec import is_stored


def host_has(path: Path, check: str = "exists") -> bool:
    """Path.exists/is_dir/is_file, False for a path this host cannot even look up (a name too long, say)."""
    try:
        return getattr(path, check)()
    except OSError:
        return False


def is_mlflow(spec: dict) -> bool:
    model = spec.get("model") or {}
    if model.get("type") == "mlflow_model":
        return True
    path = Path(model.get("path", "")) if model.get("path") else None
    return bool(path and host_has(path, "is_dir") and host_has(path / "MLmodel", "is_file"))


def local_problems(spec: dict) -> list[tuple[str, str]]:
    """A local deployment's files are on this host: say now if they are not there."""
    errors = []
    if spec["instance_count"] != 1:
        errors.append(("instance_count", "A local deployment is one server process: instance_count must be 1."))
    if spec["scale_settings"]["type"] != "default":
        errors.append(("scale_settings.type", "A local deployment does not autoscale: use scale_settings.type default."))
    code = spec.get("code_configuration")
    code = code if code and not upload_sha256(code["code"]) else None  # an upload was checked with the others
    model = spec.get("model") if not is_stored(spec.get("model")) else None  # a snapshot was checked with the others
    # The API and the worker may run in different folders: a relative path would mean two different places.
    for path, value in (("code_configuration.code", code and code["code"]), ("model.path", model and model["path"])):
        if value and not Path(value).is_absolute():
            errors.append((path, f"Give an absolute path on the Dockyard host (not {value!r})."))
    if errors:
        return errors
    # Only what this server shares with local deployments is shown to their sandbox (never Dockyard's own files).
    for path, value, what in (("code_configuration.code", code and code["code"], "code folder"),
                              ("model.path", model and model["path"], "model path")):
        try:
            value and sandbox.local_path_bind(value, what)
        except sandbox.Refused as exc:
            errors.append((path, str(exc)))
    if errors:
        return errors
    if code:
        folder = Path(code["code"])
        if not host_has(folder, "is_dir"):
            errors.append(("code_configuration.code", f"The code folder {folder} does not exist on the Dockyard host."))
        elif not host_has(folder / code["scoring_script"], "is_file"):
            errors.append(("code_configuration.scoring_script", f"There is no {code['scoring_script']} in {folder}."))
    if model and not host_has(Path(model["path"])):
        errors.append(("model.path", f"The model path {model['path']} does not exist on the Dockyard host."))
    return errors
