#!/usr/bin/env bash
# Installs everything, then runs the whole test suite (real Spark, dbt, PostgreSQL, Kafka mock cluster,
# Delta tables, and a Jobs API server on 127.0.0.1).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export SPARK_LOCAL_IP=127.0.0.1
exec .venv/bin/python -m pytest -q -p no:cacheprovider --durations=15 "$@"
