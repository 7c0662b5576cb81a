"""The demo's downstream job: prints the change range Heartbeat handed it, then reads exactly that range
with `harness.consume` (here: the trigger files that landed in it) on a Spark session of its own."""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the harness package, when run from anywhere

from pyspark.sql import SparkSession  # noqa: E402

from harness.consume import read_range  # noqa: E402
from harness.platform.spark import LOG4J_CONFIG, jvm_started_apart  # noqa: E402

change_range = json.loads(os.environ["HEARTBEAT_CHANGE_RANGE"])
print(f"job {os.environ['HEARTBEAT_JOB_ID']} run {os.environ['HEARTBEAT_RUN_ID']}")
for upstream in change_range["upstreams"]:
    print(f"  {upstream['sensor_source']}:{upstream['sensor_id']} from {upstream['from']} to {upstream['to']}")

# Its own local session (no metastore: the heartbeat's state folder is the heartbeat's), started quietly.
with jvm_started_apart(Path(os.devnull)):
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("demo-orders-job")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={LOG4J_CONFIG}")
        .getOrCreate()
    )
for label, frame in read_range(spark).items():
    print(f"the range of {label}, read with harness.consume:")
    frame.orderBy("landed").show(truncate=False)
spark.stop()
