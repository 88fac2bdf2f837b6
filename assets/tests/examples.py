"""Fixtures shared by the asset spec tests: Azure ML's published example YAMLs, read as the server reads a body."""
from pathlib import Path

from controlplane.parsers import load_yaml

YAML = Path(__file__).resolve().parent / "yaml"


def example(name: str) -> dict:
    """One example file of yaml/, through Dockyard's YAML loader (aliases, depth and bad text refused)."""
    return load_yaml((YAML / name).read_text())


def read_beside_examples(path: str) -> object:
    """What the CLI does with `conda_file: <path>`: read it beside the YAML."""
    return load_yaml((YAML / path).read_text())


def fields_of(errors) -> list[str]:
    """The field paths of a SpecErrors' rows."""
    return [field for field, _ in errors.value.errors]
