"""A build's fixed cost and a batch near the machine's limit: `trt-tui build` against bare builds, side by side.

Two parts, each in one run, configurations interleaved (A B C, B C A, ...), whole processes:

- `single`: one model, one build: `bare` (a plain `tensorrt_rtx` script: parse, build, write as
  trt-tui does; `buildwall.BARE`), `process` (`python -m trt_tui build MODEL -o ENGINE --force`, the
  default executor) and `thread` (`--executor thread`). MNIST and ResNet-50 (the samples). Each
  configuration rebuilds its own engine path every round (the engine replaced, as a user's rebuild
  does; trt-tui's `--force`, so the engine cache does not skip it). For each:
  wall (process start to exit) and CPU (user + system of the process and every descendant it
  reaped: RUSAGE_CHILDREN), medians, and the ratio to `bare` (of the medians, and the median of
  each round's ratio to that round's bare build, which cancels a shared machine's drift).
- `batch`: the onnx package's nine `light_*` models. `ideal` is the total CPU time of one bare build
  of each (fresh processes, summed) divided by the cores this process may use (`capacity`):
  no batch runner can beat it on a CPU-bound workload. Then, interleaved: `bare loop` (the nine bare
  builds one after another), `bare, cores at once` (the bare builds as many at once as there are
  cores, longest first: a batch runner with no monitor; builds side by side can cost more CPU each
  than alone where the cores share caches or a physical core, and this shows how much) and
  `trt-tui` (`trt-tui build` of the nine, `--jobs auto`); wall and CPU,
  and `trt-tui`'s wall over the ideal; with `--before DIR`, that code's `trt-tui build` too (`trt-tui
  before`: its own default, `--jobs 2` there, models in the order given).

On a loaded machine (other suites on the same cores) wall times are noise; CPU time is steadier,
and the ratios of the same round still compare like with like. Everything runs byte-compiled
(`common.measure_as_installed`), on /dev/shm, with a history of the run's own.

    python bench/batch.py [--reps N] [--batch-reps N] [--only single|batch] [--before DIR] [--out FILE.json]

`--before DIR` (an older checkout: `git archive REV | tar -x -C DIR`) adds that code's `trt-tui build`
to the one-build part, in the same rounds (`process_before`, `thread_before`).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from buildwall import BARE
from common import REPO, Workdir, interleaved, loadavg, summary


def _light_models() -> list[Path]:
    import importlib.util

    spec = importlib.util.find_spec("onnx")
    if spec is None or not spec.origin:
        raise SystemExit("the batch needs the onnx package's test data (pip install onnx)")
    return sorted((Path(spec.origin).parent / "backend/test/data/light").glob("light_*.onnx"))


def _env(work: Workdir, code: Path = REPO) -> dict:
    path = os.environ.get("PYTHONPATH")
    return dict(os.environ, PYTHONPATH=str(code) + (os.pathsep + path if path else ""),
                TRT_TUI_HISTORY=str(work.root / "batch-history.db"))


def _measure(argv: list[str], env: dict, cwd: Path) -> tuple[float, float]:
    """(wall, CPU of the whole process tree) of one command run to its end."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=str(cwd), timeout=900)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:4]}...: exit {proc.returncode}: {proc.stderr[-2000:]}")
    return wall, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime


def _bare(model: Path, output: Path) -> list[str]:
    return [sys.executable, "-c", BARE, str(model), str(output)]


def _trt_tui(models: list[Path], output: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "trt_tui", "build", *map(str, models), "-o", str(output), "--force", *extra]


def _single_argv(model: Path, config: str, output: Path) -> list[str]:
    """One build of `model` to `output`, replacing the engine there, as a user rebuilding it does."""
    if config == "bare":
        return _bare(model, output)
    return _trt_tui([model], output, *(["--executor", "thread"] if config.startswith("thread") else []))


def _bare_pool(models: list[Path], cores: int, out: Path, env: dict, cwd: Path,
               each: dict[str, tuple[float, float]]) -> tuple[float, float]:
    """The bare builds, `cores` at once, the longest (by its measured single build) first: the best a
    batch runner with no monitor does on this machine. (wall, CPU of every build process)."""
    from concurrent.futures import ThreadPoolExecutor

    order = sorted(models, key=lambda m: -each[m.name][0])
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    with ThreadPoolExecutor(cores) as pool:
        for proc in pool.map(lambda m: subprocess.run(_bare(m, out / f"{m.stem}.pool.engine"), env=env,
                                                      capture_output=True, cwd=str(cwd), timeout=900), order):
            if proc.returncode != 0:
                raise RuntimeError(f"bare build: exit {proc.returncode}: {proc.stderr[-2000:]!r}")
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime


def _table(rows: list[tuple], header: tuple) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    return "\n".join([line(header), "| " + " | ".join("-" * w for w in widths) + " |", *map(line, rows)])


def single(work: Workdir, reps: int, before: Path | None = None, log=print) -> dict:
    out = work.root / "single"
    out.mkdir(exist_ok=True)
    configs = ["bare", "process", "thread"] + (["process_before", "thread_before"] if before is not None else [])
    envs = {c: _env(work, before if c.endswith("_before") and before is not None else REPO) for c in configs}
    result: dict = {}
    for name in ("mnist", "resnet50"):
        model = work.model(name)
        for config in configs:  # warm-up: page cache, bytecode, TensorRT's caches on disk
            _measure(_single_argv(model, config, out / f"{name}-{config}.engine"), envs[config], work.root)
        samples: dict[str, list[tuple[float, float]]] = {c: [] for c in configs}
        for _, config in interleaved(configs, reps):
            engine = out / f"{name}-{config}.engine"
            samples[config].append(_measure(_single_argv(model, config, engine), envs[config], work.root))
        base_wall = summary([w for w, _ in samples["bare"]])["median"]
        base_cpu = summary([c for _, c in samples["bare"]])["median"]
        result[name] = {}
        for config in configs:
            walls, cpus = [w for w, _ in samples[config]], [c for _, c in samples[config]]
            result[name][config] = {
                "wall": summary(walls), "cpu": summary(cpus), "wall_samples": walls, "cpu_samples": cpus,
                "wall_ratio": summary(walls)["median"] / base_wall, "cpu_ratio": summary(cpus)["median"] / base_cpu,
                "paired_wall_ratio": summary([w / b for (w, _), (b, _) in zip(samples[config], samples["bare"])])["median"],
                "paired_cpu_ratio": summary([c / b for (_, c), (_, b) in zip(samples[config], samples["bare"])])["median"],
            }
    rows = [(name, config, f"{r['wall']['median']:.3f}", f"{r['wall_ratio']:.2f}× ({r['paired_wall_ratio']:.2f}×)",
             f"{r['cpu']['median']:.3f}", f"{r['cpu_ratio']:.2f}× ({r['paired_cpu_ratio']:.2f}×)")
            for name, by in result.items() for config, r in by.items()]
    log(f"\nOne build ({reps} interleaved rounds; ratio of medians to bare, paired median in brackets):")
    log(_table(rows, ("model", "config", "wall s", "wall / bare", "CPU s", "CPU / bare")))
    return result


def batch(work: Workdir, reps: int, before: Path | None = None, log=print) -> dict:
    sys.path.insert(0, str(REPO))
    from trt_tui.core.execution.capacity import capacity

    models, env = _light_models(), _env(work)
    cores = capacity().cores
    out = work.root / "batch"
    out.mkdir(exist_ok=True)
    each = {}
    for model in models:  # one bare build of each: the work the batch has to do
        each[model.name] = _measure(_bare(model, out / f"{model.stem}.engine"), env, work.root)
    busiest = max(each, key=lambda n: each[n][1] / each[n][0])
    log(f"  one bare build keeps at most {each[busiest][1] / each[busiest][0]:.2f} cores busy ({busiest}: CPU ÷ wall;"
        " `capacity.BUILD_THREADS`)")
    total_cpu = sum(c for _, c in each.values())
    ideal = total_cpu / cores
    configs = ["bare loop", "bare, cores at once", "trt-tui"] + (["trt-tui before"] if before is not None else [])
    before_env = _env(work, before) if before is not None else env
    samples: dict[str, list[tuple[float, float]]] = {c: [] for c in configs}
    for rep, config in interleaved(configs, reps):
        if config == "bare loop":
            walls_cpus = [_measure(_bare(m, out / f"{m.stem}.engine"), env, work.root) for m in models]
            samples[config].append((sum(w for w, _ in walls_cpus), sum(c for _, c in walls_cpus)))
        elif config == "bare, cores at once":
            samples[config].append(_bare_pool(models, cores, out, env, work.root, each))
        else:
            samples[config].append(_measure(_trt_tui(models, Path(f"{out}/")), before_env if config == "trt-tui before"
                                            else env, work.root))
        log(f"  round {rep + 1}/{reps} {config:9s} {samples[config][-1][0]:6.2f} s wall, {samples[config][-1][1]:6.2f} s CPU")
    result: dict = {"models": [m.name for m in models], "cores": cores, "single_builds": each,
                    "cores_busy_per_build": {n: c / w for n, (w, c) in each.items()},
                    "total_single_cpu": total_cpu, "ideal_wall": ideal, "configs": {}}
    rows = [("ideal (CPU ÷ cores)", f"{ideal:.2f}", "1.00×", f"{total_cpu:.2f}")]
    for config in configs:
        walls, cpus = [w for w, _ in samples[config]], [c for _, c in samples[config]]
        r = result["configs"][config] = {"wall": summary(walls), "cpu": summary(cpus), "wall_samples": walls,
                                         "cpu_samples": cpus, "over_ideal": summary(walls)["median"] / ideal}
        rows.append((config, f"{r['wall']['median']:.2f}", f"{r['over_ideal']:.2f}×", f"{r['cpu']['median']:.2f}"))
    log(f"\nThe nine light models on {cores} cores ({reps} interleaved rounds, medians):")
    log(_table(rows, ("run", "wall s", "wall / ideal", "CPU s")))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7, help="rounds of the one-build part")
    parser.add_argument("--batch-reps", type=int, default=3, help="rounds of the batch part")
    parser.add_argument("--only", choices=("single", "batch"))
    parser.add_argument("--out", type=Path, help="write the result as JSON")
    parser.add_argument("--before", type=Path, help="an older tree (git archive REV | tar -x -C DIR): its"
                        " `trt-tui build` side by side in the one-build part (process_before, thread_before)")
    args = parser.parse_args()
    for code in {REPO, args.before} - {None}:
        compileall.compile_dir(str(code / "trt_tui"), quiet=1)
    work = Workdir(Path(tempfile.mkdtemp(prefix="trt-tui-bench-", dir="/dev/shm")))
    result: dict = {"loadavg_before": loadavg()}
    try:
        work.prepare()
        if args.only in (None, "single"):
            result["single"] = single(work, args.reps, args.before)
        if args.only in (None, "batch"):
            result["batch"] = batch(work, args.batch_reps, args.before)
    finally:
        work.cleanup()
    result["loadavg_after"] = loadavg()
    print(f"\nload average before / after: {result['loadavg_before'][0]:.1f} / {result['loadavg_after'][0]:.1f}"
          " (on a loaded machine wall times are noise; compare CPU, and ratios within a round)")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
