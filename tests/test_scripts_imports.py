"""The programs beside the package (the demo's jobs, the deployed example, the dbt adapter, the scripts) import
names from the harness that mypy does not check there: each must still exist, or the program fails only
when it runs (the demo's orders job did, after a rename)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

from harness.core.config import PROJECT_DIR

PROGRAMS = ("demo", "deploy", "adapter", "scripts")


def harness_names(path: Path) -> list[tuple[str, str]]:
    """(module, name) for each `from harness... import name` in the file, lazy ones included."""
    return [
        (node.module, alias.name)
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("harness")
        for alias in node.names
    ]


@pytest.mark.unit
def test_every_name_the_programs_beside_the_package_import_from_it_exists() -> None:
    programs = [p for folder in PROGRAMS for p in sorted((PROJECT_DIR / folder).rglob("*.py"))]
    imports = {(p.relative_to(PROJECT_DIR), module, name) for p in programs for module, name in harness_names(p)}
    assert any(str(path).startswith("demo") for path, _, _ in imports), "the demo's jobs import from the harness"
    missing = [
        f"{path}: from {module} import {name}" for path, module, name in sorted(imports) if not exists(module, name)
    ]
    assert not missing, missing


def exists(module: str, name: str) -> bool:
    """The module has the name, or is a package with a submodule of that name."""
    found = importlib.import_module(module)
    return hasattr(found, name) or (
        hasattr(found, "__path__") and importlib.util.find_spec(f"{module}.{name}") is not None
    )
