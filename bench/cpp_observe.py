"""C++ programs and trt-tui: what `trt_tui::Monitor` costs per callback, and a C++ build's time
bare, with the header, and through the preload, side by side in one run.

- callback: `bench/cpp/callback_cost.cpp`, one phase stepped a million times from 1 and from 4
  threads: a bare counting monitor against `trt_tui::Monitor` chaining the same counting monitor,
  alone (nobody listening: the standalone display) and reported (under `trt-tui run`).
- build: `tests/cpp/programs/sample_build.cpp` (its own counting monitor), the seconds
  `buildSerializedNetwork` took as the program measures it, and the whole command's wall time:
  bare (no trt-tui code), header (compiled with trt_tui/monitor.h, nobody listening), header under
  `trt-tui run --json`, and the unmodified program under `trt-tui run --json` (the preload).
  Interleaved rounds, medians.

    TRT_TUI_TENSORRT_INCLUDE=... python bench/cpp_observe.py [--reps N] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from trt_tui.core.model.samples import write_samples  # noqa: E402
from trt_tui.cpp import toolchain  # noqa: E402


def compile_programs(out: Path) -> dict[str, Path]:
    import tensorrt_rtx_libs

    libs = Path(tensorrt_rtx_libs.__file__).parent
    common = [toolchain.compiler(), "-std=c++17", "-O2", "-pthread", "-Wno-deprecated-declarations",
              f"-I{toolchain.INCLUDE_DIR}", "-isystem", str(toolchain.tensorrt_include()), "-isystem",
              str(toolchain.cuda_include())]
    link = [str(libs / "libtensorrt_rtx.so.1"), str(libs / "libtensorrt_onnxparser_rtx.so.1"), f"-Wl,-rpath,{libs}",
            "-ldl"]
    sample = REPO / "tests" / "cpp" / "programs" / "sample_build.cpp"
    jobs = {"plain_build": [str(sample)], "header_build": ["-DWITH_TRT_TUI", str(sample)],
            "callback_cost": [str(REPO / "bench" / "cpp" / "callback_cost.cpp")]}
    running = {name: subprocess.Popen([*common, *args, *link, "-o", str(out / name)]) for name, args in jobs.items()}
    for name, process in running.items():
        assert process.wait() == 0, f"{name} did not compile"
    toolchain.preload_library()
    return {name: out / name for name in jobs}


def observed(argv: list[str]) -> list[str]:
    return [sys.executable, "-m", "trt_tui", "run", "--json", "--", *argv]


def run(argv: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, done.stdout


def build_seconds(stdout: str) -> float:
    """The program's own measure (with --json its stdout lines are `output` events)."""
    for line in stdout.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            line = record.get("line", "") if record.get("event") == "output" else ""
        if m := re.match(r"build seconds: ([\d.]+)$", line):
            return float(m.group(1))
    raise AssertionError(f"no build time in {stdout[-500:]!r}")


def callback_costs(program: Path) -> list[dict]:
    results = []
    for threads in (1, 4):
        argv = [str(program), "1000000", str(threads)]
        alone = json.loads(run(argv)[1])
        _, out = run(observed(argv))
        reported = next(json.loads(r["line"]) for r in map(json.loads, out.splitlines()) if r.get("event") == "output")
        results.append({"threads": threads, "bare_ns": alone["bare_ns"], "trt_tui_alone_ns": alone["trt_tui_ns"],
                        "trt_tui_reported_ns": reported["trt_tui_ns"]})
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "cpp_observe.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        programs = compile_programs(work)
        models = write_samples(work, ["mnist", "resnet50"])
        result: dict = {"callback": callback_costs(programs["callback_cost"]), "build": {},
                        "load": os.getloadavg()[0], "cores": os.cpu_count()}
        for model in models:
            engine = str(work / "out.engine")
            configs = {
                "bare": [str(programs["plain_build"]), str(model), engine],
                "header": [str(programs["header_build"]), str(model), engine],
                "header, trt-tui run": observed([str(programs["header_build"]), str(model), engine]),
                "preload, trt-tui run": observed([str(programs["plain_build"]), str(model), engine]),
            }
            times: dict[str, dict[str, list[float]]] = {name: {"build": [], "wall": []} for name in configs}
            names = list(configs)
            for rep in range(args.reps + 1):  # the first round warms the caches and is dropped
                for name in names[rep % len(names):] + names[:rep % len(names)]:
                    wall, out = run(configs[name])
                    if rep:
                        times[name]["build"].append(build_seconds(out))
                        times[name]["wall"].append(wall)
            bare = statistics.median(times["bare"]["build"])
            result["build"][model.name] = {
                name: {"build_s": round(statistics.median(t["build"]), 4), "wall_s": round(statistics.median(t["wall"]), 3),
                       "build_ratio": round(statistics.median(t["build"]) / bare, 3)}
                for name, t in times.items()}
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
