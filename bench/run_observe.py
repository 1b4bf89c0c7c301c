"""`trt-tui run` overhead: a plain build script, alone and under `trt-tui run --json`.

Two figures per model, interleaved (alone, observed, observed, alone, ...), medians:
- build: seconds `build_serialized_network` took, as the script itself measures it, so the hook's
  cost inside the program (tee monitor, tee logger, the reporter's sender thread) is seen apart from
- wall: the whole command, which adds trt-tui's start-up (import, socket, the pump) and shutdown.
A program that builds nothing (`python -c pass`) gives the fixed cost of `trt-tui run` alone.

    python bench/run_observe.py [--reps N] [--densenet] [--out FILE]   # default bench/results/run_observe.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SCRIPT = '''
import sys, time
import tensorrt_rtx as trt
logger = trt.Logger(trt.Logger.WARNING)
builder = trt.Builder(logger)
network = builder.create_network(0)
parser = trt.OnnxParser(network, logger)
assert parser.parse_from_file(sys.argv[1])
config = builder.create_builder_config()
start = time.perf_counter()
engine = builder.build_serialized_network(network, config)
print("build", time.perf_counter() - start)
'''


def median(xs: list[float]) -> float:
    xs = sorted(xs)
    n = len(xs)
    return (xs[n // 2] + xs[(n - 1) // 2]) / 2


def timed(cmd: list[str]) -> tuple[float, float | None]:
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=REPO).stdout
    wall = time.perf_counter() - start
    for line in out.splitlines():
        if line.startswith("build "):
            return wall, float(line.split()[1])
        if '"line": "build ' in line:
            return wall, float(json.loads(line)["line"].split()[1])
    return wall, None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--densenet", action="store_true", help="also the ~15 s DenseNet (2 rounds)")
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "run_observe.json"))
    args = parser.parse_args()
    from trt_tui.core.model.samples import write_samples

    work = Path(tempfile.mkdtemp(prefix="trt-tui-bench-run-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    names = ["mnist", "resnet50"] + (["densenet"] if args.densenet else [])
    write_samples(work, names)
    script = work / "build.py"
    script.write_text(SCRIPT)
    observed = [sys.executable, "-m", "trt_tui", "run", "--json", "--"]
    results = {}
    cases = [(n, [sys.executable, str(script), str(work / f"{n}.onnx")], args.reps if n != "densenet" else 2)
             for n in names]
    cases.append(("no build", [sys.executable, "-c", "pass"], args.reps))
    for name, cmd, reps in cases:
        samples = {"alone": [], "observed": []}
        for i in range(reps):
            order = ("alone", "observed") if i % 2 == 0 else ("observed", "alone")
            for mode in order:
                samples[mode].append(timed(cmd if mode == "alone" else observed + cmd))
        row = {}
        for mode, runs in samples.items():
            row[f"{mode}_wall"] = median([w for w, _ in runs])
            builds = [b for _, b in runs if b is not None]
            if builds:
                row[f"{mode}_build"] = median(builds)
        row["wall_ratio"] = row["observed_wall"] / row["alone_wall"]
        if "alone_build" in row:
            row["build_ratio"] = row["observed_build"] / row["alone_build"]
        row["reps"] = reps
        results[name] = row
        print(name, {k: round(v, 3) for k, v in row.items()}, flush=True)
    Path(args.out).write_text(json.dumps({"python": sys.version.split()[0], "cpus": os.cpu_count(),
                                          "load": os.getloadavg(), "results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
