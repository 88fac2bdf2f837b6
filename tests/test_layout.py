"""DESIGN.md's dependency rules, checked on the import statements of the source tree."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APPS = ("controlplane", "workspaces", "compute", "jobs", "frontend", "cli")  # the CLI stays last (see PURE below)


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
    assert importers_of("kubernetes", *APPS) <= {"controlplane/kube/client.py"}


def test_kube_names_imports_only_the_standard_library():
    """One copy of the DNS/label rules, usable from specs, serializers and the fake alike: no Django, no client."""
    assert imports_of(ROOT / "controlplane/kube/names.py") == {"re"}


def test_kube_knows_kubernetes_not_our_apps():
    """controlplane.kube takes connection data and plain dicts: it imports no app."""
    apps = ("workspaces", "compute", "jobs", "endpoints", "frontend", "cli")
    for path in source_files("controlplane/kube"):
        assert not {name for name in imports_of(path) if name.split(".")[0] in apps}, path


# module -> the files (or folders) that may import it
ALLOWED_IMPORTERS = {
    # jobs' reconcile borrows the compute connection helpers (see the next test), nothing else of compute's reconcile
    "compute.reconcile": ("compute/tasks.py", "compute/reconcile/", "jobs/reconcile/"),
    "jobs.reconcile": ("jobs/tasks.py", "jobs/reconcile/"),
    # the tasks modules (and the locked run they share) also catch kube's error classes to retry them
    "controlplane.kube.client": ("compute/reconcile/", "jobs/reconcile/", "compute/tasks.py", "jobs/tasks.py",
                                 "controlplane/reconciling.py"),
}


@pytest.mark.parametrize("module", list(ALLOWED_IMPORTERS))
def test_only_tasks_call_reconcile_and_only_reconcile_calls_kube(module):
    importers = importers_of(module, *APPS)
    assert importers, module  # the rule is about something that exists
    assert {path for path in importers if not path.startswith(ALLOWED_IMPORTERS[module])} == set()


def test_jobs_reconcile_takes_only_the_connection_helpers_of_compute_reconcile():
    for path in (ROOT / "jobs/reconcile").glob("*.py"):
        borrowed = {name for name in imports_of(path) if name == "compute.reconcile" or name.startswith("compute.reconcile.")}
        assert all(name.startswith("compute.reconcile.computes") for name in borrowed), (path, borrowed)


PURE = ["controlplane/specs.py", "controlplane/kube/names.py", "controlplane/kube/objects.py", "controlplane/kube/quantities.py",
        "controlplane/kube/pods.py", "controlplane/kube/resources.py", "compute/vmsizes.py", "compute/capabilities.py",
        "compute/manifests.py", "jobs/spec.py", "jobs/manifests.py"]
PURE_MODULES = {path.removesuffix(".py").replace("/", ".") for path in PURE}


@pytest.mark.parametrize("pure", PURE)
def test_pure_modules_import_nothing_of_django(pure):
    """Pure modules may use each other, never Django, DRF or the apps' other modules."""
    imported = {name for name in imports_of(ROOT / pure) if name.split(".")[0] in ("django", "rest_framework", *APPS[:-1])}
    assert not {name for name in imported if not any(name.startswith(module) for module in PURE_MODULES)}


@pytest.mark.parametrize("folder", ["compute/reconcile", "jobs/reconcile"])
def test_reconcile_knows_nothing_of_celery_drf_or_the_studio(folder):
    banned = ("celery", "rest_framework", "frontend")
    for path in (ROOT / folder).glob("*.py"):
        assert not {name for name in imports_of(path) if name.split(".")[0] in banned}, path


def test_the_cli_talks_only_rest():
    banned = ("django", "rest_framework", "controlplane", "workspaces", "compute", "jobs", "frontend")
    for path in source_files("cli"):
        assert not {name for name in imports_of(path) if name.split(".")[0] in banned}, path


# Online endpoints are an app of their own (endpoints/): the same rules, plus the data plane's one exception.
ENDPOINTS_PURE = ["endpoints/spec.py", "endpoints/manifests.py", "endpoints/keys.py"]


def imported_names(path: Path) -> set[str]:
    """What a module takes from others, as full dotted names (`from controlplane.kube import quantities` → controlplane.kube.quantities)."""
    return {name for name in imports_of(path) if not any(other.startswith(name + ".") for other in imports_of(path))}


@pytest.mark.parametrize("pure", ENDPOINTS_PURE)
def test_endpoints_pure_modules_import_nothing_of_django(pure):
    """spec, manifests and keys may use compute's pure modules and each other, never Django, DRF, Celery or I/O."""
    pure_modules = PURE_MODULES | {path.removesuffix(".py").replace("/", ".") for path in ENDPOINTS_PURE}
    banned = ("django", "rest_framework", "celery", "kubernetes", "httpx", "endpoints", "jobs", *APPS[:-1])
    imported = {name for name in imported_names(ROOT / pure) if name.split(".")[0] in banned}
    assert not {name for name in imported if not any(name.startswith(module) for module in pure_modules)}, imported


def endpoint_reconcile_importers() -> set[str]:
    return {path for path in importers_of("endpoints.reconcile", *APPS, "endpoints") if not path.startswith("endpoints/reconcile/")}


def test_only_endpoint_tasks_call_endpoint_reconcile():
    assert endpoint_reconcile_importers() <= {"endpoints/tasks.py"}


def test_nothing_else_calls_endpoint_reconcile():
    """Until the log readers move, the known exception above and no other."""
    assert endpoint_reconcile_importers() <= {"endpoints/tasks.py", "endpoints/dataplane.py"}


def test_endpoints_borrow_only_the_connection_helpers_of_compute_reconcile():
    importers = importers_of("compute.reconcile", "endpoints")
    assert {path for path in importers if not path.startswith("endpoints/reconcile/")} <= {"endpoints/dataplane.py"}
    for path in importers:
        borrowed = {name for name in imported_names(ROOT / path) if name.startswith("compute.reconcile.")}
        assert all(name.startswith("compute.reconcile.computes") for name in borrowed), (path, borrowed)


def test_only_endpoint_reconcile_and_the_data_plane_call_kube():
    """The data plane is the documented exception: scoring forwards through the cluster API server's service proxy."""
    outside = {path for path in importers_of("controlplane.kube.client", "endpoints") if not path.startswith("endpoints/reconcile/")}
    assert outside <= {"endpoints/dataplane.py"}, outside
    assert not importers_of("kubernetes", "endpoints")


def test_endpoint_reconcile_knows_nothing_of_celery_drf_or_the_studio():
    banned = ("celery", "rest_framework", "frontend")
    for path in (ROOT / "endpoints/reconcile").glob("*.py"):
        assert not {name for name in imports_of(path) if name.split(".")[0] in banned}, path
