"""6. Start-up and memory, each in a fresh process.

- `import`: wall time of `python -c "import trt_tui.ui.app"` against `python -c pass`, interleaved.
- `pty first frame`: `python -m trt_tui DIR` on a pseudo-terminal (120x40, TERM=xterm-256color), timed
  from the process being started to the first bytes on the terminal and to the first frame that shows
  the model list (the output contains a sample's name); then `q`. This is what a user waits for. Also
  the CPU time the process had used by then (all its threads, from /proc): it moves much less with
  the machine's load than the wall time does; and the CPU its child processes (the default executor's
  spare build processes) had used by then, what they took from the cores the first frame needed.
  Four variants, interleaved: trt-tui's package copied without bytecode and run with
  PYTHONDONTWRITEBYTECODE=1 (`after`: Python compiles trt-tui's ~10,000 lines at every start, ~0.17 s
  of CPU, as it does in an environment that sets that variable), the same copy byte-compiled first
  (`after_bytecode`: as a pip install leaves it), and with `--before DIR` both for that older code
  (`before`, `before_bytecode`). `pty` repeats `after`.
- `in-process first frame` (`workers.py first_frame`): `TrtTuiApp()` construction → `run_test`'s pilot
  (mounted, models listed, screen idle) → the first repaint after that.
- `idle RSS` (`workers.py idle_rss`): the app headless for 3 s; VmRSS. Plus a bare `python` and the
  app's imports alone, to show where the memory goes.
- `RSS with 4 builds` (`workers.py builds_rss`): `a` builds 4 copies of ResNet-50 with `--jobs 4`;
  peak RSS of the app process and (process executor) of its build children, sampled every 20 ms.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from common import REPO, Workdir, children_of, interleaved, loadavg, summary

HERE = Path(__file__).resolve().parent


def _env(work: Workdir) -> dict:
    """This environment, with the repository first on PYTHONPATH. The caller's PYTHONPATH is kept
    after it: replacing it crashed the children on the GPU machine, where the project runs from
    PYTHONPATH."""
    path = os.environ.get("PYTHONPATH")
    return dict(os.environ, PYTHONPATH=str(REPO) + (os.pathsep + path if path else ""),
                TRT_TUI_HISTORY=str(work.root / "startup-history.db"))


def worker(work: Workdir, *args: str, timeout: float = 120) -> dict:
    proc = subprocess.run([sys.executable, str(HERE / "workers.py"), *args], capture_output=True, text=True,
                          env=_env(work), timeout=timeout, cwd=str(REPO))
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"workers.py {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(lines[-1])


def import_times(work: Workdir, reps: int) -> dict:
    codes = {"python": "pass", "import_app": "import trt_tui.ui.app", "import_core": "import trt_tui.core.execution.scheduler"}
    times: dict[str, list[float]] = {k: [] for k in codes}
    for _, name in interleaved(list(codes), reps):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", codes[name]], check=True, env=_env(work), cwd=str(REPO))
        times[name].append(time.perf_counter() - t)
    return {k: summary(v) for k, v in times.items()}


def _cpu_seconds(pid: int) -> float | None:
    """utime + stime of a live process, all its threads."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def code_copies(work: Workdir, before: Path | None) -> dict[str, tuple[Path, bool]]:
    """variant -> (directory holding a copy of that code's trt_tui package, whether its bytecode is compiled)."""
    import compileall
    import shutil

    sources = {"after": REPO, **({"before": before} if before is not None else {})}
    out = {}
    for name, source in sources.items():
        for bytecode in (False, True):
            variant = name + ("_bytecode" if bytecode else "")
            target = work.root / "startup-code" / variant
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(source / "trt_tui", target / "trt_tui", ignore=shutil.ignore_patterns("__pycache__"))
            if (source / "themes").is_dir():  # the built-in themes sit beside the package in a checkout
                shutil.copytree(source / "themes", target / "themes")
            if bytecode:
                compileall.compile_dir(str(target / "trt_tui"), quiet=1)
            out[variant] = (target, bytecode)
    return out


def pty_first_frame(work: Workdir, directory: Path, marker: bytes = b"mnist", timeout: float = 20,
                    code: tuple[Path, bool] | None = None, executor: str | None = None) -> dict:
    """`code`: (directory, bytecode compiled) from `code_copies`, first on PYTHONPATH; default the repository.
    `executor`: `--executor` for the app (None: its default, the process executor)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = _env(work)
    if code is not None:
        env["PYTHONPATH"] = str(code[0]) + os.pathsep + env["PYTHONPATH"]
        if not code[1]:
            env["PYTHONDONTWRITEBYTECODE"] = "1"  # the copy stays without bytecode: compiled at every start
    env["TERM"] = "xterm-256color"
    env.pop("COLUMNS", None)
    env.pop("LINES", None)
    t = time.perf_counter()
    # `-m` puts the working directory first on sys.path: it must be the code's own directory
    proc = subprocess.Popen([sys.executable, "-m", "trt_tui", str(directory),
                             *(["--executor", executor] if executor else [])],
                            stdin=slave, stdout=slave, stderr=slave, env=env,
                            cwd=str(code[0] if code is not None else REPO), start_new_session=True)
    os.close(slave)
    out = b""
    first_byte = frame = cpu = children_cpu = None
    deadline = t + timeout
    try:
        while time.perf_counter() < deadline and frame is None:
            ready, _, _ = select.select([master], [], [], 0.05)
            if not ready:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            if first_byte is None:
                first_byte = time.perf_counter() - t
            out += chunk
            if marker in out:
                frame = time.perf_counter() - t
                cpu = _cpu_seconds(proc.pid)
                children_cpu = sum(filter(None, map(_cpu_seconds, children_of(proc.pid))))
        os.write(master, b"q")
        t_quit = time.perf_counter()
        end = time.perf_counter() + 10
        while proc.poll() is None and time.perf_counter() < end:
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    os.read(master, 65536)
                except OSError:
                    break
        try:
            proc.wait(max(0.1, end - time.perf_counter()))
            quit_s = time.perf_counter() - t_quit
        except subprocess.TimeoutExpired:
            quit_s = None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        os.close(master)
    return {"first_byte_s": first_byte, "first_frame_s": frame, "cpu_at_frame_s": cpu,
            "children_cpu_at_frame_s": children_cpu, "quit_s": quit_s,
            "exit_code": proc.returncode}


def _frames_summary(frames: list[dict]) -> dict:
    return {"runs": frames, "first_frame": summary([f["first_frame_s"] for f in frames if f["first_frame_s"]]),
            "first_byte": summary([f["first_byte_s"] for f in frames if f["first_byte_s"]]),
            "cpu_at_frame": summary([f["cpu_at_frame_s"] for f in frames if f["cpu_at_frame_s"] is not None]),
            "children_cpu_at_frame": summary([f["children_cpu_at_frame_s"] for f in frames
                                              if f["children_cpu_at_frame_s"] is not None])}


def first_frames(work: Workdir, directory: Path, reps: int, before: Path | None, log=print,
                 executors: tuple[str | None, ...] = ("thread",), bytecode_only: bool = False) -> dict:
    """The pty first frame of each variant (see the module's docstring), interleaved over `reps` rounds,
    with each of `executors` (None: the app's default, the process executor; a variant then ends in
    `/default`, where more than one executor is measured). `bytecode_only`: the byte-compiled copies
    alone, as a pip install leaves them."""
    copies = {v: c for v, c in code_copies(work, before).items() if c[1] or not bytecode_only}
    runs = {(v if len(executors) == 1 else f"{v}/{e or 'default'}"): (v, e) for v in copies for e in executors}
    frames: dict[str, list[dict]] = {variant: [] for variant in runs}
    load = []
    for _, variant in interleaved(list(runs), reps):
        code, executor = runs[variant]
        frames[variant].append(pty_first_frame(work, directory, code=copies[code], executor=executor))
        load.append(loadavg()[0])
    out = {"first_frame": {variant: _frames_summary(runs) for variant, runs in frames.items()},
           "first_frame_loadavg": summary(load)}
    for variant, r in out["first_frame"].items():
        log(f"  pty, {variant:16s}: first frame with the model list after {r['first_frame']['median']:.3f} s "
            f"(first byte {r['first_byte']['median']:.3f} s), CPU by then {r['cpu_at_frame']['median']:.3f} s, its"
            f" build processes' {r['children_cpu_at_frame']['median']:.3f} s")
    log(f"  load average while measuring: {out['first_frame_loadavg']['min']:.1f}–{out['first_frame_loadavg']['max']:.1f}")
    return out


def run(work: Workdir, reps: int, log=print, before: Path | None = None) -> dict:
    out: dict = {}
    out["import"] = import_times(work, reps)
    log(f"  import trt_tui.ui.app: {out['import']['import_app']['median']:.3f} s "
        f"(bare python {out['import']['python']['median']:.3f} s)")

    directory = work.models_dir("startup", ["mnist", "resnet50", "densenet"])
    out.update(first_frames(work, directory, reps, before, log))
    out["pty"] = out["first_frame"]["after"]

    inproc = [worker(work, "first_frame", str(directory)) for _ in range(reps)]
    out["in_process"] = {k: summary([r[k] for r in inproc]) for k in
                         ("import_app_s", "construct_s", "to_ready_s", "to_first_repaint_s")}
    log(f"  in-process: TrtTuiApp() → pilot ready {out['in_process']['to_ready_s']['median']:.3f} s, "
        f"→ first repaint {out['in_process']['to_first_repaint_s']['median']:.3f} s")

    idle = worker(work, "idle_rss", str(directory), "3")
    out["idle"] = idle
    log(f"  idle RSS {idle['rss_idle_kib'] / 1024:.1f} MiB (python {idle['rss_python_kib'] / 1024:.1f} MiB, "
        f"after imports {idle['rss_after_import_kib'] / 1024:.1f} MiB)")

    rdir = work.root / "startup-4builds"
    rdir.mkdir(exist_ok=True)
    for i in range(4):
        target = rdir / f"r{i}.onnx"
        if not target.exists():
            os.link(work.model("resnet50"), target)
    out["builds"] = {}
    for executor in ("thread", "process"):
        r = worker(work, "builds_rss", str(rdir), executor)
        out["builds"][executor] = r
        log(f"  4 builds, {executor:7s}: app peak {r['parent_peak_kib'] / 1024:6.1f} MiB, children peak sum "
            f"{r['children_peak_sum_kib'] / 1024:6.1f} MiB (one child ≤ {r['child_peak_kib'] / 1024:.1f} MiB), "
            f"app after {r['rss_after_kib'] / 1024:.1f} MiB; {r['states']}")
    return out


if __name__ == "__main__":  # the first frames only
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description="the first frame of `trt-tui DIR` on a pseudo-terminal")
    parser.add_argument("reps", nargs="?", type=int, default=5)
    parser.add_argument("before", nargs="?", type=Path, help="an older tree (git archive REV | tar -x -C DIR)")
    parser.add_argument("out", nargs="?", type=Path, help="write the result as JSON")
    parser.add_argument("--executor", action="append", choices=("default", "thread", "process"),
                        help="the app's executor, repeatable (default: thread, as the earlier figures)")
    parser.add_argument("--bytecode-only", action="store_true", help="only the byte-compiled copies")
    cli = parser.parse_args()
    sys.path.insert(0, str(REPO))
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    w = Workdir(Path(tempfile.mkdtemp(prefix="trt-tui-bench-", dir=base)))
    try:
        w.prepare()
        result = first_frames(w, w.models_dir("startup", ["mnist", "resnet50", "densenet"]), cli.reps, cli.before,
                              executors=tuple(None if e == "default" else e for e in cli.executor or ["thread"]),
                              bytecode_only=cli.bytecode_only)
        result["loadavg"] = loadavg()
    finally:
        w.cleanup()
    if cli.out:
        cli.out.write_text(json.dumps(result, indent=1) + "\n")
