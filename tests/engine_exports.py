"""The lakehouse engine's heartbeat control table and sensor table (`lakehouse_engine_sensors`) as CSV
exports, the way a team exports them to try `import-lakehouse-engine` without a workspace."""

from __future__ import annotations

import csv
from pathlib import Path

from tests.support import control_row


def engine_exports(folder: Path, rows: list[dict[str, str]], sensors: list[dict[str, str]]) -> tuple[Path, Path]:
    """The engine's control table and sensor table as CSV exports."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = folder / "heartbeat_control.csv", folder / "lakehouse_engine_sensors.csv"
    for path, body in zip(paths, (rows, sensors)):
        with path.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(body[0]))
            writer.writeheader()
            writer.writerows(body)
    return paths


def engine_control(source: str, sensor_id: str, job: str, status: str) -> dict[str, str]:
    return control_row(source, sensor_id, job) | {"status": status, "latest_event_fetched_timestamp": ""}


def engine_sensor(sensor_id: str, status: str, key: str, value: str, checkpoint: str = "") -> dict[str, str]:
    return {
        "sensor_id": sensor_id,
        "assets": "",
        "status": status,
        "status_change_timestamp": "2026-12-01 06:40:00",
        "checkpoint_location": checkpoint,
        "upstream_key": key,
        "upstream_value": value,
    }
