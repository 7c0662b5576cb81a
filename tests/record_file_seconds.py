"""Writes tests/file_seconds.json, each test file's seconds (setup, call and teardown of its tests), from a
pytest JUnit report: the workers take the heaviest files of a layer first (tests/layers.py). Only the order
of the run depends on it, never a result; refresh it when a file's weight changes much:

    bash scripts/test.sh --junitxml=/tmp/suite.xml && .venv/bin/python -m tests.record_file_seconds /tmp/suite.xml
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from tests.layers import FILE_SECONDS


def file_seconds(report: Path) -> dict[str, float]:
    seconds: dict[str, float] = defaultdict(float)
    for case in ET.parse(report).iter("testcase"):
        seconds[case.attrib["classname"].replace(".", "/") + ".py"] += float(case.attrib.get("time", 0))
    return {name: round(s, 1) for name, s in sorted(seconds.items())}


if __name__ == "__main__":
    FILE_SECONDS.write_text(json.dumps(file_seconds(Path(sys.argv[1])), indent=1) + "\n")
