"""A Spark Connect server in its own process, standing in for Databricks serverless compute: its clients
get a Spark Connect session (no Spark context, no JVM access), with a Hive metastore and a warehouse in
`state_dir`. Run as `python tests/connect_server.py PORT STATE_DIR` with SPARK_CONNECT_AUTHENTICATE_TOKEN
set; clients connect to `sc://localhost:PORT` with the same token in their environment.

Once listening it prints `READY`; then each line read from stdin is a SQL statement run on the server
(the tests create and fill upstream tables this way), answered by `OK` or `ERROR <message>`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

LOG4J = Path(__file__).resolve().parent.parent / "harness" / "platform" / "log4j2.properties"


def main(port: str, state_dir: str) -> None:
    state = Path(state_dir)
    state.mkdir(parents=True, exist_ok=True)
    settings = {
        "spark.connect.grpc.binding.port": port,
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(state / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={state / 'metastore_db'};create=true",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={state} -Dlog4j2.configurationFile={LOG4J}",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "4",
        "spark.ui.enabled": "false",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.host": "127.0.0.1",
    }
    # pyspark's own local server, on this port (`remote("local")` would connect to the default port)
    RemoteSparkSession._start_connect_server("local[2]", settings)
    spark = RemoteSparkSession.builder.remote(f"sc://localhost:{port}").getOrCreate()
    spark.sql("SELECT 1").collect()
    print("READY", flush=True)
    for line in sys.stdin:
        statement = line.strip()
        if not statement:
            continue
        try:
            spark.sql(statement).collect()
            print("OK", flush=True)
        except Exception as exc:  # noqa: BLE001 - reported to the test, which fails with it
            print("ERROR " + str(exc).replace("\n", " ")[:2000], flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
