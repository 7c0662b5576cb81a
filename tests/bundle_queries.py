"""The SQL the bundle deploys for operators (the dashboard's datasets and widgets, the alerts' queries), read
from a resolved bundle (tests.bundle_resolution) and made ready for local Spark the way Databricks runs it:

  - parsed as Databricks SQL (sqlglot, dialect `databricks`): a query that does not parse fails here;
  - a dataset's table names completed with the dashboard's `dataset_catalog` and `dataset_schema` (what
    Databricks does with them), an alert's query taken as resolved (its names are the bundle's references);
  - a widget's query as the dashboard runs it over its dataset: its fields' expressions, grouped by those
    that aggregate nothing unless the widget shows its rows as they are (`disaggregated`);
  - then written as Spark SQL.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.qualify_tables import qualify_tables

from tests.bundle_resolution import ResolvedBundle

READ = "databricks"
WRITE = "spark"


def parse(sql: str) -> exp.Expression:
    """One statement of Databricks SQL (sqlglot.ParseError when it is not)."""
    statements = [s for s in sqlglot.parse(sql, read=READ) if s is not None]
    assert len(statements) == 1, f"one statement expected, found {len(statements)}:\n{sql}"
    return statements[0]


def tables(sql: str) -> set[str]:
    """The tables and views the query reads, as written (its own CTEs left out)."""
    tree = parse(sql)
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    return {".".join(p.name for p in t.parts) for t in tree.find_all(exp.Table) if t.name not in ctes}


@dataclass(frozen=True)
class Widget:
    page: str
    name: str
    dataset: str
    fields: list[dict[str, str]]
    disaggregated: bool
    spec: dict[str, Any]


@dataclass(frozen=True)
class Dashboard:
    datasets: dict[str, str]  # name -> the dataset's Databricks SQL, as in the file
    widgets: list[Widget]
    catalog: str
    schema: str

    def dataset_sql(self, name: str) -> str:
        """The dataset as Spark SQL, its tables in the dashboard's catalog and schema."""
        tree = qualify_tables(parse(self.datasets[name]), db=self.schema, catalog=self.catalog)
        return tree.sql(dialect=WRITE)

    def widget_sql(self, widget: Widget) -> str:
        """The widget's query over its dataset, as Spark SQL."""
        fields = [(f["name"], parse(f["expression"].replace("`*`", "*"))) for f in widget.fields]
        select = ", ".join(f"{e.sql(dialect=WRITE)} as `{name}`" for name, e in fields)
        grouped = [e.sql(dialect=WRITE) for _, e in fields if not e.find(exp.AggFunc)]
        group_by = "" if widget.disaggregated or len(grouped) == len(fields) else f" group by {', '.join(grouped)}"
        return f"select {select} from ({self.dataset_sql(widget.dataset)}) as dataset{group_by}"


def dashboard(bundle: ResolvedBundle, key: str = "heartbeat") -> Dashboard:
    resource = bundle.dashboard(key)
    body = json.loads(resource["serialized_dashboard"])
    datasets = {d["name"]: "".join(d.get("queryLines") or [d.get("query", "")]) for d in body["datasets"]}
    widgets = [
        Widget(
            page["name"],
            item["widget"]["name"],
            query["query"]["datasetName"],
            query["query"]["fields"],
            bool(query["query"].get("disaggregated")),
            item["widget"]["spec"],
        )
        for page in body["pages"]
        for item in page["layout"]
        for query in item["widget"].get("queries", [])
    ]
    return Dashboard(datasets, widgets, resource["dataset_catalog"], resource["dataset_schema"])


def alert_sql(bundle: ResolvedBundle, key: str) -> str:
    """The alert's query, resolved for the target, as Spark SQL."""
    return parse(bundle.alert(key)["query_text"]).sql(dialect=WRITE)
