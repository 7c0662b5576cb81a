"""What a failed refresh run says (harness.refresh.runner): each failed model's refusal once, without dbt's
header line and macro stack."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.core.config import PROJECT_DIR, Config
from harness.refresh.runner import failed_nodes

pytestmark = pytest.mark.unit


def test_a_refusal_is_its_own_message_without_dbts_header_and_macro_stack(tmp_path: Path) -> None:
    config = Config(
        config_path=None,
        project_dir=PROJECT_DIR,
        state_dir=tmp_path,
        schema="s",
        controls_csv=PROJECT_DIR / "seeds" / "heartbeat_controls.csv",
        dbt_target_dir=tmp_path / "target",
    )
    config.dbt_target_path.mkdir(parents=True)
    message = (
        "Compilation Error in model t_w (models/t_w.sql)\n"
        "  t_w: batch w3 refused in phase 1 (change capture), nothing was changed: the column price is ...\n"
        "  \n"
        "  > in macro heartbeat_refresh_check_types (macros/refresh/refresh_params.sql)\n"
        "  > called by macro heartbeat_refresh_load (macros/refresh/refresh.sql)\n"
        "  > called by model t_w (models/t_w.sql)"
    )
    results = {"results": [{"unique_id": "model.p.t_w", "status": "error", "message": message}]}
    (config.dbt_target_path / "run_results.json").write_text(json.dumps(results))

    assert failed_nodes(config) == [
        ("t_w", "t_w: batch w3 refused in phase 1 (change capture), nothing was changed: the column price is ...")
    ]
