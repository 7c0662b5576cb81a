#!/usr/bin/env bash
# Installs everything, then shows Heartbeat on the embedded default (local Spark, local runner):
#  1. trigger files land; the heartbeat starts two jobs: demo_orders_job prints the change range it was
#     handed and the files it covers (read with harness.consume); demo_customers_job loads the customers extract its trigger file names as one batch of a key
#     refresh model (materialized='refresh') in a downstream dbt project, then fails in a later step;
#  2. `retry`: the next run gets the failed run's range again, and its records come back unchanged (U);
#  3. a second extract lands: its run shows changed (C), newer-but-same (S), new (N) and older (O) records;
#  4. `refresh reset` recomputes the customers dataset from its kept batches.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export SPARK_LOCAL_IP=127.0.0.1
export PATH="$PWD/.venv/bin:$PATH"              # the jobs' commands run `python` from the virtualenv
export HEARTBEAT_STATE_DIR="$PWD/demo/state"   # the demo's own state folder, started afresh
downstream_state="$PWD/demo/downstream/state"  # the downstream project's (its own metastore)
rm -rf "$HEARTBEAT_STATE_DIR" "$downstream_state"
find demo/triggers -type f ! -name .gitkeep -delete

ticks_until_idle() {  # tick every 5 s until a tick starts nothing while no run is going
  python -m harness run --interval 5 --until-idle --max-ticks 60
}

run_folders_of() {  # the run folders of job $1 so far, oldest first
  local meta
  for meta in $(ls -d "$HEARTBEAT_STATE_DIR"/local_runs/local-*/meta.json | sort); do
    if grep -q "\"job_id\": \"$1\"" "$meta"; then dirname "$meta"; fi
  done
}

runs_of() {  # the output of every run of job $1 so far, oldest first
  local run
  for run in $(run_folders_of "$1"); do
    echo "-- run $(basename "$run")"
    cat "$run/output.log"
  done
}

succeeded() {  # the demo stops, with the run's output, when job $1's newest run did not succeed
  local run
  run=$(run_folders_of "$1" | tail -1)
  if ! grep -q '"exit_code": 0' "$run/result.json"; then
    echo "demo: the newest run of $1 did not succeed ($(cat "$run/result.json")):" >&2
    cat "$run/output.log" >&2
    exit 1
  fi
}

newest_run_output() {
  cat "$(ls -d "$HEARTBEAT_STATE_DIR"/local_runs/local-* | sort | tail -1)/output.log"
}

echo "== validate the configuration and the controls CSV"
python -m harness validate

echo "== trigger files land: the orders extract is complete; customers_001.csv is ready"
date -u +%FT%TZ > "demo/triggers/demo_orders_landed/orders_$(date -u +%Y%m%dT%H%M%S).done"
echo customers_001.csv > demo/triggers/demo_customers_landed/customers_001.ready
mkdir -p "$downstream_state" && touch "$downstream_state/DEMO_FAIL_AFTER_BUILD"  # its first run fails

echo "== ticks until idle: both jobs start; demo_orders_job completes, demo_customers_job fails after its build"
ticks_until_idle

echo "== what demo_orders_job was handed"
runs_of demo_orders_job
succeeded demo_orders_job
echo "== what demo_customers_job did (every record new: N)"
runs_of demo_customers_job
python -m harness status

echo "== retry demo_customers_job: its next run is handed the failed run's range again"
python -m harness retry --job-id demo_customers_job
ticks_until_idle
echo "== the same extract loaded again: every record unchanged (U), nothing twice"
newest_run_output
succeeded demo_customers_job

echo "== customers_002.csv lands: changed (C), same with a newer date (S), new (N), older than the dataset (O)"
echo customers_002.csv > demo/triggers/demo_customers_landed/customers_002.ready
ticks_until_idle
newest_run_output
succeeded demo_customers_job

echo "== recompute the customers dataset from its kept batches (refresh reset, in the downstream project)"
env -u HEARTBEAT_STATE_DIR python -m harness --config demo/downstream/heartbeat.yml refresh reset --model customers --project-dir demo/downstream  # its own state folder

echo "== status"
python -m harness status
