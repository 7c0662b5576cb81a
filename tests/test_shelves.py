"""The harness's shelves are layered: a module imports from its own shelf and the shelves below it
(docs/contributing.md, "Where things are"), so a tick's calls only go down and its data never climbs
back up. Every import is read from the source, lazy ones inside functions included."""

from __future__ import annotations

import ast
from pathlib import Path

from harness.core.config import PROJECT_DIR

PACKAGE = PROJECT_DIR / "harness"
# From the bottom up: `core` is what every shelf shares; "" is the public entry points at the package's
# root (`python -m harness`, `harness.consume`, `harness.publish`), which may import any shelf.
SHELVES = ("core", "platform", "state", "sensors", "refresh", "backends", "jobs", "tick", "views", "commands", "")

# The imports that go up a shelf, each for a stated reason.
EXCEPTIONS = {
    ("harness/platform/databricks_target.py", "harness.backends.databricks"): (
        "lazy: the Databricks target asks the backend's client for a secret, in that process only"
    ),
}


def shelf_of(module: str) -> str:
    """The shelf of a harness module (`harness.tick.run` -> `tick`, `harness.core.config` -> `core`,
    `harness.consume` -> "")."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in SHELVES and (PACKAGE / parts[1]).is_dir() else ""


def imported(path: Path) -> list[str]:
    """The harness modules a file imports, wherever in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
    return [name for name in found if name == "harness" or name.startswith("harness.")]


def module_name(path: Path) -> str:
    parts = path.relative_to(PROJECT_DIR).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_every_import_goes_to_its_own_shelf_or_one_below() -> None:
    upward = []
    files = sorted(PACKAGE.rglob("*.py"))
    for path in files:
        mine = shelf_of(module_name(path))
        for target in imported(path):
            theirs = shelf_of(target)
            where = (str(path.relative_to(PROJECT_DIR)), target)
            if SHELVES.index(theirs) > SHELVES.index(mine) and where not in EXCEPTIONS:
                upward.append(f"{where[0]} imports {target}: shelf {theirs!r} is above {mine or 'the root'!r}")
    assert not upward, "move the code down a shelf, or say why in EXCEPTIONS:\n" + "\n".join(upward)
    assert len(files) > 80  # the walk found the package


def test_every_exception_is_still_an_import_and_every_shelf_a_folder() -> None:
    for path, target in EXCEPTIONS:
        assert target in imported(PROJECT_DIR / path), f"{path} no longer imports {target}: drop the exception"
    assert {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()} == set(SHELVES) - {""}
