"""A batch on a many-core host: the onnx package's backend test models, a bare loop against
`trt-tui build --jobs J`, wall time against J.

Nothing is downloaded: the models are the ones the installed `onnx` package ships
(`onnx/backend/test/data/{light,simple,pytorch-converted,pytorch-operator,node,real}`, 149 with
onnx 1.23), each copied under a name of its own (most are `model.onnx`) into a work directory.

1. A probe, not timed: each model built once by a plain `tensorrt_rtx` script (`buildwall.BARE`:
   parse, build, write as trt-tui does), one after another. It says which models build at all with
   this TensorRT-RTX (the rest are left out of every run and listed), orders the pool below, and warms
   the page cache and TensorRT's caches (a first, cold pass took 40% more CPU than the next).
2. Interleaved over `--reps` rounds: `bare loop` (the same bare builds one after another; its CPU,
   summed and divided by the cores this process may use (`capacity`), is the `ideal`, what no batch
   runner beats on a CPU-bound workload), `bare, cores at once` (the bare builds as many at once as
   there are cores, longest first: a batch runner with no monitor) and `trt-tui build MODELS -o DIR/
   --force --jobs J` for each J of `--jobs` (default 1,2,4,8,16,auto). Wall is process start to exit,
   CPU is user + system of the whole process tree.

`--limit N` takes the first N models (sorted by directory and name, light models first); `--max-seconds S`
starts no new configuration once S seconds have passed (what ran is written; what did not is listed),
so that a lease of a GPU host is not overrun. On 16 cores the whole run (149 models, 1 round) is
expected to take about 5 minutes.

    python bench/scaling.py --out DIR [--jobs 1,2,4,8,16,auto] [--reps 1] [--limit N] [--max-seconds 420]
                            [--before DIR --before-jobs 16,auto]

`--before DIR` (an older checkout: `git archive REV trt_tui | tar -x -C DIR`) adds that code's `trt-tui
build --jobs J` for each J of `--before-jobs` (`trt-tui before --jobs J`), in the same rounds.

Writes DIR/scaling.json and DIR/scaling.md (the table of jobs against wall time).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from batch import _bare, _bare_pool, _env, _table
from common import REPO, Workdir, interleaved, loadavg, summary

SETS = ("light", "simple", "pytorch-converted", "pytorch-operator", "node", "real")


def onnx_test_models() -> list[Path]:
    """Every ONNX model of the installed onnx package's backend test data, light models first."""
    import importlib.util

    spec = importlib.util.find_spec("onnx")
    if spec is None or not spec.origin:
        raise SystemExit("scaling.py needs the onnx package (its backend test data holds the models)")
    data = Path(spec.origin).parent / "backend" / "test" / "data"
    return [model for name in SETS for model in sorted((data / name).rglob("*.onnx"))]


def staged(models: list[Path], directory: Path) -> list[Path]:
    """Copies of `models` under names of their own (`simple__test_sign_model.onnx`): most are called
    `model.onnx`, and `trt-tui build -o DIR/` names each engine after its model."""
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for model in models:
        parts = model.parts[model.parts.index("data") + 1:]
        name = parts[-1] if model.name != "model.onnx" else "__".join(parts[:-1]) + ".onnx"
        target = directory / name.replace("-", "_")
        if not target.exists():
            shutil.copyfile(model, target)
        out.append(target)
    return out


def _run(argv: list[str], env: dict, cwd: Path) -> tuple[float, float, int, str]:
    """(wall, CPU of the process tree, exit code, the lines that say "at once" and stderr's tail) of one
    command run to its end."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=str(cwd), timeout=1800)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    said = [line for line in (proc.stdout + proc.stderr).splitlines() if "at once" in line]
    return wall, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, proc.returncode, "\n".join(
        [*said, proc.stderr[-1500:]])


def _trt_tui_argv(models: list[Path], out: Path, jobs: str) -> list[str]:
    return [sys.executable, "-m", "trt_tui", "build", *map(str, models), "-o", f"{out}/", "--force",
            "--jobs", jobs, "--format", "lines"]


def bare_loop(models: list[Path], out: Path, env: dict, cwd: Path, log=print) -> dict[str, tuple[float, float]]:
    """Each model's bare build, one after another: name -> (wall, CPU); models that fail are left out."""
    each: dict[str, tuple[float, float]] = {}
    failed = []
    for model in models:
        wall, cpu, code, _ = _run(_bare(model, out / f"{model.stem}.engine"), env, cwd)
        if code == 0:
            each[model.name] = (wall, cpu)
        else:
            failed.append(model.name)
    log(f"  probe: {len(each)} of {len(models)} models build ({sum(w for w, _ in each.values()):.1f} s wall,"
        f" {sum(c for _, c in each.values()):.1f} s CPU); {len(failed)} do not")
    return each


def run(models: list[Path], work: Workdir, jobs: list[str], reps: int, max_seconds: float, log=print,
        before: Path | None = None, before_jobs: tuple[str, ...] = ()) -> dict:
    sys.path.insert(0, str(REPO))
    from trt_tui.core.execution.capacity import capacity

    started = time.monotonic()
    env, cwd = _env(work), work.root
    cores = capacity().cores
    out = work.root / "engines"
    out.mkdir(exist_ok=True)
    each = bare_loop(models, out, env, cwd, log)
    buildable = [m for m in models if m.name in each]
    result: dict = {
        "host": {"cores": cores, "python": platform.python_version(), "machine": platform.machine(),
                 "tensorrt_rtx": _version("tensorrt_rtx"), "onnx": _version("onnx")},
        "models": len(models), "buildable": [m.name for m in buildable],
        "not_buildable": [m.name for m in models if m.name not in each],
        "probe_builds": each, "loadavg_before": loadavg(), "configs": {}, "not_run": []}
    samples: dict[str, list[dict]] = {}
    configs = ["bare loop", "bare, cores at once"] + [f"trt-tui --jobs {j}" for j in jobs]
    if before is not None:
        configs += [f"trt-tui before --jobs {j}" for j in before_jobs]
        compileall.compile_dir(str(before / "trt_tui"), quiet=1)
    for rep, config in interleaved(configs, reps):
        if time.monotonic() - started > max_seconds:
            result["not_run"].append(f"{config} (round {rep + 1})")
            continue
        if config == "bare loop":
            single = bare_loop(buildable, out, env, cwd, log=lambda *_: None)
            sample = {"wall": sum(w for w, _ in single.values()), "cpu": sum(c for _, c in single.values()),
                      "exit": 0 if len(single) == len(buildable) else 1, "each": single}
        elif config == "bare, cores at once":
            wall, cpu = _bare_pool(buildable, cores, out, env, cwd, each)
            sample = {"wall": wall, "cpu": cpu, "exit": 0}
        else:
            jobs_arg = config.rsplit(" ", 1)[1]
            code_env = _env(work, before) if config.startswith("trt-tui before") and before else env
            wall, cpu, code, err = _run(_trt_tui_argv(buildable, out, jobs_arg), code_env, cwd)
            sample = {"wall": wall, "cpu": cpu, "exit": code}
            if jobs_arg == "auto":
                sample["auto"] = next((line for line in err.splitlines() if "at once" in line), "")
            if code != 0:
                sample["stderr"] = err
        samples.setdefault(config, []).append(sample)
        log(f"  round {rep + 1}/{reps} {config:22s} {sample['wall']:7.2f} s wall, {sample['cpu']:7.2f} s CPU"
            + (f" (exit {sample['exit']})" if sample["exit"] else ""))
    if "bare loop" not in samples:
        log("  --max-seconds ran out before the bare loop: no table")
        result["table"] = "(not run: --max-seconds ran out before the bare loop)"
        return result
    total_cpu = summary([s["cpu"] for s in samples["bare loop"]])["median"]
    result.update(total_single_cpu=total_cpu, ideal_wall=total_cpu / cores)
    rows = [("ideal (CPU ÷ cores)", f"{total_cpu / cores:.2f}", "1.00×", "—", f"{total_cpu:.2f}")]
    loop_wall = summary([s["wall"] for s in samples["bare loop"]])["median"]
    for config, runs in samples.items():
        walls, cpus = [s["wall"] for s in runs], [s["cpu"] for s in runs]
        r = result["configs"][config] = {"wall": summary(walls), "cpu": summary(cpus), "runs": runs,
                                         "over_ideal": summary(walls)["median"] * cores / total_cpu,
                                         "speedup_over_bare_loop": loop_wall / summary(walls)["median"]}
        rows.append((config, f"{r['wall']['median']:.2f}", f"{r['over_ideal']:.2f}×",
                     f"{r['speedup_over_bare_loop']:.2f}×", f"{r['cpu']['median']:.2f}"))
    result["loadavg_after"] = loadavg()
    result["seconds"] = time.monotonic() - started
    result["table"] = (f"{len(buildable)} of {len(models)} models of the onnx package's test data, {cores} cores"
                       f" (Python {result['host']['python']}, tensorrt_rtx {result['host']['tensorrt_rtx']});"
                       f" medians of {reps} round(s); load average {result['loadavg_before'][0]:.1f} before,"
                       f" {result['loadavg_after'][0]:.1f} after\n\n"
                       + _table(rows, ("run", "wall s", "wall / ideal", "bare loop ÷ wall", "CPU s")))
    if result["not_run"]:
        result["table"] += f"\n\nNot run (--max-seconds {max_seconds:.0f}): {', '.join(result['not_run'])}"
    log("\n" + result["table"])
    return result


def _version(package: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    for name in (package, package.replace("_", "-")):
        try:
            return version(name)
        except PackageNotFoundError:
            continue
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="directory for scaling.json and scaling.md")
    parser.add_argument("--jobs", default="1,2,4,8,16,auto", help="the --jobs values to run (comma-separated)")
    parser.add_argument("--reps", type=int, default=1, help="interleaved rounds of each configuration")
    parser.add_argument("--limit", type=int, help="only the first N models")
    parser.add_argument("--max-seconds", type=float, default=420.0,
                        help="start no configuration after this many seconds (default 420)")
    parser.add_argument("--before", type=Path, help="an older checkout's root, run beside this one")
    parser.add_argument("--before-jobs", default="16,auto", help="the --jobs values to run of --before")
    args = parser.parse_args()
    compileall.compile_dir(str(REPO / "trt_tui"), quiet=1)
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    work = Workdir(Path(tempfile.mkdtemp(prefix="trt-tui-scaling-", dir=base)))
    try:
        models = staged(onnx_test_models()[:args.limit], work.root / "models")
        result = run(models, work, [j.strip() for j in args.jobs.split(",") if j.strip()], args.reps,
                     args.max_seconds, before=args.before,
                     before_jobs=tuple(j.strip() for j in args.before_jobs.split(",") if j.strip()))
    finally:
        work.cleanup()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scaling.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / "scaling.md").write_text(result["table"] + "\n")
    print(f"\nwrote {args.out / 'scaling.json'} and {args.out / 'scaling.md'}")


if __name__ == "__main__":
    main()
