"""The project's distributions as the bundle ships them: a wheel and an sdist built by `python -m build`
from a clean copy of the repository (no `build/` or `dist/` left over from an earlier build, nothing
written into the working tree), once per test process.

`--no-isolation` builds with the setuptools already installed (the tests have no network to fetch one);
otherwise it is the bundle's own build command (databricks.yml, `artifacts.heartbeat.build`).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from harness.core.config import PROJECT_DIR

BUILD_TIMEOUT_SECONDS = 300
# What is never part of a build: the state of local runs, virtualenvs, earlier builds, and dbt_packages
# (a link back to this project).
_NOT_COPIED_ANYWHERE = shutil.ignore_patterns(
    ".git",
    ".venv",
    "dist",
    "build",
    "target",
    "logs",
    "dbt_packages",
    "__pycache__",
    "*.egg-info",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    "spark-warehouse",
    "metastore_db",
)


def _not_copied(folder: str, names: list[str]) -> set[str]:
    """The above, and every `state` folder of local runs (not the harness's own `state` package)."""
    ignored = set(_NOT_COPIED_ANYWHERE(folder, names))
    if Path(folder).name != "harness" and "state" in names:
        ignored.add("state")
    return ignored


@dataclass(frozen=True)
class Distributions:
    wheel: Path
    sdist: Path
    seconds: float

    def wheel_files(self) -> set[str]:
        with zipfile.ZipFile(self.wheel) as archive:
            return set(archive.namelist())


def source_files(package: str = "harness") -> set[str]:
    """Every file of the package in the source tree, as a wheel names it (`harness/backends/base.py`)."""
    root = PROJECT_DIR / package
    return {
        f"{package}/{p.relative_to(root).as_posix()}"
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }


@lru_cache(maxsize=1)
def build_distributions() -> Distributions:
    import time

    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="heartbeat-build-"))
    source = workdir / "source"
    shutil.copytree(PROJECT_DIR, source, ignore=_not_copied, symlinks=True)
    out = workdir / "dist"
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--sdist", "--wheel", "--outdir", str(out)],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_SECONDS,
    )
    if done.returncode != 0:
        raise RuntimeError(f"python -m build failed ({done.returncode}):\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return Distributions(wheel, sdist, time.monotonic() - started)
