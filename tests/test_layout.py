"""DESIGN.md's dependency rules: the import-linter contract (.importlinter) is kept, and breaks when a rule is broken.

What import-linter cannot say is checked here on the source itself: pure modules use only the standard library
(and each other), and the API views hold no ORM query.
"""
import ast
import configparser
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = ROOT / ".importlinter"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    # Wide columns: a contract's name and its verdict stay on one line of the report.
    env = {**os.environ, "COLUMNS": "400", "NO_COLOR": "1"}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--no-logo"], cwd=cwd, env=env, capture_output=True, text=True)


def contract() -> configparser.ConfigParser:
    config = configparser.ConfigParser()
    config.read(CONTRACT)
    return config


def root_packages() -> list[str]:
    """The packages the contract covers: the ones a broken-rule copy of the tree must hold."""
    return contract()["importlinter"]["root_packages"].split()


def contract_names() -> dict[str, str]:
    """Contract id -> its name, as .importlinter declares them."""
    config = contract()
    prefix = "importlinter:contract:"
    return {section.removeprefix(prefix): config[section]["name"] for section in config.sections() if section.startswith(prefix)}


def test_the_import_contract_is_kept():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Contracts: {len(contract_names())} kept, 0 broken." in result.stdout


@pytest.fixture
def tree_copy(tmp_path):
    """The packages' Python files and the contract, copied: a rule is broken in the copy, never in the tree."""
    for package in root_packages():
        for path in (ROOT / package).rglob("*.py"):
            target = tmp_path / path.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    shutil.copyfile(CONTRACT, tmp_path / CONTRACT.name)
    return tmp_path


BREAKS = [
    # (module to change in the copy, the line added to it, the contract that must then break)
    ("jobs/views.py", "from compute import reconcile", "transports"),
    ("jobs/views.py", "from compute import reconcile", "reconcile-callers"),
    ("endpoints/views.py", "from endpoints import dataplane", "data-plane"),
    ("jobs/services.py", "from controlplane.kube import client", "kube-client"),
    ("compute/services.py", "from rest_framework import serializers", "services"),
    ("jobs/reconcile/status.py", "from jobs import services", "app-layers"),
    ("jobs/spec.py", "import django", "pure"),
    ("compute/spec/fields.py", "from rest_framework import serializers", "pure"),
    ("controlplane/kube/names.py", "from workspaces import models", "framework"),
    ("compute/selectors.py", "import kubernetes", "kubernetes-package"),
    ("cli/output.py", "from controlplane import api", "cli"),
    ("compute/services.py", "from compute.instance_proxy import access", "instance-proxy"),
    ("compute/services.py", "import websockets", "websockets-package"),
    ("compute/instance_proxy/rules.py", "import httpx", "pure"),
]


@pytest.mark.parametrize(("module", "line", "contract"), BREAKS, ids=[f"{c}:{m}" for m, _, c in BREAKS])
def test_the_contract_breaks_when_a_rule_is_broken(tree_copy, module, line, contract):
    path = tree_copy / module
    path.write_text(path.read_text() + f"\n{line}  # deliberately breaks the {contract} contract\n")
    result = lint_imports(tree_copy)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{contract_names()[contract]} BROKEN" in result.stdout, result.stdout


def imports_of(path: Path) -> set[str]:
    """Every module a file imports, relative imports resolved against its package."""
    names = set()
    package = path.parent.relative_to(ROOT).parts
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package[: len(package) - node.level + 1], *([base] if base else [])])
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


# Pure modules: parse, render and rule; no I/O, no framework. The contract's "pure" list, plus what it cannot say:
# nothing from outside the standard library at all.
PURE = ["controlplane/specs.py", "controlplane/kube/names.py", "controlplane/kube/objects.py",
        "controlplane/kube/quantities.py", "controlplane/kube/pods.py", "controlplane/kube/errors.py",
        "controlplane/kube/paths.py", "controlplane/kube/resources.py", "compute/vmsizes/__init__.py", "compute/vmsizes/series.py", "compute/vmsizes/sizes.py",
        "compute/vmsizes/reserve.py",
        "compute/capabilities.py", "compute/pools.py",
        "compute/manifests/__init__.py", "compute/manifests/instancetypes.py", "compute/manifests/nodepools.py",
        "compute/manifests/clusterapi.py", "compute/manifests/instances.py", "compute/spec/autoscalers.py",
        "compute/shapes.py", "compute/spec/__init__.py", "compute/spec/fields.py", "compute/spec/forms.py",
        "compute/spec/rules.py", "compute/spec/kinds.py", "compute/spec/instances.py", "compute/spec/attached.py",
        "compute/spec/audit.py", "jobs/spec.py", "jobs/spec_io.py", "jobs/manifests.py", "endpoints/spec/__init__.py", "endpoints/spec/resources.py",
        "endpoints/spec/managed.py", "endpoints/spec/placement.py", "endpoints/manifests.py",
        "endpoints/keys.py", "assets/specs/common.py", "assets/specs/references.py", "assets/specs/environment.py",
        "assets/specs/model.py", "assets/specs/data.py", "assets/specs/snapshots.py", "assets/specs/versions.py",
        "assets/specs/pods.py", "assets/specs/conda.py", "assets/specs/realise.py",
        "endpoints/model_spec.py",
        "assets/curated.py", "ignorerules/__init__.py",
        "jobs/clusters.py", "jobs/serverless.py", "compute/schedules.py", "compute/instance_proxy/rules.py", "compute/idle.py",
        "compute/hostkeys.py", "compute/vmprobe.py"]
# Libraries some pure modules compute with: time arithmetic only, no I/O (cron and RFC 5545 recurrence rules).
PURE_LIBRARIES = {"compute/schedules.py": {"croniter", "dateutil"}}
PURE_MODULES = {path.removesuffix(".py").replace("/", ".") for path in PURE}


def from_pure_module(name: str) -> bool:
    """`controlplane.kube.objects.GPU` and `controlplane.kube.quantities` (a module imported from its package) alike."""
    return any(name == module or name.startswith(module + ".") or module.startswith(name + ".") for module in PURE_MODULES)


@pytest.mark.parametrize("pure", PURE)
def test_pure_modules_import_only_the_standard_library_and_each_other(pure):
    allowed = sys.stdlib_module_names | PURE_LIBRARIES.get(pure, set())
    outside = {name for name in imports_of(ROOT / pure) if name.split(".")[0] not in allowed and not from_pure_module(name)}
    assert not outside, outside


API_VIEWS = ["workspaces/views.py", "compute/views.py", "jobs/views.py", "endpoints/views.py"]
# Calls that build or run a queryset; none of them has another meaning in these modules.
QUERYSET_CALLS = {"objects", "filter", "exclude", "annotate", "aggregate", "order_by", "select_related",
                  "prefetch_related", "values", "values_list", "distinct", "only", "defer", "none", "select_for_update",
                  "raw", "extra", "bulk_create", "get_or_create", "update_or_create"}


@pytest.mark.parametrize("views", API_VIEWS)
def test_api_views_hold_no_orm_query(views):
    """Views ask selectors (reads) and services (writes); a queryset built in a view is a query the selectors miss."""
    tree = ast.parse((ROOT / views).read_text())
    used = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr in QUERYSET_CALLS}
    assert not used, used
    assert not {name for name in imports_of(ROOT / views) if name.startswith("django.db.models")}  # Q, F, Subquery...
