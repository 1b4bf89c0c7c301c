"""8. `trt-tui build` against a bare TensorRT-RTX build of the same model, as whole processes.

What a user waits for at the shell: process start to exit. Configurations, each a fresh
`python` process building the same model to a fresh engine path, interleaved over rounds:

- `bare`: a script that imports `tensorrt_rtx` and nothing of trt-tui, parses the ONNX, builds
  and writes the engine as trt-tui does (temporary file, fsync, rename); its only monitor notes when
  TensorRT's top phase starts and ends (light_inception_v2: ~50 callbacks that return at once);
- `process`: `python -m trt_tui build MODEL -o ENGINE --force` (the default executor: a child
  process per build; since this change a warm, pre-imported spare);
- `thread`: the same with `--executor thread`;
- with `--before DIR` (a checkout of older trt-tui code, e.g. `git archive BASE | tar -x -C DIR`),
  `process_before` and `thread_before` run that code instead, side by side in the same rounds.

Both codes are byte-compiled first (`compileall`, into the benchmarks' bytecode cache that
`common.measure_as_installed` sets up for every module), as a pip install leaves trt-tui: where
PYTHONDONTWRITEBYTECODE is set (as on the machines these figures come from) and there is no
bytecode, Python compiles trt-tui's ~10,000 lines at every start, ~0.15 s of CPU that an
installed copy never pays.

Then `parent_cpu`: the process executor's parent alone, which the CPU of the whole process tree
cannot show apart from its build child: `cli.main(["build", ...])` run in a fresh interpreter that
prints its own CPU time (RUSAGE_SELF) and whether it imported TensorRT, interleaved with the
`--before` code.

The model defaults to `light_inception_v2.onnx` from the onnx package's test data (~2 s to build
here), else the ResNet-50 sample. History goes to the work directory; the engine cache is bypassed
with `--force`. Reports medians, each configuration's ratio to `bare`, and the paired ratio (each
round against the same round's `bare`), which cancels the drift of a shared machine.

A build's wall time is also split in two: TensorRT's engine build itself (`build_serialized_network`
in the bare script; the "Building engine" phase trt-tui records in its history) and everything
outside it (the interpreter, imports, parsing, writing the engine, exit). The engine build's own
time moves ±10% between rounds on a shared machine, which hides a few percent; the time outside it
is steady, and the engine build's paired ratio says whether trt-tui slows the build itself. The
`modelled` ratio is (median bare engine build + a configuration's median time outside it) over
(the same + the bare build's time outside it).
"""

from __future__ import annotations

import compileall
import json
import os
import resource
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from common import REPO, Workdir, interleaved, loadavg, summary

BARE = r"""
import os, sys
import tensorrt_rtx as trt
model, output = sys.argv[1], sys.argv[2]
logger = trt.Logger(trt.Logger.WARNING)
builder = trt.Builder(logger)
network = builder.create_network(0)
parser = trt.OnnxParser(network, logger)
if not parser.parse_from_file(model):
    raise SystemExit("parse failed")
config = builder.create_builder_config()
import time

class Span(trt.IProgressMonitor):  # times TensorRT's top phase as trt-tui's history records it
    def __init__(self):
        trt.IProgressMonitor.__init__(self)
        self.started = self.finished = 0.0
    def phase_start(self, name, parent, steps):
        if parent is None:
            self.started = time.monotonic()
    def step_complete(self, name, step):
        return True
    def phase_finish(self, name):
        self.finished = time.monotonic()

config.progress_monitor = span = Span()
serialized = builder.build_serialized_network(network, config)
config.progress_monitor = None
print(span.finished - span.started)  # the engine build alone: trt-tui's "Building engine" phase
if serialized is None:
    raise SystemExit("build failed")
temp = output + ".bare.tmp"
with open(temp, "wb") as f:
    f.write(serialized)
    f.flush()
    os.fsync(f.fileno())
os.replace(temp, output)
"""


PARENT = r"""
import json, resource, sys
from trt_tui import cli
code = cli.main(sys.argv[1:])
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"code": code, "cpu": ru.ru_utime + ru.ru_stime, "tensorrt": "tensorrt_rtx" in sys.modules}))
"""


def default_model(work: Workdir) -> Path:
    try:
        import importlib.util

        spec = importlib.util.find_spec("onnx")
        if spec is not None and spec.origin:
            path = Path(spec.origin).parent / "backend/test/data/light/light_inception_v2.onnx"
            if path.exists():
                return path
    except (ImportError, ValueError):
        pass
    return work.model("resnet50")


def _env(work: Workdir, code: Path) -> dict:
    """This environment with `code` first on PYTHONPATH (kept, not replaced: on the GPU machine the
    project itself runs from PYTHONPATH)."""
    path = os.environ.get("PYTHONPATH")
    return dict(os.environ, PYTHONPATH=str(code) + (os.pathsep + path if path else ""),
                TRT_TUI_HISTORY=str(work.root / "buildwall-history.db"))


def run(work: Workdir, reps: int, model: Path | None = None, before: Path | None = None, log=print) -> dict:
    model = model or default_model(work)
    out_dir = work.root / "buildwall"
    out_dir.mkdir(exist_ok=True)
    configs = ["bare", "process", "thread"]
    if before is not None:
        configs += ["process_before", "thread_before"]
    times: dict[str, list[float]] = {c: [] for c in configs}
    cpu: dict[str, list[float]] = {c: [] for c in configs}
    engine: dict[str, list[float]] = {c: [] for c in configs}  # TensorRT's engine build alone

    def command(config: str, output: Path) -> tuple[list[str], dict]:
        if config == "bare":
            return [sys.executable, "-c", BARE, str(model), str(output)], _env(work, REPO)
        code = before if config.endswith("_before") else REPO
        executor = "thread" if config.startswith("thread") else None
        argv = [sys.executable, "-m", "trt_tui", "build", str(model), "-o", str(output), "--force"]
        if executor:
            argv += ["--executor", executor]
        return argv, _env(work, code)

    for code in {REPO, before} - {None}:
        compileall.compile_dir(str(code / "trt_tui"), quiet=1)
    log(f"  model {model} ({model.stat().st_size / 1e6:.1f} MB); warm-up: one build per configuration")
    for config in configs:  # page cache, TensorRT's own caches on disk, pyc files
        argv, env = command(config, out_dir / f"warm-{config}.engine")
        subprocess.run(argv, env=env, check=True, capture_output=True, cwd=str(work.root), timeout=300)
    load = []
    for rep, config in interleaved(configs, reps):
        load.append(loadavg()[0])
        output = out_dir / f"{config}-{rep}.engine"
        argv, env = command(config, output)
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=str(work.root), timeout=300)
        elapsed = time.perf_counter() - t
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        # CPU of the process and every descendant it reaped (build child, spare): less load-sensitive
        cpu[config].append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
        if proc.returncode != 0 or not output.exists():
            raise RuntimeError(f"{config}: exit {proc.returncode}: {proc.stderr[-2000:]}")
        output.unlink()
        times[config].append(elapsed)
        engine[config].append(float(proc.stdout.split()[-1]) if config == "bare" else _last_engine_span(work))
        log(f"  round {rep + 1}/{reps} {config:15s} {elapsed:6.3f} s wall, {cpu[config][-1]:6.3f} s CPU")
    result: dict = {"model": str(model), "reps": reps, "configs": {}, "loadavg": summary(load)}
    base = summary(times["bare"])["median"]
    cpu_base = summary(cpu["bare"])["median"]
    for config in configs:
        s = summary(times[config])
        s["samples"] = times[config]
        s["cpu"] = summary(cpu[config])
        s["cpu_samples"] = cpu[config]
        s["cpu_ratio_to_bare"] = s["cpu"]["median"] / cpu_base
        s["ratio_to_bare"] = s["median"] / base
        s["paired_ratio_median"] = summary([c / b for c, b in zip(times[config], times["bare"])])["median"]
        s["engine"] = summary(engine[config])
        s["engine_samples"] = engine[config]
        s["engine_paired_ratio_median"] = summary([c / b for c, b in zip(engine[config], engine["bare"])])["median"]
        outside = [t - e for t, e in zip(times[config], engine[config])]
        s["outside"] = summary(outside)
        s["outside_samples"] = outside
        result["configs"][config] = s
    # The bare build's engine time moves ±10% from round to round (the machine), more than the few
    # percent trt-tui adds. What trt-tui adds splits into time outside TensorRT's engine build (the
    # interpreter, imports, parsing, writing, exit: steady) and any slowing of the engine build itself
    # (its paired ratio). `modelled` puts the first on the median bare build.
    engine_base = result["configs"]["bare"]["engine"]["median"]
    outside_base = result["configs"]["bare"]["outside"]["median"]
    for config in configs:
        s = result["configs"][config]
        s["modelled_ratio"] = (engine_base + s["outside"]["median"]) / (engine_base + outside_base)
    for config in configs:
        s = result["configs"][config]
        log(f"  {config:15s} median {s['median']:6.3f} s  ratio {s['ratio_to_bare']:.3f}  paired"
            f" {s['paired_ratio_median']:.3f}  CPU {s['cpu']['median']:.3f} s ({s['cpu_ratio_to_bare']:.3f})")
    for config in configs:
        s = result["configs"][config]
        log(f"  {config:15s} engine build {s['engine']['median']:6.3f} s (paired {s['engine_paired_ratio_median']:.3f})"
            f"  outside it {s['outside']['median'] * 1e3:5.0f} ms (min {s['outside']['min'] * 1e3:4.0f})"
            f"  modelled ratio {s['modelled_ratio']:.3f}")
    log(f"  load average while measuring: {result['loadavg']['min']:.1f}–{result['loadavg']['max']:.1f}")
    result["parent_cpu"] = parent_cpu(work, reps, model, before, log)
    return result


def _last_engine_span(work: Workdir) -> float:
    """The "Building engine" phase of the build `trt-tui build` just recorded in its history."""
    db = sqlite3.connect(work.root / "buildwall-history.db")
    try:
        phases, = db.execute("SELECT phases FROM builds ORDER BY id DESC LIMIT 1").fetchone()
    finally:
        db.close()
    return float(json.loads(phases)["Building engine"])


def parent_cpu(work: Workdir, reps: int, model: Path, before: Path | None = None, log=print) -> dict:
    """CPU of the process executor's parent alone, this code and (with `before`) the older one."""
    codes = {"process": REPO, **({"process_before": before} if before is not None else {})}
    samples: dict[str, list[dict]] = {c: [] for c in codes}
    for rep, config in interleaved(list(codes), reps):
        output = work.root / "buildwall" / f"parent-{config}-{rep}.engine"
        proc = subprocess.run([sys.executable, "-c", PARENT, "build", str(model), "-o", str(output), "--force"],
                              env=_env(work, codes[config]), capture_output=True, text=True, cwd=str(work.root),
                              timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"parent {config}: exit {proc.returncode}: {proc.stderr[-2000:]}")
        samples[config].append(json.loads(proc.stdout.splitlines()[-1]))
        output.unlink(missing_ok=True)
    out = {}
    for config, runs in samples.items():
        out[config] = {"cpu": summary([r["cpu"] for r in runs]), "cpu_samples": [r["cpu"] for r in runs],
                       "imported_tensorrt": sorted({r["tensorrt"] for r in runs})}
        log(f"  parent alone, {config:15s}: CPU median {out[config]['cpu']['median']:.3f} s "
            f"(min {out[config]['cpu']['min']:.3f}); imported TensorRT: {out[config]['imported_tensorrt']}")
    return out


if __name__ == "__main__":  # python bench/buildwall.py [REPS] [BEFORE_DIR] [OUT.json] [--model ONNX]
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description="trt-tui build against a bare build, fresh processes")
    parser.add_argument("reps", type=int, nargs="?", default=3)
    parser.add_argument("before", type=Path, nargs="?", help="an older tree (git archive REV | tar -x -C DIR)")
    parser.add_argument("out", type=Path, nargs="?", help="write the result as JSON")
    parser.add_argument("--model", type=Path, help="default: light_inception_v2 from the onnx package")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    w = Workdir(Path(tempfile.mkdtemp(prefix="trt-tui-bench-", dir="/dev/shm")))
    try:
        w.prepare()
        result = run(w, args.reps, model=args.model, before=args.before)
    finally:
        w.cleanup()
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
