"""preprocess_query: exactly one SELECT over the view `sensor_new_data`, with `?upstream_key` replaced
by the backtick-quoted column name. Checked with sqlglot (Spark dialect) before Spark ever sees it."""

from __future__ import annotations

import functools
import re

from harness.core.errors import PreprocessQueryError

PLACEHOLDER = "?upstream_key"
_POSITION = re.compile(r"\bline (\d+) pos (\d+)")  # where Spark's parser or analyzer points in a query
# What a query that only reads data never holds (sqlglot's expression classes of these names).
_FORBIDDEN = (
    "Insert",
    "Delete",
    "Update",
    "Merge",
    "Drop",
    "Create",
    "Alter",
    "Command",
    "TruncateTable",
    "Use",
    "Set",
)


# Functions whose value is not the new data's alone (the time, randomness, the session, the file read):
# sqlglot's expression classes, and the names it leaves as anonymous functions.
_NOT_OF_THE_DATA = (
    "CurrentDate",
    "CurrentTimestamp",
    "CurrentTime",
    "CurrentDatetime",
    "CurrentTimezone",
    "CurrentUser",
    "CurrentSchema",
    "CurrentCatalog",
    "Localtimestamp",
    "Localtime",
    "Rand",
    "Randn",
    "Uuid",
    "Shuffle",
)
_ANONYMOUS_NOT_OF_THE_DATA = re.compile(
    r"^(now|curdate|curtime|current_\w*|localtime\w*|unix_timestamp|rand\w*|uuid|shuffle|"
    r"monotonically_increasing_id|spark_partition_id|input_file_\w*|session_user|user)$",
    re.IGNORECASE,
)


def quote_identifier(name: str) -> str:
    """Quote a column name for Spark SQL: backticks, with embedded backticks doubled."""
    return "`" + name.replace("`", "``") + "`"


def check_query(query: str) -> str | None:
    """Return why the query is refused, or None when it is one SELECT. sqlglot (0.05 s to import) is
    imported here, by a process that checks a query: a cron tick whose controls CSV did not change
    checks none."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError

    forbidden = tuple(getattr(exp, name) for name in _FORBIDDEN)
    text = query.replace(PLACEHOLDER, "`__upstream_key__`")
    try:
        statements = [s for s in sqlglot.parse(text, read="spark") if s is not None]
    except ParseError as exc:
        first = str(exc).splitlines()[0]
        return f"preprocess_query does not parse as Spark SQL: {first}"
    if len(statements) != 1:
        return f"preprocess_query must be exactly one SELECT statement, found {len(statements)} statements"
    statement = statements[0]
    if not isinstance(statement, exp.Query):
        return f"preprocess_query must be a SELECT, found {statement.key.upper()}"
    for node in statement.walk():
        if isinstance(node, forbidden):
            return f"preprocess_query must only read data, found {node.key.upper()}"
    return None


def render(query: str, upstream_key: str | None) -> str:
    """The query Spark runs: validated, with ?upstream_key replaced by the quoted column name."""
    problem = check_query(query)
    if problem:
        raise PreprocessQueryError(problem)
    if PLACEHOLDER in query:
        if not upstream_key:
            raise PreprocessQueryError("preprocess_query uses ?upstream_key but the row has no upstream_key")
        query = query.replace(PLACEHOLDER, quote_identifier(upstream_key))
    return query


def over_view(query: str, view: str) -> str:
    """The rendered query reading the temporary view `view` as `sensor_new_data` (a CTE around it; Spark
    resolves CTE names inside a subquery, also when the query has its own WITH)."""
    body = query.strip().rstrip(";")  # on a line of its own: a trailing comment ends there
    return f"WITH sensor_new_data AS (SELECT * FROM {view}) SELECT * FROM (\n{body}\n) AS preprocess_query"


def as_written(message: str) -> str:
    """Spark's message about the query `over_view` made, its `line N pos M` counted in the query as
    written (over_view puts it on the lines after its own first)."""
    return _POSITION.sub(
        lambda m: f"line {int(m.group(1)) - 1} pos {m.group(2)}" if int(m.group(1)) > 1 else m.group(0), message
    )


@functools.lru_cache(maxsize=1024)  # each tick asks it of the same queries: parsed once a process
def of_new_data_alone(query: str) -> bool:
    """Whether the query's result is a function of `sensor_new_data` alone: it reads no other table and
    calls no function of the time, of chance or of the session. Such a query that returned no row over
    some new data returns none over the same data again, so a tick need not run it again (sensing keeps
    what it ran it over); any other query, or one sqlglot cannot read, is run at every tick."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError

    try:
        statement = sqlglot.parse_one(query.replace(PLACEHOLDER, "`__upstream_key__`"), read="spark")
    except ParseError:
        return False
    named = {cte.alias_or_name.lower() for cte in statement.find_all(exp.CTE)} | {"sensor_new_data"}
    for table in statement.find_all(exp.Table):
        if table.args.get("db") or table.args.get("catalog") or table.name.lower() not in named:
            return False
    if any(statement.find_all(exp.TableSample)):
        return False
    banned = tuple(getattr(exp, name) for name in _NOT_OF_THE_DATA if hasattr(exp, name))
    for node in statement.find_all(exp.Func):
        if isinstance(node, banned):
            return False
        if isinstance(node, exp.Anonymous) and _ANONYMOUS_NOT_OF_THE_DATA.match(node.name):
            return False
    return True
