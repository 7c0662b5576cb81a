"""Where the configuration comes from, before it is validated: the file (`--config`, $HEARTBEAT_CONFIG,
else ./heartbeat.yml), the environment variables that override its keys, and `--set key=value`.

harness.core.config validates all of it (pydantic) into a Config. The commands that only read what ticks
leave in the state folder (`status`, `why`, `events`) need no more than the folder itself: they take it
from here (`locate_state`) without importing pydantic and building the file's ~25 models, which was
about half of what `status` cost (docs/performance-notes.md). The rules below are the only ones: both ways
read the same keys with the same overrides and defaults.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import yaml
from yaml.constructor import SafeConstructor

from harness.core.errors import ConfigError
from harness.core.state_layout import StateLayout
from harness.core.text_file import read_text

# Environment variables that override a key of the file (deployment-specific values).
ENV_OVERRIDES = {
    "state_dir": "HEARTBEAT_STATE_DIR",
    "backend": "HEARTBEAT_BACKEND",
    "catalog": "HEARTBEAT_CATALOG",
    "schema": "HEARTBEAT_SCHEMA",
    "trigger_file.root": "HEARTBEAT_TRIGGER_ROOT",
    "spark_remote": "HEARTBEAT_SPARK_REMOTE",
}
CONFIG_ENV = "HEARTBEAT_CONFIG"
DEFAULT_STATE_DIR = Path("state")  # metastore, warehouse, local runs, lock, inbox
DEFAULT_SCHEMA = "heartbeat"
CONTROLS_FILE = "heartbeat_controls.csv"  # the controls CSV's name: dbt's seed is named after it
SCHEMA_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"


@dataclass(frozen=True)
class Source:
    """heartbeat.yml's content with the environment's and the command line's overrides applied."""

    raw: dict[str, Any]
    base: Path  # relative paths are the file's folder's (the working folder without a file)
    config_path: Path | None
    where: str  # how messages name the file

    def path(self, value: Any) -> Path:
        """A path of the file: `~` and `$VARS` expanded, relative to `base`."""
        p = Path(os.path.expandvars(str(value))).expanduser()
        return p if p.is_absolute() else (self.base / p).resolve()


def read_source(path: str | os.PathLike[str] | None = None, overrides: Mapping[str, str] | None = None) -> Source:
    """The configuration's source; a missing default file means all defaults (the embedded demo)."""
    explicit = path or os.environ.get(CONFIG_ENV)
    config_path = Path(explicit) if explicit else Path.cwd() / "heartbeat.yml"
    if not config_path.exists() and not config_path.is_symlink():  # a link to nothing is said, not skipped
        if explicit:
            raise ConfigError(f"config file {config_path} does not exist")
        return source_of({}, base=Path.cwd(), overrides=overrides)
    raw = _load_yaml(config_path) or {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{config_path}: expected a mapping of keys at the top level")
    return source_of(raw, base=config_path.parent.resolve(), config_path=config_path.resolve(), overrides=overrides)


class _KeyGivenTwice(Exception):
    """A mapping of the file gives a key twice (`first` and `second`: the key's two nodes); not a
    YAMLError, which the loading takes for a syntax error to show with the Python parser."""

    def __init__(self, first: yaml.Node, second: yaml.Node) -> None:
        super().__init__(f"a key given twice, at lines {first.start_mark.line + 1} and {second.start_mark.line + 1}")
        self.first, self.second = first, second


class _UniqueKeys(SafeConstructor):
    """Refuses a key given twice in one mapping, which YAML would take as the second alone: a second
    `local_runner:` section would replace the first, its jobs gone without a word. The check costs a copy
    of each mapping's list of pairs and a count: only a mapping whose dict came out with fewer keys than
    it gave (or with a merge `<<` flattened into it) looks at its keys one by one."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        given = node.value
        pairs = list(given)  # as written: flattening a merge changes the node's list
        mapping = super().construct_mapping(node, deep)
        if len(mapping) < len(pairs) or node.value is not given or len(given) != len(pairs):
            _refuse_a_key_given_twice(self, pairs)
        return mapping


def _refuse_a_key_given_twice(constructor: SafeConstructor, pairs: list[tuple[yaml.Node, yaml.Node]]) -> None:
    """The first key of `pairs` (a mapping as written) given again, refused; a merge `<<` is not a key
    (the keys it brings give way to the mapping's own)."""
    seen: dict[Any, yaml.Node] = {}
    for key_node, _ in pairs:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = constructor.construct_object(key_node)
        if key in seen:
            raise _KeyGivenTwice(seen[key], key_node)
        seen[key] = key_node


class _FastLoader(_UniqueKeys, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """libyaml's parser (the Python one where libyaml is missing), refusing a key given twice."""


class _PythonLoader(_UniqueKeys, yaml.SafeLoader):
    """The Python parser, whose errors show the line, refusing a key given twice."""


def _load_yaml(config_path: Path) -> Any:
    """The file's YAML, parsed by libyaml (a heartbeat.yml listing thousands of local jobs: 0.05 s against
    0.38 s, in every cron process). Where libyaml refuses it, the Python parser reads it, and its error
    shows the line. A key given twice is refused with its line and its path of keys."""
    text = read_text(config_path, ConfigError, "--config (or HEARTBEAT_CONFIG)")
    try:
        try:
            return yaml.load(text, Loader=_FastLoader)
        except yaml.YAMLError:
            pass
        try:
            return yaml.load(text, Loader=_PythonLoader)
        except yaml.YAMLError as exc:
            raise ConfigError(f"{config_path}: not valid YAML: {exc}") from exc
    except _KeyGivenTwice as twice:
        raise ConfigError(
            f"{config_path}: line {twice.second.start_mark.line + 1}: {_key_path(text, twice.second)}: a key "
            f"given twice (first at line {twice.first.start_mark.line + 1}); keep one of them (the second would "
            "replace the first)"
        ) from None


def _key_path(text: str, key: yaml.Node) -> str:
    """The dotted path of keys to `key` (a key node of the file's text), found in the file's node tree:
    told only for a refused file, so the loading itself keeps no path."""
    where = (key.start_mark.line, key.start_mark.column)
    seen: set[int] = set()

    def search(node: yaml.Node, path: list[str]) -> list[str] | None:
        if id(node) in seen:  # an alias: its node was searched where it was written
            return None
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                step = [*path, str(key_node.value)]
                if (key_node.start_mark.line, key_node.start_mark.column) == where:
                    return step
                found = search(value_node, step)
                if found:
                    return found
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                found = search(item, [*path, f"[{index}]"])
                if found:
                    return found
        return None

    root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    found = search(root, []) if root is not None else None
    return ".".join(found).replace(".[", "[") if found else str(key.value)


def source_of(
    raw: Mapping[str, Any], base: Path, config_path: Path | None = None, overrides: Mapping[str, str] | None = None
) -> Source:
    """`raw` (a heartbeat.yml's content) with the environment overrides, then `overrides`."""
    merged = dict(raw)
    for dotted, variable in ENV_OVERRIDES.items():
        value = os.environ.get(variable)
        if value:
            _set(merged, dotted, value)
    for dotted, value in (overrides or {}).items():
        _set(merged, dotted, value)
    return Source(merged, base, config_path, str(config_path or "heartbeat.yml"))


def _set(raw: dict[str, Any], dotted: str, value: str) -> None:
    """Set `a.b.c` in the nested mapping (sections copied, never changed in place)."""
    *sections, key = dotted.split(".")
    if not sections:
        raw[key] = value
        return
    section = dict(raw.get(sections[0]) or {})
    _set(section, ".".join([*sections[1:], key]), value)
    raw[sections[0]] = section


class InStateFolder:
    """What the commands reading the state folder need of a configuration (StateFolder and Config): the
    folder, its layout, and the heartbeat's schema (whose folder in the warehouse holds the event log)."""

    state_dir: Path
    schema: str

    @property
    def layout(self) -> StateLayout:
        return StateLayout(self.state_dir)

    @property
    def warehouse_dir(self) -> Path:
        return self.layout.warehouse

    @property
    def schema_folder(self) -> Path:
        """The schema's folder in the local warehouse, where Spark keeps its tables (the event log's
        folder when none is recorded)."""
        return self.warehouse_dir / f"{self.schema}.db"


@dataclass(frozen=True)
class StateFolder(InStateFolder):
    """The state folder and the heartbeat's schema, as the configuration names them: what `status`,
    `why` and `events` need of it (a Config is one too)."""

    state_dir: Path
    schema: str = DEFAULT_SCHEMA


def locate_state(path: str | os.PathLike[str] | None = None, overrides: Mapping[str, str] | None = None) -> StateFolder:
    """The state folder of the configuration, without validating the rest of the file (a tick does)."""
    source = read_source(path, overrides)
    state_dir, schema = source.raw.get("state_dir", DEFAULT_STATE_DIR), source.raw.get("schema", DEFAULT_SCHEMA)
    if not isinstance(state_dir, (str, Path)) or not str(state_dir):
        raise ConfigError(f"{source.where}: state_dir: a folder's path, got {state_dir!r}")
    if not isinstance(schema, str) or not re.match(SCHEMA_PATTERN, schema):
        raise ConfigError(f"{source.where}: schema: a name of letters, digits and _ ({SCHEMA_PATTERN}), got {schema!r}")
    return StateFolder(source.path(state_dir), schema)
