#!/usr/bin/env bash
# Installs everything, then shows Heartbeat on the embedded default (local Spark, local runner):
# a trigger file lands, a tick starts the demo job, the next tick records it COMPLETED, status prints.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export SPARK_LOCAL_IP=127.0.0.1
export HEARTBEAT_STATE_DIR="$PWD/demo/state"   # the demo's own state folder, started afresh
rm -rf "$HEARTBEAT_STATE_DIR"
find demo/triggers -type f ! -name .gitkeep -delete

echo "== validate the controls CSV"
.venv/bin/python -m harness validate

echo "== a trigger file lands for the upstream demo_orders_landed"
date -u +%FT%TZ > "demo/triggers/demo_orders_landed/orders_$(date -u +%Y%m%dT%H%M%S).done"

echo "== three ticks, 5 s apart: the first starts demo_orders_job, the next records how it ended"
.venv/bin/python -m harness run --interval 5 --max-ticks 3

echo "== what the job was handed"
cat "$HEARTBEAT_STATE_DIR"/local_runs/local-*/output.log

echo "== status"
.venv/bin/python -m harness status
