"""`trt-tui build` against a bare TensorRT-RTX build, each a fresh process, interleaved, with the
malloc tuning's variants: `python bench/buildwall_ab.py ROUNDS OUT.json [BEFORE_DIR]` (the model:
light_inception_v2 from the onnx package, or `$AB_MODEL`).

- `bare`: a Python process that parses light_inception_v2 and builds it (no monitor, no trt-tui).
- `after`: `trt-tui build --force` (process executor, the default); `after_noarena`: the same with
  `MALLOC_ARENA_MAX=0` in the environment, which trt-tui leaves alone, so its child keeps glibc's
  per-thread arenas; `after_thread`: `--executor thread`.
- `before`: `trt-tui build` of an older tree (`git archive REV | tar -x -C BEFORE_DIR`), if given.

Wall time is the whole process's; CPU is the process tree's (RUSAGE_CHILDREN). Medians, ratios to
`bare`, and paired ratios (each round against the same round's bare build).
"""
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import onnx

# $AB_MODEL: another ONNX file (e.g. the ResNet-50 sample, `trt-tui samples DIR`)
M = os.environ.get("AB_MODEL") or str(Path(onnx.__file__).parent / "backend/test/data/light/light_inception_v2.onnx")
OUT = sys.argv[2]
n = int(sys.argv[1])
here = str(Path(__file__).resolve().parent.parent)
BEFORE = sys.argv[3] if len(sys.argv) > 3 else None
bare = f"""
import tensorrt_rtx as trt, sys
class L(trt.ILogger):
    def __init__(s): trt.ILogger.__init__(s)
    def log(s, sev, msg): pass
lg = L(); b = trt.Builder(lg); net = b.create_network(0); p = trt.OnnxParser(net, lg); assert p.parse_from_file({M!r})
s = b.build_serialized_network(net, b.create_builder_config()); open('/dev/shm/ab-bare.engine', 'wb').write(s)
"""
cfgs = {
 "bare": ([sys.executable, "-c", bare], {}, here),
 "after": ([sys.executable, "-m", "trt_tui", "build", M, "-o", "/dev/shm/ab-a.engine", "--force"], {}, here),
 "after_noarena": ([sys.executable, "-m", "trt_tui", "build", M, "-o", "/dev/shm/ab-b.engine", "--force"], {"MALLOC_ARENA_MAX": "0"}, here),
 "after_thread": ([sys.executable, "-m", "trt_tui", "build", M, "-o", "/dev/shm/ab-t.engine", "--force", "--executor", "thread"], {}, here),
 }
if BEFORE:
    path = os.pathsep.join(p for p in (BEFORE, os.environ.get("PYTHONPATH", "")) if p)
    cfgs["before"] = ([sys.executable, "-m", "trt_tui", "build", M, "-o", "/dev/shm/ab-c.engine", "--force"],
                      {"PYTHONPATH": path}, BEFORE)
res = {k: [] for k in cfgs}
keys = list(cfgs)
for r in range(n):
    for k in keys[r % len(keys):] + keys[:r % len(keys)]:
        argv, env, cwd = cfgs[k]
        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        p = subprocess.run(argv, env={**os.environ, **env, "TRT_TUI_HISTORY": "/dev/shm/ab-h.db"}, cwd=cwd, capture_output=True, text=True)
        w = time.perf_counter() - t
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        assert p.returncode == 0, (k, p.stderr[-500:])
        res[k].append((w, c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime))
b = statistics.median(x[0] for x in res["bare"])
bc = statistics.median(x[1] for x in res["bare"])
for k, v in res.items():
    w = statistics.median(x[0] for x in v)
    c = statistics.median(x[1] for x in v)
    pr = statistics.median(x[0] / y[0] for x, y in zip(v, res["bare"]))
    print(f"{k:14s} wall {w:.3f} s ratio {w/b:.3f} paired {pr:.3f} cpu {c:.2f} s ({c/bc:.3f})")
json.dump(res, open(OUT, "w"))
