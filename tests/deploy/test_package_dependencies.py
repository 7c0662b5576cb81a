"""The wheel imports with only what it declares: every module `harness/` imports (at the top of a module
or inside a function) is the standard library, the package itself, PySpark (the Databricks runtime's;
`[local]` elsewhere), or belongs to a distribution the wheel's `dependencies` name — never one installed
here only for the `[local]` extra, the dbt adapter of adapter/ or the test tooling (dbt-spark,
delta-spark, dbt-heartbeat, pytest). An import inside `try: ... except ImportError:` is optional."""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import re
import sys
import tomllib
from functools import lru_cache
from pathlib import Path

import pytest

from harness.core.config import PROJECT_DIR

pytestmark = pytest.mark.unit

PYPROJECT = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text())
RUNTIME_PROVIDED = {"pyspark"}  # the Databricks runtime's own; a pinned one would shadow it
OWN = ("harness", "__future__")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> set[str]:
    return {_canonical(re.split(r"[\s<>=!~\[;]", spec, maxsplit=1)[0]) for spec in PYPROJECT["project"]["dependencies"]}


def _guarded(tree: ast.AST) -> set[ast.AST]:
    """Imports inside `try: ... except ImportError:` — optional, the code does without them."""
    guarded: set[ast.AST] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
            isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError") for h in node.handlers
        ):
            guarded.update(n for statement in node.body for n in ast.walk(statement))
    return guarded


def _external(module: str) -> bool:
    top = module.split(".")[0]
    return top not in OWN and top not in sys.stdlib_module_names


def _module(parent: str, name: str) -> str:
    """`from parent import name`: the submodule `parent.name` when there is one, else `parent`."""
    try:
        return f"{parent}.{name}" if importlib.util.find_spec(f"{parent}.{name}") is not None else parent
    except ModuleNotFoundError:  # parent is a module, not a package: `name` is one of its attributes
        return parent


def imported_modules() -> dict[str, set[str]]:
    """The package's imports of other distributions' modules (optional ones left out), by the module
    imported: {module: {importing files}}."""
    found: dict[str, set[str]] = {}
    for path in sorted((PROJECT_DIR / "harness").rglob("*.py")):
        tree = ast.parse(path.read_text())
        optional = _guarded(tree)
        for node in ast.walk(tree):
            names: list[str] = []
            if node in optional:
                continue
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names if _external(a.name)]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and _external(node.module):
                names = [_module(node.module, a.name) for a in node.names]
            for name in names:
                found.setdefault(name, set()).add(str(path.relative_to(PROJECT_DIR)))
    return found


@lru_cache(maxsize=None)
def _files_of(distribution: str) -> frozenset[str]:
    dist = importlib.metadata.distribution(distribution)
    return frozenset(str(dist.locate_file(f)) for f in dist.files or ())


@lru_cache(maxsize=1)
def _top_level() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def distributions_of(module: str) -> set[str]:
    """The distributions that installed the module (a namespace package such as `dbt.include` has
    several)."""
    spec = importlib.util.find_spec(module)
    if spec is None:
        return set()
    origins = [spec.origin] if spec.origin not in (None, "namespace") else []
    origins += [str(Path(p) / "__init__.py") for p in (spec.submodule_search_locations or [])]
    return {
        _canonical(name)
        for name in _top_level().get(module.split(".")[0], [])
        if any(origin in _files_of(name) for origin in origins if origin)
    }


def test_every_import_of_the_package_is_declared_by_the_wheel_or_provided_by_the_runtime() -> None:
    allowed = declared() | RUNTIME_PROVIDED
    undeclared = {
        module: (sorted(distributions_of(module)), sorted(files))
        for module, files in imported_modules().items()
        if not distributions_of(module) & allowed
    }
    assert undeclared == {}


def test_the_check_sees_a_module_of_an_undeclared_distribution() -> None:
    assert distributions_of("dbt.adapters.spark") == {"dbt-spark"} and "dbt-spark" not in declared()
    assert distributions_of("dbt.include.heartbeat") == {"dbt-heartbeat"} and "dbt-heartbeat" not in declared()
    assert "dbt.include.heartbeat" not in imported_modules()  # harness.tick.fold imports it only where installed
    assert distributions_of("databricks.sdk") == {"databricks-sdk"} and "databricks-sdk" in declared()
