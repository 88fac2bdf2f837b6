"""`dockyard job download`'s saving: the log, and output files under a folder (never outside it, whatever the server
lists), each said on stderr as it is saved."""
from pathlib import Path

import click

from ..client import ApiClient
from ..context import State
from ..errors import ApiError, InvalidInput
from ..output import print_written
from .job import job_not_found_in_workspace, jobs_path


def job_name(name: str | None, name_option: str | None) -> str:
    if name and name_option and name != name_option:
        raise InvalidInput(f"Two job names were given ({name} and --name {name_option}): give one.",
                           target="--name", code="InvalidOption")
    if not (name or name_option):
        raise InvalidInput("Name the job: dockyard job download NAME (or --name NAME).", target="--name",
                           code="InvalidOption")
    return name or name_option


def save_log(state: State, name: str, target: Path) -> None:
    workspace, client = state.workspace, state.client()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        save_download(client, jobs_path(workspace, name, "logs"), {"download": "true"}, target)
    except ApiError as error:
        raise job_not_found_in_workspace(client, workspace, name, error) from None
    except OSError as exc:
        raise InvalidInput(f"Cannot write {target}: {exc.strerror or exc}", code="InvalidFile") from None
    saved = {"name": name, "path": str(target), "bytes": target.stat().st_size}
    print_written(saved, state.output, f"job/{name} log saved to {target} ({saved['bytes']} bytes)")


def save_download(client: ApiClient, path: str, params: dict, target: Path) -> None:
    """Stream a download into `target` through a .part file: a failed download leaves an existing file as it was."""
    partial = target.with_name(target.name + ".part")
    try:
        with partial.open("wb") as stream:
            client.download(path, params, stream.write)
        partial.replace(target)
    except OSError as exc:
        raise InvalidInput(f"Cannot write {target}: {exc.strerror or exc}", code="InvalidFile") from None
    finally:
        partial.unlink(missing_ok=True)


def download_outputs(state: State, name: str, folder: Path, output_name: str | None = None) -> None:
    """Every file of the job's outputs list (or of one declared output), saved at its path under `folder`."""
    workspace, client = state.workspace, state.client()
    outputs = jobs_path(workspace, name, "outputs")
    try:
        listed = _of_output(client.get(outputs).body, output_name, name)
        saved = []
        for row, inside in listed:
            target = output_target(folder, inside)
            target.parent.mkdir(parents=True, exist_ok=True)
            save_download(client, outputs, {"path": row["path"]}, target)
            saved.append({"path": row["path"], "file": str(target), "bytes": target.stat().st_size})
            click.echo(f"{row['path']} → {target} ({saved[-1]['bytes']} bytes)", err=True)
    except ApiError as error:
        raise job_not_found_in_workspace(client, workspace, name, error) from None
    except OSError as exc:
        raise InvalidInput(f"Cannot write under {folder}: {exc.strerror or exc}", code="InvalidFile") from None
    total = sum(row["bytes"] for row in saved)
    print_written({"name": name, "folder": str(folder), "files": saved}, state.output,
                  f"job/{name} outputs saved to {folder} ({len(saved)} files, {total} bytes)")


def _of_output(listed: object, output_name: str | None, job: str) -> list[tuple[dict, object]]:
    """(row, path under the folder) for the files to save: all of them, or one declared output's (its own path
    inside it; a uri_file output is its one file, saved under its name)."""
    rows = [row for row in listed if isinstance(row, dict)] if isinstance(listed, list) else []
    if output_name in (None, "default"):
        return [(row, row.get("path")) for row in rows]
    chosen = [(row, _inside(row.get("path"), output_name)) for row in rows if row.get("output") == output_name]
    if not chosen:
        raise InvalidInput(f"Job '{job}' has no files in an output named {output_name!r}.", target="--output-name",
                           code="NotFound")
    return chosen


def _inside(path: object, output_name: str) -> object:
    if not isinstance(path, str) or path == output_name:
        return path
    return path.removeprefix(output_name + "/")


def output_target(folder: Path, path: object) -> Path:
    """Where one listed file goes: under `folder`, never outside it whatever the server answered."""
    parts = path.split("/") if isinstance(path, str) else []
    if not parts or any(part in ("", ".", "..") or "\\" in part or "\0" in part for part in parts):
        raise InvalidInput(f"The server listed an output path that is not a plain relative path: {path!r}.",
                           code="InvalidResponse")
    return folder.joinpath(*parts)
