"""Two builds started together through the process executor, with one spare waiting against two.

`python bench/spares.py ROUNDS [MODEL] [OUT.json]` (MODEL: a sample, default resnet50).

What the app's "build all" does with `--jobs 2` (the default): two builds submitted at once. Each
round makes a `ProcessExecutor` with `spares=1` (one spare: how the pool was before) or `spares=2`,
lets it start its spares and import (`prewarm`, then 3 s: the imports take ~0.3 s here), and submits
two builds of MODEL to a `Scheduler(max_jobs=2)`. Timed from submit: each build's BUILDING (its
process had imported TensorRT and parsed the model) and the batch's end. The spares' heap reserve
is off in both (`spare_memory=0`), so only the number of spares differs. Interleaved, medians.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import Workdir, interleaved, loadavg, summary  # noqa: E402


def one(directory: Path, model: str, spares: int) -> dict:
    from trt_tui.core.build import BuildSpec
    from trt_tui.core.events import State, StateChanged
    from trt_tui.core.executors import ProcessExecutor
    from trt_tui.core.scheduler import Scheduler

    executor = ProcessExecutor(spares=spares, spare_memory=0)
    executor.prewarm()
    time.sleep(3.0)
    building: dict[int, float] = {}

    def stamp(job, events) -> None:
        for event in events:
            if type(event) is StateChanged and event.state is State.BUILDING:
                building.setdefault(job.id, time.monotonic())

    scheduler = Scheduler(max_jobs=2, executor=executor, cache=None)
    scheduler.subscribe(stamp)
    try:
        t = time.monotonic()
        jobs = [scheduler.submit(BuildSpec(directory / f"{model}.onnx", directory / f"{model}-{i}.engine", force=True))
                for i in range(2)]
        assert scheduler.wait(600)
        wall = time.monotonic() - t
    finally:
        scheduler.shutdown()
    for job in jobs:
        assert job.state is State.SUCCEEDED, job.outcome
    first, second = sorted(building[job.id] - t for job in jobs)
    return {"first_building": first, "second_building": second, "wall": wall}


def main() -> None:
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    model = sys.argv[2] if len(sys.argv) > 2 else "resnet50"
    work = Workdir(Path(tempfile.mkdtemp(prefix="trt-tui-spares-", dir="/dev/shm")))
    work.prepare()
    directory = work.models_dir("spares", [model])
    names = ["one_spare", "two_spares"]
    rows: dict[str, list[dict]] = {name: [] for name in names}
    loads = []
    for rep, name in interleaved(names, reps):
        loads.append(loadavg()[0])
        rows[name].append(one(directory, model, 1 if name == "one_spare" else 2))
        r = rows[name][-1]
        print(f"  round {rep + 1}/{reps} {name:10s} BUILDING {r['first_building'] * 1e3:6.0f} / "
              f"{r['second_building'] * 1e3:6.0f} ms, both done {r['wall'] * 1e3:6.0f} ms")
    out = {"model": model, "reps": reps, "loadavg": summary(loads)}
    for name in names:
        out[name] = {k: summary([r[k] for r in rows[name]]) for k in rows[name][0]}
        s = out[name]
        print(f"{name:10s}: submit → BUILDING {s['first_building']['median'] * 1e3:.0f} ms (first), "
              f"{s['second_building']['median'] * 1e3:.0f} ms (second); both done {s['wall']['median'] * 1e3:.0f} ms")
    print(f"load average {out['loadavg']['min']:.1f}–{out['loadavg']['max']:.1f}")
    if len(sys.argv) > 3:
        Path(sys.argv[3]).write_text(json.dumps(out, indent=1))
    work.cleanup()


if __name__ == "__main__":
    main()
