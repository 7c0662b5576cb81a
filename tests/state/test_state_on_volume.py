"""A state folder on a Unity Catalog volume (FUSE over object storage: no appends, no in-place rewrites,
no file locks): the heartbeat writes only whole files there, by rename; the state lock and dbt's log and
target folder, which are locked, appended or rewritten in place, live on the node's local disk."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from harness.core import state_layout
from harness.core.config import PROJECT_DIR, Config
from harness.core.errors import HeartbeatError
from harness.core.state_layout import StateLayout
from harness.state.lock import StateLock
from harness.state.status_files import TickResult, read_ticks, record_tick

pytestmark = pytest.mark.unit


@pytest.fixture
def volume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder standing in for `/Volumes/`: what the harness writes there is checked for renames."""
    root = tmp_path / "Volumes"
    monkeypatch.setattr(state_layout, "VOLUMES_ROOT", f"{root}/")
    return root / "main" / "heartbeat" / "state"


def test_on_a_volume_the_lock_and_dbts_files_are_on_local_disk(volume: Path) -> None:
    config = Config(config_path=None, project_dir=PROJECT_DIR, state_dir=volume)
    lock = StateLock(volume)
    for path in (lock.path, config.dbt_log_path, config.dbt_target_path):
        assert not str(path).startswith(state_layout.VOLUMES_ROOT), path
    with lock:
        assert lock.path.read_text().startswith("heartbeat")
        assert not volume.exists() or not any(volume.iterdir())  # nothing was written on the volume


def test_off_a_volume_everything_stays_in_the_state_folder(tmp_path: Path) -> None:
    config = Config(config_path=None, project_dir=PROJECT_DIR, state_dir=tmp_path / "state")
    assert StateLock(config.state_dir).path.parent == config.state_dir
    assert config.dbt_log_path.parent == config.state_dir


def test_on_a_volume_each_ticks_record_is_a_whole_file_renamed_into_place(volume: Path) -> None:
    # GIVEN a state folder on a volume
    volume.mkdir(parents=True)
    started = datetime.now(timezone.utc)
    inodes = []
    # WHEN three ticks are recorded
    for n in range(3):
        record_tick(volume, TickResult(f"t{n}", started, 1.0, None))
        inodes.append(os.stat(StateLayout(volume).ticks).st_ino)
    # THEN the file was replaced each time (never appended to), and holds every tick
    assert inodes[0] != inodes[1] != inodes[2]
    assert [t["tick_id"] for t in read_ticks(volume, started - timedelta(seconds=1))] == ["t0", "t1", "t2"]


def test_a_state_folder_that_cannot_be_written_is_said_in_a_line_naming_it(tmp_path: Path) -> None:
    # GIVEN a state folder whose lock file's place is taken by a folder (as root, the stand-in for a
    # read-only mount or a folder this user may not write: each fails the lock file's opening)
    state = tmp_path / "state"
    StateLayout(state).lock.mkdir(parents=True)
    # WHEN a heartbeat takes the lock, THEN the error names the folder, the cause and what to check
    with pytest.raises(HeartbeatError) as refused:
        StateLock(state).acquire()
    assert str(refused.value).startswith(f"the state folder {state} cannot be written (Is a directory: ")
    assert "mounted read-write" in str(refused.value)
