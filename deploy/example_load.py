"""The example downstream job's work: read the change range the heartbeat handed the run.

A range too large for a job parameter arrives by reference: `{"range_file": <path on the heartbeat's
state volume>, ...}` (the job's identity needs READ VOLUME on it). With the heartbeat's wheel installed,
`harness.refresh.change_range.parse` (or `harness.consume.read_range`) reads either form.
"""

import argparse
import json

parser = argparse.ArgumentParser()
parser.add_argument("--run-context-id", default="")
parser.add_argument("--change-range", default="{}")
args = parser.parse_args()
change_range = json.loads(args.change_range)
if "range_file" in change_range:
    with open(change_range["range_file"]) as handle:
        change_range = json.load(handle)
for upstream in change_range.get("upstreams", []):
    print(
        f"{upstream['sensor_source']} {upstream['sensor_id']}: from {upstream['from']} to {upstream['to']}"
        f" (run context {args.run_context_id})"
    )
