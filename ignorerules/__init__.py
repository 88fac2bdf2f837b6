"""Which files of a code folder stay behind, as Azure ML reads them: each folder's `.amlignore`, or without one its
`.gitignore`, in gitignore syntax, a deeper folder's file overriding its parents' for the paths below it.

Shared by the CLI (what it packs) and the server (what a local job copies from a shared folder); pure, so the CLI
may import it: the gitignore patterns themselves are compiled by what the caller hands in (pathspec's
`GitIgnoreSpec.from_lines`, whose `check_file(path).include` is True, False or None when no pattern matches).
"""
from collections.abc import Callable, Iterable
from typing import Any, Protocol

IGNORE_FILES = (".amlignore", ".gitignore")  # the first one a folder has is the one used (Azure ML's order)
MAX_IGNORE_FILE = 64 * 1024  # bytes of an ignore file read; the rest is not


class Patterns(Protocol):
    def check_file(self, path: str) -> Any: ...


Rules = list[tuple[str, Patterns]]  # (the folder's path with a trailing "/", or "" at the top; its patterns)


def folder_rules(names: Iterable[str], relative: str, read: Callable[[str], bytes | None],
                 compile_lines: Callable[[list[str]], Patterns]) -> Rules:
    """A folder's own rules: from `.amlignore` when it holds one, else `.gitignore` (`names` are what it holds).

    `relative` is the folder's path ("" at the top); `read(name)` gives the ignore file's first MAX_IGNORE_FILE bytes,
    or None when it is not a regular file one may read (then the folder has no rules of its own).
    """
    present = set(names)
    name = next((name for name in IGNORE_FILES if name in present), None)
    head = None if name is None else read(name)
    if head is None:
        return []
    text = head[:MAX_IGNORE_FILE].decode("utf-8", errors="replace")  # bytes that are not UTF-8 never refuse a folder
    return [(f"{relative}/" if relative else "", compile_lines(text.splitlines()))]


def ignored(rules: Rules, path: str) -> bool:
    """Whether `path` (a folder's with a trailing "/") stays behind: the last rule that matches it decides."""
    result = False
    for base, patterns in rules:
        if path.startswith(base):
            verdict = patterns.check_file(path[len(base):]).include
            if verdict is not None:
                result = verdict
    return result
