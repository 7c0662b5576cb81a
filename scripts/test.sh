#!/usr/bin/env bash
# Installs everything, then runs the whole test suite (real Spark, dbt, PostgreSQL, Kafka mock cluster,
# Delta tables, and a Jobs API server on 127.0.0.1).
#
# Without arguments: every test, in two test sessions side by side. The unit and scenario layers run in
# one (its one SparkSession keeps about 1.5 of the 2 cores busy); the process layer runs beside it, in
# a session of its own, whose tests mostly wait for the processes they start. Its output follows the
# first session's; the command fails when either does. With arguments: one session of exactly those
# (for example `bash scripts/test.sh -m unit`, or a test file).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export SPARK_LOCAL_IP=127.0.0.1
pytest=(.venv/bin/python -m pytest -q -p no:cacheprovider --durations=15)
if [ $# -gt 0 ]; then
  exec "${pytest[@]}" "$@"
fi

process_log=$(mktemp -t heartbeat-process-layer.XXXXXX)
"${pytest[@]}" -m process >"$process_log" 2>&1 &
process_session=$!
trap 'kill "$process_session" 2>/dev/null || true' INT TERM

status=0
"${pytest[@]}" -m "not process" || status=$?
process_status=0
wait "$process_session" || process_status=$?
echo
echo "=================== the process layer (its own session, run beside the others) ==================="
cat "$process_log"
rm -f "$process_log"
if [ "$status" -eq 0 ]; then
  status=$process_status
fi
exit "$status"
