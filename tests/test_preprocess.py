"""preprocess_query confinement: one SELECT only; ?upstream_key becomes one quoted identifier."""

from __future__ import annotations

import pytest
import sqlglot

from harness.core.errors import PreprocessQueryError
from harness.core.preprocess import as_written, check_query, of_new_data_alone, over_view, render


@pytest.mark.parametrize(
    "query, reason",
    [
        ("DROP TABLE sales.orders", "must be a SELECT, found DROP"),
        ("SELECT * FROM sensor_new_data; DROP TABLE sales.orders", "exactly one SELECT statement, found 2"),
        ("INSERT INTO t SELECT * FROM sensor_new_data", "must be a SELECT, found INSERT"),
        ("WITH x AS (SELECT 1) DELETE FROM t", "must"),
    ],
)
def test_preprocess_query_that_is_not_one_select_is_refused_with_a_reason(query: str, reason: str) -> None:
    # GIVEN a query that would change data or run two statements, WHEN it is checked, THEN it is refused
    problem = check_query(query)
    assert problem is not None and reason in problem
    with pytest.raises(PreprocessQueryError):
        render(query, "id")


def test_upstream_key_with_backticks_renders_as_one_identifier() -> None:
    # GIVEN an upstream_key trying to close its quotes and add a condition
    rendered = render("SELECT * FROM sensor_new_data WHERE ?upstream_key IS NULL", "id` IS NOT NULL OR `id")

    # WHEN the rendered query is parsed, THEN the WHERE clause tests one column, named exactly as given
    where = sqlglot.parse_one(rendered, read="spark").find(sqlglot.exp.Where)
    columns = [c.name for c in where.find_all(sqlglot.exp.Column)]
    assert columns == ["id` IS NOT NULL OR `id"] and where.find(sqlglot.exp.Or) is None


def test_placeholder_without_upstream_key_is_refused() -> None:
    # GIVEN ?upstream_key in a row without upstream_key, WHEN rendered, THEN refused with the reason
    with pytest.raises(PreprocessQueryError, match="the row has no upstream_key"):
        render("SELECT ?upstream_key FROM sensor_new_data", None)


def test_spark_positions_are_counted_in_the_query_as_written() -> None:
    # GIVEN a query whose second line Spark's message points at, in the query over_view made of it
    query = "SELECT *\nFROM sensor_new_data WHERE no_such_col > 1"
    made = over_view(query, "v")
    assert made.splitlines()[2] == "FROM sensor_new_data WHERE no_such_col > 1"
    # THEN the message names the line as written; a position in over_view's own first line stays
    message = "[UNRESOLVED_COLUMN] `no_such_col` cannot be resolved. SQLSTATE: 42703; line 3 pos 27;"
    assert as_written(message).endswith("; line 2 pos 27;")
    assert as_written("line 1 pos 5") == "line 1 pos 5"


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM sensor_new_data WHERE cast(value AS string) LIKE '%done%'",
        "SELECT 1 FROM sensor_new_data WHERE ?upstream_key > 5",
        "WITH marked AS (SELECT * FROM sensor_new_data WHERE flag) SELECT * FROM marked",
        "SELECT * FROM sensor_new_data WHERE get_json_object(cast(value AS string), '$.state') = 'done'",
        "SELECT * FROM sensor_new_data WHERE to_date(timestamp) = DATE'2026-01-01'",
    ],
)
def test_a_query_of_the_new_data_alone_is_known_as_such(query: str) -> None:
    # a query that returned no row over some new data returns none over it again: not run twice
    assert of_new_data_alone(query)


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM sensor_new_data WHERE to_date(timestamp) = current_date()",
        "SELECT * FROM sensor_new_data WHERE timestamp > now() - INTERVAL 1 HOUR",
        "SELECT * FROM sensor_new_data WHERE unix_timestamp() - unix_timestamp(timestamp) < 60",
        "SELECT * FROM sensor_new_data WHERE ts > date_sub(curdate(), 1)",
        "SELECT * FROM sensor_new_data WHERE rand() < 0.1",
        "SELECT * FROM sensor_new_data TABLESAMPLE (10 PERCENT)",
        "SELECT monotonically_increasing_id() AS n FROM sensor_new_data",
        "SELECT * FROM sensor_new_data WHERE current_user() = 'etl'",
        "SELECT * FROM sensor_new_data n JOIN sales.calendar c ON n.day = c.day",
        "SELECT * FROM sensor_new_data WHERE id IN (SELECT id FROM approved)",
        "SELECT * FROM default.sensor_new_data",
        "SELECT * FROM (",
    ],
)
def test_a_query_of_the_time_chance_or_another_table_is_not_of_the_new_data_alone(query: str) -> None:
    # its result may change while the new data does not: every tick runs it again
    assert not of_new_data_alone(query)
