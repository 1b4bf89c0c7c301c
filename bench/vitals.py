"""8. What sampling a build's vitals costs the build: the same build with sampling off and on, side
by side in one run (interleaved, medians, ratios to "off" of the same executor).

Configurations (each `Scheduler(max_jobs=1)` with the executor named, engine cache off):
- `process_off` / `process_1s` / `process_100ms`: the process executor (the default) with vitals off,
  at the default interval (1 s), and ten times as often; the parent samples the child.
- `thread_off` / `thread_100ms`: the thread executor, sampling its own process.
ResNet-50 (0.5 s builds, where 100 ms sampling reads the child ~5 times) and DenseNet (~15 s, where
the default interval samples ~15 times, 11 s of them inside one silent step). Wall time and the CPU
time of what builds (reaped children for the process executor, this process for the thread one: so
there it includes the sampler), each as a ratio to "off".

Also the cost of one reading itself (`VitalsWatch.sample()` on a live process: psutil, /proc, NVML
where present), 300 times, in CPU time of the sampling thread: what the observer spends per second.

    python bench/vitals.py [--rounds N] [--densenet-rounds N] [--out FILE]   # default bench/results/vitals.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Workdir, interleaved, summary  # noqa: E402

CONFIGS = {
    "process_off": ("process", 0.0),
    "process_1s": ("process", 1.0),
    "process_100ms": ("process", 0.1),
    "thread_off": ("thread", 0.0),
    "thread_100ms": ("thread", 0.1),
}


def _cpu(executor: str) -> float:
    """CPU seconds so far of what does the build: reaped children (process), this process (thread)."""
    import resource

    who = resource.RUSAGE_CHILDREN if executor == "process" else resource.RUSAGE_SELF
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def build_once(model: Path, output: Path, executor: str, interval: float) -> tuple[float, int, float]:
    from trt_tui.core.build.driver import BuildSpec
    from trt_tui.core.build.events import State, Vitals
    from trt_tui.core.execution.executors import make_executor
    from trt_tui.core.execution.scheduler import Scheduler
    from trt_tui.core.observe.vitals import VitalsConfig

    scheduler = Scheduler(max_jobs=1, executor=make_executor(executor, vitals=VitalsConfig(interval)))
    samples = []
    scheduler.subscribe(lambda job, events: samples.extend(e for e in events if type(e) is Vitals))
    cpu0 = _cpu(executor)
    start = time.perf_counter()
    job = scheduler.submit(BuildSpec(model, output))
    scheduler.wait()
    took = time.perf_counter() - start
    scheduler.shutdown()
    cpu = _cpu(executor) - cpu0
    if job.state is not State.SUCCEEDED:
        raise RuntimeError(f"{model}: {job.outcome}")
    return took, len(samples), cpu


def sample_cost(reads: int = 300) -> dict:
    """CPU seconds one `sample()` costs the sampling process, reading a live child."""
    import subprocess

    from trt_tui.core.observe.vitals import VitalsConfig, VitalsWatch

    child = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: sum(range(10000))"])
    try:
        watch = VitalsWatch(1, child.pid, lambda event: None, VitalsConfig(), own_process=True)
        watch.sample()  # the first one imports psutil and tries NVML
        costs = []
        for _ in range(reads):
            start = time.thread_time()
            watch.sample()
            costs.append(time.thread_time() - start)
    finally:
        child.kill()
        child.wait()
    stats = summary(costs)
    print(f"one reading: median {stats['median'] * 1e6:.0f} µs CPU (p95 {stats['p95'] * 1e6:.0f} µs)", flush=True)
    return stats


def run(models: dict[str, int], out: Path | None) -> dict:
    work = Workdir(Path(tempfile.mkdtemp(prefix="trt-tui-bench-vitals-", dir="/dev/shm")))
    work.prepare()
    results: dict = {"sample_cost_s": sample_cost()}
    try:
        for name, rounds in models.items():
            model = work.model(name)
            build_once(model, work.root / f"{name}.engine", "process", 0.0)  # one untimed warm-up
            configs = list(CONFIGS) if name != "densenet" else ["process_off", "process_1s"]
            times: dict[str, list[float]] = {c: [] for c in configs}
            counts: dict[str, list[int]] = {c: [] for c in configs}
            cpus: dict[str, list[float]] = {c: [] for c in configs}
            for _, config in interleaved(configs, rounds):
                executor, interval = CONFIGS[config]
                took, n, cpu = build_once(model, work.root / f"{name}.engine", executor, interval)
                times[config].append(took)
                counts[config].append(n)
                cpus[config].append(cpu)
            results[name] = {}
            for config in configs:
                stats = summary(times[config])
                base = summary(times[f"{CONFIGS[config][0]}_off"])["median"]
                stats["ratio"] = stats["median"] / base
                stats["samples"] = sorted(counts[config])[len(counts[config]) // 2]
                stats["cpu"] = summary(cpus[config])
                stats["cpu_ratio"] = stats["cpu"]["median"] / summary(cpus[f"{CONFIGS[config][0]}_off"])["median"]
                results[name][config] = stats
                print(f"{name:9} {config:14} median {stats['median']:.3f} s  ratio {stats['ratio']:.3f}"
                      f"  (min {stats['min']:.3f} s)  CPU {stats['cpu']['median']:.3f} s  ratio"
                      f" {stats['cpu_ratio']:.3f}  samples/build {stats['samples']}", flush=True)
    finally:
        work.cleanup()
    if out is not None:
        out.write_text(json.dumps(results, indent=1))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--densenet-rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "vitals.json")
    args = parser.parse_args()
    models = {"resnet50": args.rounds}
    if args.densenet_rounds:
        models["densenet"] = args.densenet_rounds
    run(models, args.out)


if __name__ == "__main__":
    main()
