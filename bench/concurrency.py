"""5. Concurrency: the same batch of builds run 1, 2 and 4 at a time.

A batch is 4 builds of the ResNet-50 sample (each to its own engine file). It is submitted at once to
a `Scheduler(max_jobs=N)` and timed until every job is final and delivered; throughput = builds per
second, speedup = the batch's wall time at N=1 / at N. Both executors, interleaved (every
(executor, N) configuration once per round, the order rotated each round).

On this machine (2 cores, no GPU) TensorRT-RTX's build is CPU work, so more than 2 builds at once
cannot add throughput; what it can show is whether running them together costs anything.
"""

from __future__ import annotations

import time

from common import Workdir, interleaved, summary

BATCH = 4


def batch(directory, executor_name: str, max_jobs: int) -> float:
    from trt_tui.core.build.driver import BuildSpec
    from trt_tui.core.build.events import State
    from trt_tui.core.execution.executors import ProcessExecutor, ThreadExecutor
    from trt_tui.core.execution.scheduler import Scheduler

    executor = ThreadExecutor() if executor_name == "thread" else ProcessExecutor()
    scheduler = Scheduler(max_jobs=max_jobs, executor=executor, cache=None)
    model = directory / "resnet50.onnx"
    try:
        t = time.perf_counter()
        jobs = [scheduler.submit(BuildSpec(model, directory / f"r{i}.engine", force=True)) for i in range(BATCH)]
        scheduler.wait()
        elapsed = time.perf_counter() - t
    finally:
        scheduler.shutdown()
    bad = [j for j in jobs if j.state is not State.SUCCEEDED]
    if bad:
        raise RuntimeError(f"concurrency batch: {bad[0].state} {bad[0].outcome}")
    return elapsed


def run(work: Workdir, reps: int, executors=("thread", "process"), levels=(1, 2, 4), log=print) -> dict:
    directory = work.models_dir("concurrency", ["resnet50"])
    configs = [(e, n) for e in executors for n in levels]
    times: dict[tuple[str, int], list[float]] = {c: [] for c in configs}
    batch(directory, "thread", 2)  # warm-up, untimed
    for rep, (executor, n) in interleaved(configs, reps):
        t = batch(directory, executor, n)
        times[(executor, n)].append(t)
        log(f"  round {rep + 1}/{reps} {executor:7s} {n} at once: {BATCH} builds in {t:5.2f} s")
    out: dict = {"batch": BATCH, "model": "resnet50", "reps": reps, "results": []}
    for executor in executors:
        one_at_a_time = summary(times[(executor, 1)])["median"]
        for n in levels:
            s = summary(times[(executor, n)])
            out["results"].append({
                "executor": executor, "max_jobs": n, "batch_seconds": s,
                "builds_per_s": BATCH / s["median"], "speedup_vs_1": one_at_a_time / s["median"],
                "samples": times[(executor, n)],
            })
    return out
