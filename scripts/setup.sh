#!/usr/bin/env bash
# Installs everything Heartbeat needs on a fresh Debian machine: Java, PostgreSQL (for the
# JDBC/SAP sensor tests), the JDBC driver jars, and a pinned Python virtualenv in .venv.
# Safe to run again: every step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

apt_packages=(openjdk-17-jre-headless postgresql-15 libpostgresql-jdbc-java libxerial-sqlite-jdbc-java procps
              chromium)  # chromium: the report page is opened headless in tests/views/test_dependency_graph.py
missing=()
for pkg in "${apt_packages[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Every process (a cron tick, `status`, dbt, each test's process) imports its packages from bytecode, as
# any pip install leaves them. Python writes none itself where PYTHONDONTWRITEBYTECODE is set (as on CI's
# machines): there every process compiled dbt, pyspark and the clients from source again, about 7 s of
# CPU a process that imports them, 0.3 s of `status`. About 5 s here, on both cores, once per install.
compile_site_packages() {
  .venv/bin/python -m compileall -q -j 0 "$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" >/dev/null
}

python_bin="${PYTHON:-python3.11}"
command -v "$python_bin" >/dev/null || python_bin=python3
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($python_bin --version)"
  "$python_bin" -m venv .venv
fi
uv_version=0.13.9  # the installer of requirements.txt (pinned like the packages it installs)
stamp=.venv/.requirements.sha256
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing pinned Python packages (requirements.txt)"
  # uv downloads and installs the locked set side by side (on 2 cores: 37 s from an empty cache, pip 89 s;
  # the same packages either way). Where uv cannot be had or fails, pip installs the same file.
  # Neither compiles (then compileall on every core, below: pip compiles one module at a time).
  if ! { .venv/bin/pip install --quiet --disable-pip-version-check "uv==$uv_version" 2> >(grep -v "^WARNING: Location" >&2) \
         && .venv/bin/uv pip install --quiet --python .venv/bin/python -r requirements.txt; }; then
    echo "setup: uv could not install requirements.txt; installing with pip"
    .venv/bin/pip install --quiet --no-compile --disable-pip-version-check -r requirements.txt 2> >(grep -v "^WARNING: Location" >&2)
  fi
  compile_site_packages
  echo "$want" > "$stamp"
fi
# Heartbeat itself (editable) and its dbt adapter (`heartbeat`: dbt-spark guarded by the state lock).
stamp=.venv/.project.sha256
# The adapter installs as a copy (dbt is a namespace package): any change to its files reinstalls it.
want=$( (cat pyproject.toml adapter/pyproject.toml; find adapter/dbt -type f \( -name '*.py' -o -name '*.yml' -o -name '*.sql' \) \
         | sort | xargs cat) | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing heartbeat and its dbt adapter"
  # pip compiles the adapter's copy as it installs it, PYTHONDONTWRITEBYTECODE or not (the site-packages'
  # compile again took 5 s to find nothing else)
  .venv/bin/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e . ./adapter \
    2> >(grep -v "^WARNING: Location" >&2)
  echo "$want" > "$stamp"
fi
# The harness's own modules (an editable install): compileall writes only what changed since.
.venv/bin/python -m compileall -q -j 0 harness >/dev/null
# The JVM's class-data archive (harness/platform/jvm_options.py): Spark starts in about half the time with it.
if [ ! -f "$(.venv/bin/python -c 'from harness.platform.jvm_options import archive_path; print(archive_path())')" ]; then
  echo "setup: making the JVM's class archive for Spark's start-up (about a minute, once)"
  SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python -m harness.platform.jvm_options >/dev/null
fi
echo "setup: ready ($(.venv/bin/python --version), $(java -version 2>&1 | head -1))"
