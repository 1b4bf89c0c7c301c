"""Later build processes forked by the fork server (`core/execution/zygote`) against spawned ones.

N builds of one model through the real `ProcessExecutor` (`--jobs`-like `max_jobs`, two spares), each
configuration a fresh Python process that starts its executor on its only thread, as `trt-tui build`
does: `zygote` (the default: the spares after the first ones are forks of the fork server) and `spawn`
(the fork server turned off: each later spare a new interpreter that imports trt-tui's build code and
TensorRT). Interleaved rounds; wall from the first submit to the last build's end, and CPU of the
process and of its build processes (user + system, every descendant reaped).

    python bench/zygote.py [--builds 20] [--model mnist] [--jobs 2] [--reps 5] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from common import REPO, Workdir, interleaved, loadavg, summary

PROGRAM = textwrap.dedent(
    """
    import json, resource, sys, time
    from pathlib import Path
    from trt_tui.core.build.driver import BuildSpec
    from trt_tui.core.execution import pool
    from trt_tui.core.execution.executors import ProcessExecutor
    from trt_tui.core.execution.scheduler import Scheduler

    model, out, builds, jobs, mode = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    if mode == "spawn":
        pool.start_zygote = lambda: None
    executor = ProcessExecutor(spares=jobs)
    executor.prewarm(builds)
    scheduler = Scheduler(max_jobs=jobs, executor=executor)
    t = time.monotonic()
    found = [scheduler.submit(BuildSpec(model, out / f"{i}.engine")) for i in range(builds)]
    scheduler.wait(600)
    wall = time.monotonic() - t
    scheduler.shutdown()
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({"wall": wall, "cpu_parent": me.ru_utime + me.ru_stime,
                      "cpu_builds": kids.ru_utime + kids.ru_stime,
                      "succeeded": sum(job.state.value == "succeeded" for job in found)}))
    """
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builds", type=int, default=20)
    parser.add_argument("--model", default="mnist", choices=["mnist", "resnet50"])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    work = Workdir(Path(tempfile.mkdtemp(prefix="trt-tui-zygote-", dir="/dev/shm")))
    work.prepare()
    samples: dict[str, list[dict]] = {}
    before = loadavg()
    try:
        for rep, mode in interleaved(["zygote", "spawn"], args.reps):
            out = work.root / f"{mode}-{rep}"
            out.mkdir()
            done = subprocess.run([sys.executable, "-c", PROGRAM, str(work.model(args.model)), str(out),
                                   str(args.builds), str(args.jobs), mode],
                                  capture_output=True, text=True, cwd=REPO, timeout=900, check=True)
            sample = json.loads(done.stdout.strip().splitlines()[-1])
            assert sample["succeeded"] == args.builds, done.stderr[-2000:]
            samples.setdefault(mode, []).append(sample)
            print(f"  round {rep + 1}/{args.reps} {mode:6s} {sample['wall']:6.2f} s wall, parent {sample['cpu_parent']:.2f}"
                  f" s CPU, build processes {sample['cpu_builds']:.2f} s CPU")
    finally:
        work.cleanup()
    result = {"builds": args.builds, "model": args.model, "jobs": args.jobs, "reps": args.reps,
              "loadavg": [before, loadavg()],
              "configs": {mode: {key: summary([s[key] for s in runs]) for key in ("wall", "cpu_parent", "cpu_builds")}
                          for mode, runs in samples.items()}}
    print(f"\n{args.builds} {args.model} builds, {args.jobs} at once ({args.reps} interleaved rounds, medians):")
    print("| spares after the first | wall s | parent CPU s | build processes' CPU s |")
    print("| --- | --- | --- | --- |")
    for mode, figures in result["configs"].items():
        print(f"| {mode} | {figures['wall']['median']:.2f} | {figures['cpu_parent']['median']:.2f} |"
              f" {figures['cpu_builds']['median']:.2f} |")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
