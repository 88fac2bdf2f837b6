"""Which files of a folder its ignore files leave behind, by the rules the CLI packs `code: ./src` with (Azure ML's):
each folder's `.amlignore`, or without one its `.gitignore`, in gitignore syntax, a deeper folder's file overriding
its parents' (the last rule that matches decides), and nothing under a folder that is left out.

The studio sends a folder the browser picked: the browser lists its paths and reads its ignore files, this module
answers which paths to pack, so the ignore rules are read by one library (pathspec) on the server, as the CLI does.
"""
from functools import cache

import pathspec

IGNORE_FILES = (".amlignore", ".gitignore")  # the first one a folder has is the one used (Azure ML's order)
MAX_IGNORE_FILE = 64 * 1024


def kept(paths: list[str], ignore_texts: dict[str, str]) -> list[bool]:
    """For each path (relative, `/` between parts), whether it is sent; `ignore_texts` holds the ignore files' text."""

    @cache
    def rules(folder: str) -> tuple:
        inherited = rules(_parent(folder)) if folder else ()
        for name in IGNORE_FILES:
            text = ignore_texts.get(_joined(folder, name))
            if text is not None:
                lines = text[:MAX_IGNORE_FILE].splitlines()
                return (*inherited, (f"{folder}/" if folder else "", pathspec.GitIgnoreSpec.from_lines(lines)))
        return inherited

    @cache
    def folder_left(folder: str) -> bool:
        if not folder:
            return False
        parent = _parent(folder)
        return folder_left(parent) or _ignored(rules(parent), folder + "/")

    return [not folder_left(_parent(path)) and not _ignored(rules(_parent(path)), path) for path in paths]


def _parent(path: str) -> str:
    return path.rpartition("/")[0]


def _joined(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _ignored(rules: tuple, path: str) -> bool:
    ignored = False
    for base, spec in rules:
        if path.startswith(base):
            result = spec.check_file(path[len(base):]).include
            if result is not None:
                ignored = result
    return ignored
