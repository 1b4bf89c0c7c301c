"""4. Watch latency: from a model file's last write to its rebuild starting.

In this process: a `ModelWatcher` on a directory (its defaults: settle 0.25 s, poll 0.05 s) feeding a
`RebuildController` over a `Scheduler` with the thread executor. Each repetition rewrites mnist.onnx
with new bytes (a different `doc_string`, so it really changed) the way exporters do, alternately
- `in_place`: open, write in 4 chunks 20 ms apart, close (torch.onnx.export writes in place), and
- `rename`: write a temporary file beside it, then `os.replace` it over the model (editors, `onnx.save`
  to a temporary name).
`t_last` is taken right after the last byte is written and the file closed (or renamed). Measured:
`t_last` → the watcher's `on_change` call (the file is reported complete), and `t_last` → the job
reaching PARSING (the build started: the event as the executor pushes it).

The same through the CLI, end to end: `trt-tui watch DIR --json --executor thread --force`, timed
from `t_last` to the `{"event": "state", "state": "parsing"}` line read from its stdout.

Target: the rebuild starts within 500 ms of the file being complete.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

from common import REPO, Workdir, summary


def variants(model: Path, n: int) -> list[bytes]:
    import onnx

    proto = onnx.load(str(model))
    out = []
    for i in range(n):
        proto.doc_string = f"trt-tui watch benchmark revision {i} {time.time_ns()}"
        out.append(proto.SerializeToString())
    return out


def write(path: Path, data: bytes, how: str) -> float:
    """Write like an exporter; returns time.monotonic() right after the file is complete."""
    if how == "rename":
        temp = path.with_name(f".{path.name}.partial")
        with open(temp, "wb") as f:
            f.write(data)
        os.replace(temp, path)
        return time.monotonic()
    chunk = -(-len(data) // 4)
    with open(path, "wb") as f:
        for i in range(4):
            f.write(data[i * chunk:(i + 1) * chunk])
            f.flush()
            if i < 3:
                time.sleep(0.02)
    return time.monotonic()


def in_process(work: Workdir, reps: int, log=print) -> list[dict]:
    from trt_tui.core.build.driver import BuildSpec, default_output
    from trt_tui.core.build.events import STATE_EVENTS, State
    from trt_tui.core.execution.executors import ThreadExecutor
    from trt_tui.core.execution.rebuild import RebuildController
    from trt_tui.core.execution.scheduler import Scheduler
    from trt_tui.core.model.watch import ModelWatcher

    directory = work.root / "watch"
    directory.mkdir(exist_ok=True)
    model = directory / "mnist.onnx"
    datas = variants(work.model("mnist"), reps + 1)
    model.write_bytes(datas[-1])

    parsing: dict[int, float] = {}
    changes: list[tuple[float, object]] = []
    got_change = threading.Event()

    class Stamping(ThreadExecutor):
        def run(self, job):
            original = job.sink

            def sink(event) -> None:
                if isinstance(event, STATE_EVENTS) and event.state is State.PARSING:
                    parsing.setdefault(job.id, time.monotonic())
                original(event)

            job.sink = sink
            return super().run(job)

    scheduler = Scheduler(max_jobs=1, executor=Stamping(), cache=None)
    controller = RebuildController(scheduler, lambda m: BuildSpec(m, default_output(m), force=True))

    def on_change(batch) -> None:
        now = time.monotonic()
        for change in batch:
            changes.append((now, change))
        controller.handle(batch)
        got_change.set()

    watcher = ModelWatcher([directory], on_change)
    watcher.start()
    time.sleep(0.5)  # inotify is armed
    rows = []
    try:
        for i in range(reps):
            how = "in_place" if i % 2 == 0 else "rename"
            got_change.clear()
            seen = len(changes)
            t_last = write(model, datas[i], how)
            if not got_change.wait(10):
                rows.append({"how": how, "error": "no change reported in 10 s"})
                continue
            t_change, change = changes[seen]
            job = controller.latest[change.path]
            job.thread.join(30) if job.thread is not None else None
            scheduler.wait(30)
            row = {"how": how, "to_change": t_change - t_last, "to_parsing": parsing.get(job.id, float("nan")) - t_last,
                   "state": job.state.value, "reports": len(changes) - seen,
                   "watcher_last_event_to_change": t_change - change.last_write}
            rows.append(row)
            log(f"  in-process {how:8s}: change after {row['to_change'] * 1e3:6.1f} ms, PARSING after "
                f"{row['to_parsing'] * 1e3:6.1f} ms ({row['state']})")
            time.sleep(0.4)
    finally:
        watcher.stop()
        scheduler.shutdown()
    return rows


def cli(work: Workdir, reps: int, log=print) -> list[dict]:
    directory = work.root / "watch-cli"
    directory.mkdir(exist_ok=True)
    model = directory / "mnist.onnx"
    datas = variants(work.model("mnist"), reps + 1)
    model.write_bytes(datas[-1])
    path = os.environ.get("PYTHONPATH")  # kept after the repository: the GPU machine runs from it
    env = dict(os.environ, PYTHONPATH=str(REPO) + (os.pathsep + path if path else ""),
               TRT_TUI_HISTORY=str(work.root / "watch-cli-history.db"))
    proc = subprocess.Popen([sys.executable, "-m", "trt_tui", "watch", str(directory), "--json", "--executor",
                             "thread", "--force"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                            cwd=str(REPO))
    buf = b""

    def lines_until(predicate, timeout: float):
        nonlocal buf
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                try:
                    data = json.loads(line)
                except ValueError:
                    continue
                if predicate(data):
                    return time.monotonic(), data
            ready, _, _ = select.select([proc.stdout], [], [], 0.05)
            if ready:
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    return None, None
                buf += chunk
        return None, None

    rows = []
    try:
        t, _ = lines_until(lambda d: d.get("event") == "message" and "watching" in d.get("message", ""), 30)
        if t is None:
            return [{"error": "trt-tui watch did not start"}]
        lines_until(lambda d: d.get("event") == "state" and d.get("state") in ("succeeded", "skipped", "failed"), 30)
        time.sleep(0.5)
        for i in range(reps):
            how = "in_place" if i % 2 == 0 else "rename"
            t_last = write(model, datas[i], how)
            t_parse, _ = lines_until(lambda d: d.get("event") == "state" and d.get("state") == "parsing", 10)
            if t_parse is None:
                rows.append({"how": how, "error": "no parsing line in 10 s"})
                continue
            lines_until(lambda d: d.get("event") == "state" and d.get("state") in ("succeeded", "failed"), 30)
            rows.append({"how": how, "to_parsing_line": t_parse - t_last})
            log(f"  CLI        {how:8s}: parsing line after {rows[-1]['to_parsing_line'] * 1e3:6.1f} ms")
            time.sleep(0.4)
    finally:
        proc.send_signal(2)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return rows


def run(work: Workdir, reps: int, cli_reps: int, log=print) -> dict:
    rows = in_process(work, reps, log)
    cli_rows = cli(work, cli_reps, log) if cli_reps else []
    ok = [r for r in rows if "error" not in r]
    out = {
        "reps": reps,
        "runs": rows,
        "cli_runs": cli_rows,
        "to_change": summary([r["to_change"] for r in ok]),
        "to_parsing": summary([r["to_parsing"] for r in ok]),
        "errors": [r for r in rows + cli_rows if "error" in r],
    }
    for how in ("in_place", "rename"):
        out[f"to_parsing_{how}"] = summary([r["to_parsing"] for r in ok if r["how"] == how])
    cli_ok = [r for r in cli_rows if "error" not in r]
    if cli_ok:
        out["cli_to_parsing_line"] = summary([r["to_parsing_line"] for r in cli_ok])
    return out
