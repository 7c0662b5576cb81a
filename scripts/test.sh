#!/usr/bin/env bash
# Installs everything, then runs the whole test suite (real Spark, dbt, PostgreSQL, Kafka mock cluster,
# Delta tables, and a Jobs API server on 127.0.0.1).
#
# Without arguments: every test, on two workers (pytest-xdist), one per core. Each worker is a test
# session of its own (its own SparkSession, metastore and servers) and takes whole test files, heaviest
# layer first and, within a layer, heaviest file first (tests/layers.py, tests/file_seconds.json), so
# that files sharing a built scenario build it once and both workers finish together. With arguments: one session of exactly those (for example `bash scripts/test.sh -m
# unit`, or a test file).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export SPARK_LOCAL_IP=127.0.0.1
pytest=(.venv/bin/python -m pytest -q -p no:cacheprovider --durations=15)
if [ $# -gt 0 ]; then
  exec "${pytest[@]}" "$@"
fi
exec "${pytest[@]}" -n 2 --dist loadfile --no-loadscope-reorder
