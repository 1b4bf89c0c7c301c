"""The fork server on a many-core host: one batch, `trt-tui build --jobs J`, with it, without it
(`no_fork_server.py`) and an older checkout's, in interleaved rounds sharing one history (so that no
configuration is the first to order its builds by real durations), then a py-spy profile of the parent
of the first and the last (the py-spy binary: `--py-spy`, else on PATH).

    python bench/forkserver_ab.py --before DIR --scaling FILE.json --out DIR [--jobs 16] [--reps 3]

`--scaling` is an earlier `scaling.py` result: its list of the models that build is used, so no probe
runs. Writes DIR/forkserver-ab.json.
"""

from __future__ import annotations

import argparse
import collections
import compileall
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import REPO
from scaling import onnx_test_models, staged


def _profile(argv: list[str], env: dict, cwd: Path, out: Path, spy: str) -> list[tuple[int, str]]:
    subprocess.run([spy, "record", "--threads", "--nonblocking", "--rate", "250", "--format", "raw", "-o", str(out),
                    "--", *argv], env=env, cwd=str(cwd), capture_output=True, check=False)
    frames: collections.Counter[str] = collections.Counter()
    for line in out.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        ours = [frame for frame in stack.split(";")[2:] if "trt_tui" in frame]
        frames[(ours[-1] if ours else stack.split(";")[-1])[:110]] += int(count)
    return [(n, frame) for frame, n in frames.most_common(25)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--scaling", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--jobs", default="16")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--py-spy", default=shutil.which("py-spy") or "py-spy")
    args = parser.parse_args()
    spy = str(Path(args.py_spy).resolve()) if Path(args.py_spy).exists() else args.py_spy  # run from `work`
    args.before = args.before.resolve()
    buildable = set(json.loads(args.scaling.read_text())["buildable"])
    work = Path(tempfile.mkdtemp(prefix="trt-tui-forkserver-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None))
    models = [m for m in staged(onnx_test_models(), work / "models") if m.name in buildable]
    engines = work / "engines"
    engines.mkdir()
    for code in (REPO, args.before):
        compileall.compile_dir(str(code / "trt_tui"), quiet=1)

    def env(code: Path) -> dict:
        path = os.environ.get("PYTHONPATH")
        return dict(os.environ, PYTHONPATH=str(code) + (os.pathsep + path if path else ""),
                    TRT_TUI_HISTORY=str(work / "history.db"))

    tail = ["build", *map(str, models), "-o", f"{engines}/", "--force", "--jobs", args.jobs, "--format", "lines"]
    configs = {"with the fork server": ([sys.executable, "-m", "trt_tui", *tail], env(REPO)),
               "without it": ([sys.executable, str(REPO / "bench/no_fork_server.py"), *tail], env(REPO)),
               "before": ([sys.executable, "-m", "trt_tui", *tail], env(args.before))}
    runs: dict[str, list[dict]] = collections.defaultdict(list)
    try:
        for rep in range(args.reps):
            for name in (list(configs) if rep % 2 == 0 else list(reversed(configs))):
                argv, run_env = configs[name]
                r0, t = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
                done = subprocess.run(argv, env=run_env, capture_output=True, text=True, cwd=str(work), check=False)
                wall, r1 = time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
                runs[name].append({"wall": wall, "cpu": cpu, "exit": done.returncode})
                print(f"round {rep + 1} {name:22s} {wall:6.2f} s wall {cpu:6.2f} s CPU (exit {done.returncode})", flush=True)
        args.out = args.out.resolve()
        args.out.mkdir(parents=True, exist_ok=True)
        profiles = {name: _profile(configs[name][0], configs[name][1], work, args.out / f"spy-{i}.txt", spy)
                    for i, name in enumerate(("with the fork server", "before"))}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = {"models": len(models), "jobs": args.jobs, "cores": os.cpu_count(), "runs": runs, "profiles": profiles}
    (args.out / "forkserver-ab.json").write_text(json.dumps(result, indent=1) + "\n")
    for name, samples in runs.items():
        walls, cpus = sorted(s["wall"] for s in samples), sorted(s["cpu"] for s in samples)
        print(f"{name:22s} median {walls[len(walls) // 2]:.2f} s wall, {cpus[len(cpus) // 2]:.2f} s CPU")


if __name__ == "__main__":
    main()
