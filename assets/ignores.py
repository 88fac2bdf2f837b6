"""Which files of a folder the browser picked are sent, by the rules the CLI packs `code: ./src` with (ignorerules:
each folder's `.amlignore`, or without one its `.gitignore`, a deeper folder's overriding its parents', and nothing
under a folder that is left out).

The browser lists the folder's paths and reads its ignore files; this module answers which paths to pack, so the
ignore rules are read by one library (pathspec) on the server, as the CLI and a local job's copy read them.
"""
from functools import cache

import pathspec

import ignorerules


def kept(paths: list[str], ignore_texts: dict[str, str]) -> list[bool]:
    """For each path (relative, `/` between parts), whether it is sent; `ignore_texts` holds the ignore files' text."""

    @cache
    def rules(folder: str) -> tuple:
        inherited = rules(_parent(folder)) if folder else ()
        names = [name for name in ignorerules.IGNORE_FILES if _joined(folder, name) in ignore_texts]
        own = ignorerules.folder_rules(names, folder, lambda name: ignore_texts[_joined(folder, name)].encode(),
                                       pathspec.GitIgnoreSpec.from_lines)
        return (*inherited, *own)

    @cache
    def folder_left(folder: str) -> bool:
        if not folder:
            return False
        parent = _parent(folder)
        return folder_left(parent) or ignorerules.ignored(list(rules(parent)), folder + "/")

    return [not folder_left(_parent(path)) and not ignorerules.ignored(list(rules(_parent(path))), path) for path in paths]


def _parent(path: str) -> str:
    return path.rpartition("/")[0]


def _joined(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name
