"""Jobs start exactly when the start rules say (hard rows all new, soft rows never alone, paused hard rows block), once per batch, on the embedded default."""

from __future__ import annotations

from tests.support import HeartbeatHarness, control_row


def test_mixed_hard_soft_and_paused_jobs_start_exactly_when_their_rules_hold(heartbeat: HeartbeatHarness) -> None:
    # GIVEN four jobs: hard+hard, hard+soft, soft+soft, and hard+hard with one hard row PAUSED
    heartbeat.write_controls(
        [
            control_row("trigger_file", "a1", "hh"),
            control_row("trigger_file", "a2", "hh"),
            control_row("trigger_file", "b1", "hs"),
            control_row("trigger_file", "b2", "hs", hard=False),
            control_row("trigger_file", "c1", "ss", hard=False),
            control_row("trigger_file", "c2", "ss", hard=False),
            control_row("trigger_file", "d1", "hp", paused=True),
            control_row("trigger_file", "d2", "hp"),
        ]
    )
    heartbeat.define_jobs("hh", "hs", "ss", "hp")
    for folder in ("a1", "a2", "b1", "b2", "c1", "c2", "d1", "d2"):
        (heartbeat.config.trigger_root / folder).mkdir()  # type: ignore[operator]
    assert heartbeat.tick().started == []

    # WHEN one upstream of each job gets data (for hs: only the soft one)
    for folder in ("a1", "b2", "c1", "d2"):
        heartbeat.drop_trigger_file(folder, "batch1")
    first = heartbeat.tick()
    # THEN only the soft-only job starts; the others say why not
    assert first.started == ["ss"]
    reasons = {job: d.reason for job, d in heartbeat.decisions().items()}
    assert reasons["hh"] == "waiting for hard dependency trigger_file:a2"
    assert reasons["hs"] == "waiting for hard dependency trigger_file:b1"
    assert reasons["hp"] == "hard dependency PAUSED: trigger_file:d1"

    # WHEN the missing hard upstreams get data
    heartbeat.wait_for_runs()
    heartbeat.drop_trigger_file("a2", "batch1")
    heartbeat.drop_trigger_file("b1", "batch1")
    second = heartbeat.tick()
    # THEN hh and hs start (hs carrying its soft row's new data); ss's run is recorded complete
    assert sorted(second.started) == ["hh", "hs"] and second.runs_succeeded == 1
    heartbeat.wait_for_runs()
    third = heartbeat.tick()
    assert third.started == [] and third.runs_succeeded == 2

    # WHEN a second batch lands on one of hh's two hard upstreams, then on the other
    heartbeat.drop_trigger_file("a1", "batch2")
    assert heartbeat.tick().started == []
    heartbeat.drop_trigger_file("a2", "batch2")
    assert heartbeat.tick().started == ["hh"]
    heartbeat.wait_for_runs()
    heartbeat.tick()

    # THEN every job ran once per batch, the paused one never, and hh's second range starts where the first ended
    runs = {job: heartbeat.job_runs(job) for job in ("hh", "hs", "ss", "hp")}
    assert {job: len(r) for job, r in runs.items()} == {"hh": 2, "hs": 1, "ss": 1, "hp": 0}
    first_hh, second_hh = ({u["sensor_id"]: u for u in run["range"]["upstreams"]} for run in runs["hh"])
    for upstream in ("a1", "a2"):
        assert first_hh[upstream]["from"] is None
        assert second_hh[upstream]["from"] == first_hh[upstream]["to"]
        assert second_hh[upstream]["to"]["recent"] == ["batch1", "batch2"]
    hs_range = {u["sensor_id"]: u["dependency"] for u in runs["hs"][0]["range"]["upstreams"]}
    assert hs_range == {"b1": "hard", "b2": "soft"}
    assert heartbeat.job_status("hh") == {"COMPLETED"} and heartbeat.job_status("hp") == {None, "NEW_EVENT_AVAILABLE"}


def test_a_hard_row_added_to_a_job_that_ran_joins_its_next_run(heartbeat: HeartbeatHarness) -> None:
    # GIVEN a job that ran once, and another job
    rows = [control_row("trigger_file", "a1", "ja"), control_row("trigger_file", "b1", "jb")]
    heartbeat.write_controls(rows)
    heartbeat.define_jobs("ja", "jb")
    for folder in ("a1", "a2", "b1"):
        (heartbeat.config.trigger_root / folder).mkdir()  # type: ignore[operator]
    heartbeat.tick()
    heartbeat.drop_trigger_file("a1", "batch1")
    assert heartbeat.tick().started == ["ja"]
    heartbeat.wait_for_runs()
    heartbeat.tick()
    # WHEN a hard row is added to it (a row that never started a run), and every upstream gets data
    heartbeat.write_controls([*rows, control_row("trigger_file", "a2", "ja")])
    heartbeat.tick()
    for folder in ("a1", "a2", "b1"):
        heartbeat.drop_trigger_file(folder, "batch2")
    report = heartbeat.tick()
    # THEN both jobs start, the first with its new row in its range and its first run as the run before it
    assert report.error is None and sorted(report.started) == ["ja", "jb"]
    heartbeat.wait_for_runs()
    first, second = heartbeat.job_runs("ja")
    assert sorted(u["sensor_id"] for u in second["range"]["upstreams"]) == ["a1", "a2"]
    assert first["token"] != second["token"]


def test_a_row_removed_and_put_back_keeps_its_history_and_is_not_handed_what_its_job_consumed(
    heartbeat: HeartbeatHarness,
) -> None:
    # GIVEN a job that ran over its row's first file, beside another job
    rows = [control_row("trigger_file", "x", "jx"), control_row("trigger_file", "o", "jo")]
    heartbeat.write_controls(rows)
    heartbeat.define_jobs("jx", "jo")
    for folder in ("x", "o"):
        (heartbeat.config.trigger_root / folder).mkdir()  # type: ignore[operator]
    heartbeat.tick()
    heartbeat.drop_trigger_file("x", "x1")
    assert heartbeat.tick().started == ["jx"]
    heartbeat.wait_for_runs()
    heartbeat.tick()
    # WHEN its row leaves the controls CSV while the other job starts, then comes back in the tick that
    # records the other job's run ending (a fold that reads only that tick's new events)
    heartbeat.write_controls(rows[1:])
    heartbeat.drop_trigger_file("o", "o1")
    assert heartbeat.tick().started == ["jo"]
    heartbeat.wait_for_runs()
    heartbeat.write_controls(rows)
    back = heartbeat.tick()
    # THEN the row is back as it was: its file is not new again, its job does not start, and it is not
    # left waiting for a run that ended long ago
    assert back.error is None and back.runs_succeeded == 1 and back.started == []
    assert heartbeat.job_status("jx") == {"COMPLETED"} and len(heartbeat.job_runs("jx")) == 1
    # AND its next file starts the job with the range from the first run's end
    heartbeat.drop_trigger_file("x", "x2")
    assert heartbeat.tick().started == ["jx"]
    heartbeat.wait_for_runs()
    first, second = heartbeat.job_runs("jx")
    assert second["range"]["upstreams"][0]["from"] == first["range"]["upstreams"][0]["to"]
