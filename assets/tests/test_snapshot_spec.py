"""The path rules and the canonical manifest (pure: table tests)."""
import ast
from pathlib import Path

import pytest

from assets.specs import snapshots as spec

LIMITS = spec.Limits(max_files=10, max_total_bytes=100, max_depth=4, max_path_chars=40)
SHA = "a" * 64


@pytest.mark.parametrize("path", ["a.py", "src/train.py", "a/b/c/d.txt", ".amlignore", "..hidden", "a..b", "é/ü.py",
                                  "with space.txt", "C/x", "x" * 40])
def test_paths_that_stay_in_the_folder(path):
    assert spec.path_problem(path, LIMITS) is None


@pytest.mark.parametrize("path, says", [
    ("", "non-empty"), (None, "non-empty"), (7, "non-empty"),
    ("x" * 41, "at most 40 characters"),
    ("a\x00b", "control"), ("a\tb", "control"), ("a\x7fb", "control"),
    ("a\\b", "backslash"), ("..\\x", "backslash"),
    ("a\ud800", "Unicode"),
    ("/etc/passwd", "root"), ("C:/x", "drive"), ("c:x", "drive"),
    ("..", "go up"), ("a/../b", "go up"), ("./a", "go up"), ("a/./b", "go up"), ("a//b", "empty"), ("a/", "end with"),
    ("a/b/c/d/e", "at most 4 parts"),
    ("é" * 128, "bytes"),
])
def test_paths_refused(path, says):
    limits = spec.Limits(max_files=10, max_total_bytes=100, max_depth=4, max_path_chars=400)
    problem = spec.path_problem(path, limits if says == "bytes" else LIMITS)
    assert problem and says in problem, problem


def test_duplicates_and_file_folder_clashes_are_named_at_their_index():
    entries = [spec.Entry("a", SHA, 0o644), spec.Entry("b/c", SHA, 0o644), spec.Entry("b/c", SHA, 0o644),
               spec.Entry("a/x", SHA, 0o644), spec.Entry("d", "A" * 64, 0o644)]
    problems = spec.entries_problems(entries, LIMITS)
    assert [(index, name) for index, name, _ in problems] == [(2, "path"), (3, "path"), (4, "sha256")]


@pytest.mark.parametrize("mode, kept", [(0o644, 0o644), (0o600, 0o644), (0o777, 0o755), (0o4755, 0o755), (0o100, 0o755), (0, 0o644)])
def test_modes_are_kept_as_git_keeps_them(mode, kept):
    assert spec.file_mode(mode) == kept


def test_the_snapshot_id_is_the_hash_of_the_sorted_compact_manifest():
    one = [spec.Entry("b.py", SHA, 0o644), spec.Entry("a.py", SHA, 0o755)]
    assert spec.canonical(one) == f'[["a.py","{SHA}",493],["b.py","{SHA}",420]]'.encode()
    assert spec.snapshot_id(one) == spec.snapshot_id(list(reversed(one)))
    assert spec.snapshot_id(one) != spec.snapshot_id([spec.Entry("b.py", SHA, 0o755), spec.Entry("a.py", SHA, 0o755)])


def test_spec_is_pure():
    """The CLI and the archive reader use the same rules: the module imports the standard library only."""
    tree = ast.parse((Path(spec.__file__)).read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported <= {"hashlib", "json", "re", "dataclasses"}
