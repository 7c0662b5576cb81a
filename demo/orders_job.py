"""The demo's downstream job: prints the change range Heartbeat handed it."""

import json
import os

change_range = json.loads(os.environ["HEARTBEAT_CHANGE_RANGE"])
print(f"job {os.environ['HEARTBEAT_JOB_ID']} run {os.environ['HEARTBEAT_RUN_ID']}")
for upstream in change_range["upstreams"]:
    files = (upstream["to"] or {}).get("recent", [])
    print(f"  {upstream['sensor_source']}:{upstream['sensor_id']} from {upstream['from']} to {upstream['to']} ({len(files)} recent files)")
