"""DESIGN.md's dependency rules, checked on the import statements of the source tree."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APPS = ("controlplane", "workspaces", "compute", "frontend", "cli")


def imports_of(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the file's package
                package = path.parent.relative_to(ROOT).parts[: len(path.parent.relative_to(ROOT).parts) - node.level + 1]
                base = ".".join([*package, base] if base else package)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def source_files(*folders: str):
    for folder in folders:
        for path in (ROOT / folder).rglob("*.py"):
            if "tests" not in path.parts and "migrations" not in path.parts:
                yield path


def importers_of(prefix: str, *folders: str) -> set[str]:
    return {
        str(path.relative_to(ROOT))
        for path in source_files(*folders)
        if any(name == prefix or name.startswith(prefix + ".") for name in imports_of(path))
    }


def test_only_kube_imports_the_kubernetes_client():
    assert importers_of("kubernetes", *APPS) <= {"compute/kube.py"}


@pytest.mark.parametrize("module", ["compute.reconcile", "compute.kube"])
def test_only_tasks_call_reconcile_and_only_reconcile_calls_kube(module):
    allowed = {"compute.reconcile": "compute/tasks.py", "compute.kube": "compute/reconcile/"}[module]
    # the tasks module also catches kube's error classes to retry them
    outside = {path for path in importers_of(module, *APPS) if not path.startswith(allowed) and not path.startswith("compute/reconcile/")}
    assert outside <= ({"compute/tasks.py"} if module == "compute.kube" else set())


PURE = ["compute/vmsizes.py", "compute/capabilities.py", "compute/manifests.py", "compute/quantities.py"]
PURE_MODULES = {path.removesuffix(".py").replace("/", ".") for path in PURE}


@pytest.mark.parametrize("pure", PURE)
def test_pure_modules_import_nothing_of_django(pure):
    """Pure modules may use each other, never Django, DRF or the apps' other modules."""
    imported = {name for name in imports_of(ROOT / pure) if name.split(".")[0] in ("django", "rest_framework", *APPS[:-1])}
    assert not {name for name in imported if not any(name.startswith(module) for module in PURE_MODULES)}


def test_reconcile_knows_nothing_of_celery_drf_or_the_studio():
    banned = ("celery", "rest_framework", "frontend")
    for path in (ROOT / "compute/reconcile").glob("*.py"):
        assert not {name for name in imports_of(path) if name.split(".")[0] in banned}, path


def test_the_cli_talks_only_rest():
    banned = ("django", "rest_framework", "controlplane", "workspaces", "compute", "frontend")
    for path in source_files("cli"):
        assert not {name for name in imports_of(path) if name.split(".")[0] in banned}, path
