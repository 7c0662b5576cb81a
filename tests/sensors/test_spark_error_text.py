"""What a check's failure says of a Spark or JDBC error (harness.sensors.spark_sql.spark_error_text): the Java
exception's own line, not py4j's wrapper around it."""

from __future__ import annotations

import pytest

from harness.sensors.spark_sql import spark_error_text

pytestmark = pytest.mark.unit


class JavaException:
    def __init__(self, text: str) -> None:
        self.text = text

    def toString(self) -> str:  # noqa: N802 - py4j's name
        return self.text


class Py4JLike(Exception):
    """What py4j raises for a Java exception: its text starts with the call, the cause is on the object."""

    def __init__(self, java: str) -> None:
        super().__init__("An error occurred while calling o114.count.\n: " + java)
        self.java_exception = JavaException(java)


def test_a_source_that_stopped_answering_mid_read_is_named_by_its_java_exception() -> None:
    refused = "org.postgresql.util.PSQLException: Connection to 127.0.0.1:34999 refused."
    assert spark_error_text(Py4JLike(refused)) == refused


def test_an_analysis_error_keeps_its_first_line() -> None:
    error = Exception("[UNRESOLVED_COLUMN.WITH_SUGGESTION] no_such_col cannot be resolved. line 2 pos 40\n\nplan ...")
    assert (
        spark_error_text(error) == "[UNRESOLVED_COLUMN.WITH_SUGGESTION] no_such_col cannot be resolved. line 2 pos 40"
    )
