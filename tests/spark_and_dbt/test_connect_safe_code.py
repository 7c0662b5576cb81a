"""The harness's own Spark code runs on Spark Connect (serverless, standard access mode): no module of
`harness/` or `adapter/` reaches for the classic session's context, the JVM gateway, the RDD API or
DBFS paths, none of which exist there. The one classic-only call (cancelling a check's jobs by tag on a
classic session, harness.sensors.context) sits behind `is_remote()`."""

from __future__ import annotations

import re

import pytest

from harness.core.config import PROJECT_DIR

pytestmark = pytest.mark.unit

FORBIDDEN = re.compile(r"\bsparkContext\b|\b_jvm\b|\b_jsc\b|\.rdd\b|\bRDD\b|\bdbfs:|/dbfs/|\bdbutils\.fs\b")


def test_no_module_uses_an_api_that_spark_connect_lacks() -> None:
    found = [
        f"{path.relative_to(PROJECT_DIR)}:{number}: {line.strip()}"
        for root in ("harness", "adapter")
        for path in sorted((PROJECT_DIR / root).rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if FORBIDDEN.search(line)
    ]
    assert found == []


def test_the_check_finds_a_classic_only_call() -> None:
    assert FORBIDDEN.search("jvm = spark.sparkContext._jvm") and FORBIDDEN.search("df.rdd.map(f)")
    assert FORBIDDEN.search("spark.read.load('dbfs:/tmp/x')")
