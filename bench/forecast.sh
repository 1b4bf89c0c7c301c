#!/usr/bin/env bash
# Memory forecast against the measured peak: each sample built twice (mnist, resnet50, densenet) into a fresh
# history, process executor; prints the `queued` events' forecast and the final events' peak as JSON lines.
#   bash bench/forecast.sh > bench/results/forecast.jsonl
set -euo pipefail
D=$(mktemp -d "${TMPDIR:-/dev/shm}/trt-tui-forecast-XXXX")
trap 'rm -rf "$D"' EXIT
python -m trt_tui samples "$D" > /dev/null
for m in mnist mnist resnet50 resnet50 densenet densenet; do
  python -m trt_tui build "$D/$m.onnx" -o "$D/$m.engine" --force --json --history "$D/h.db"
done | python -c '
import json, sys
for line in sys.stdin:
    e = json.loads(line)
    if e.get("event") == "state" and (e["state"] == "queued" or e.get("peak_rss_bytes")):
        print(json.dumps({k: e.get(k) for k in ("model", "state", "forecast", "peak_rss_bytes")}))
'
