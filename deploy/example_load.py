"""The example downstream job's work: read the change range the heartbeat handed the run."""

import argparse
import json

parser = argparse.ArgumentParser()
parser.add_argument("--run-context-id", default="")
parser.add_argument("--change-range", default="{}")
args = parser.parse_args()
for upstream in json.loads(args.change_range).get("upstreams", []):
    print(f"{upstream['sensor_source']} {upstream['sensor_id']}: from {upstream['from']} to {upstream['to']}"
          f" (run context {args.run_context_id})")
