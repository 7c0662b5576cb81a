"""Sensors, one module per source kind, behind `harness.sensors.base.Sensor`; this is their registry.

Which module reads a kind is `harness.core.vocabulary.KINDS`; the module's `DECLARATION` says how its sensor is
built and how a job reads its range. `declaration_of(kind)` imports the module only when it is asked for:
a cold tick imports the clients of the kinds its rows read, not all of them.

`build_registry` is where each sensor gets its own section of heartbeat.yml, parsed and resolved at
the start (secrets read from the environment, connection settings checked): a bad section stops the
start with a ConfigError naming its key, instead of failing every check of its rows later.
"""

from __future__ import annotations

import importlib
from typing import Any, Iterable

from harness.core.config import Config
from harness.core.controls import ControlSpec
from harness.core.errors import ConfigError, SensorError
from harness.core.vocabulary import KINDS, SensorSource
from harness.sensors.base import Sensor, Upstream
from harness.sensors.declaration import SensorDeclaration

Registry = dict[SensorSource, Sensor[Any]]


def declaration_of(kind: SensorSource) -> SensorDeclaration:
    """The declaration of the module that reads `kind` (harness/sensors/<KINDS[kind].module>.py)."""
    module = importlib.import_module(f"{__name__}.{KINDS[kind].module}")
    declared: SensorDeclaration = module.DECLARATION
    return declared


def build_registry(config: Config, kinds: Iterable[SensorSource] | None = None) -> Registry:
    """One sensor per source kind (of `kinds`, default all), each built from its own settings; every
    problem of every section reported at once. Only the modules of these kinds are imported."""
    wanted = set(SensorSource if kinds is None else kinds)
    registry: Registry = {}
    problems: dict[str, None] = {}  # kinds read by one module report a problem of their section once
    for kind in (k for k in SensorSource if k in wanted):
        try:
            registry[kind] = declaration_of(kind).build(config, kind)
        except ConfigError as exc:
            problems[str(exc)] = None
    if problems:
        where = str(config.config_path or "heartbeat.yml")
        raise ConfigError(f"{where}: refused:\n  " + "\n  ".join(problems))
    return registry


def unserved_rows(registry: Registry, specs: Iterable[ControlSpec]) -> list[tuple[ControlSpec, str]]:
    """The rows whose every check would fail with this configuration, each with its sensor's reason
    (`Sensor.check_upstream`: no network, no Spark, no file read), without the upstream's label (the
    row's name holds it). `registry` holds a sensor for every kind of `specs`."""
    unserved = []
    for spec in specs:
        upstream = upstream_of(spec)
        try:
            registry[upstream.kind].check_upstream(upstream)
        except SensorError as exc:
            unserved.append((spec, str(exc).removeprefix(f"{upstream.label}: ")))
    return unserved


def doubtful_rows(registry: Registry, specs: Iterable[ControlSpec]) -> list[tuple[ControlSpec, str]]:
    """The rows a sensor serves but doubts (`Sensor.doubt`: a name likely misspelt), each with its note.
    `registry` holds a sensor for every kind of `specs`."""
    doubtful = []
    for spec in specs:
        upstream = upstream_of(spec)
        note = registry[upstream.kind].doubt(upstream)
        if note:
            doubtful.append((spec, note))
    return doubtful


def upstream_of(spec: ControlSpec) -> Upstream:
    return Upstream(SensorSource(spec.sensor_source), spec.sensor_id, spec.upstream_key or None)
