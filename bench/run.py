"""trt-tui's benchmarks, in one command: `python bench/run.py [--quick] [--out FILE] [--only NAMES]`.

Runs the benchmarks of bench/README.md (each module's docstring says what it measures and how),
prints progress and a summary table (every figure against its target, met or not), and writes every
number to a JSON file (default bench/results/run.json). `--quick` is a ~2-minute smoke run with fewer
repetitions; the default run takes ~7 minutes on a 2-core machine.

Every comparison is measured side by side in one run, interleaved (A B C, B C A, ...), and reported as
medians, because the machine may be shared: absolute times move with the load, ratios much less.
The work directory (sample models, engines, history) is a fresh temporary directory on /dev/shm
where available, so that engines' fsyncs do not put disk noise into build times.

Only the standard library is imported at module level: the `spawn` children of the process executor
import this module again, and must pay no more for it than trt-tui's own children would.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

DENSENET_CONFIGS = ("none", "core_process", "app", "app_process")
ALL = ("overhead", "throughput", "cancel", "watch", "concurrency", "startup", "executors", "buildwall", "appcpu")

PARAMS = {
    # name: (full, quick)
    "overhead_reps": (7, 2),
    "densenet_reps": (2, 0),
    "throughput_duration": (2.0, 1.0),
    "throughput_reps": (3, 1),
    "cancel_reps": (3, 1),
    "watch_reps": (10, 4),
    "watch_cli_reps": (4, 2),
    "concurrency_reps": (3, 1),
    "startup_reps": (5, 2),
    "executor_reps": (5, 2),
    "transport_reps": (2, 1),
    "transport_duration": (1.5, 1.0),
    "buildwall_reps": (7, 3),
    "appcpu_reps": (3, 2),
}


def machine() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_kib = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    except OSError:
        pass
    versions = {"python": platform.python_version()}
    for module in ("tensorrt_rtx", "textual"):
        try:
            versions[module] = __import__(module).__version__
        except Exception as exc:  # noqa: BLE001
            versions[module] = f"unavailable ({exc})"
    try:
        gpu = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=5).stdout.strip() or "none"
    except (OSError, subprocess.SubprocessError):
        gpu = "none (no nvidia-smi)"
    try:
        commit = subprocess.run(["git", "-C", str(HERE.parent), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=5).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", str(HERE.parent), "status", "--porcelain"], capture_output=True,
                                    text=True, timeout=5).stdout.strip())
    except (OSError, subprocess.SubprocessError):
        commit, dirty = "unknown", False
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(mem_kib / 1024 / 1024, 1), "gpu": gpu,
            "kernel": platform.release(), "versions": versions, "commit": commit + (" (with uncommitted changes)" if dirty else "")}


def targets(results: dict) -> list[dict]:
    """Every figure that has a target: value, target, met."""
    rows: list[dict] = []

    def add(bench: str, figure: str, value, target: str, met: bool | None, note: str = "") -> None:
        rows.append({"bench": bench, "figure": figure, "value": value, "target": target, "met": met, "note": note})

    for ov in (results.get("overhead"), results.get("overhead_densenet")):
        if not ov:
            continue
        for model, entry in ov["models"].items():
            for config in ("minimal", "core", "session_tty", "core_process", "app", "app_process"):
                if config in entry:
                    r = entry[config]["ratio_to_none"]
                    add("1 overhead", f"{model}: {config} / none (median)", f"{r:.3f} ({entry[config]['median'] * 1e3:.0f} ms"
                        f" vs {entry['none']['median'] * 1e3:.0f} ms)", "≤ 1.02",
                        r <= 1.02 if config != "minimal" else None)
    tp = results.get("throughput")
    if tp:
        for row in tp["table"]:
            label = f"{row['config']} {row['threads']} threads" + (f" paced {row['paced']:,.0f}/s" if row["paced"] else "")
            rate = row["callbacks_per_s"]["median"]
            if not row["paced"]:
                add("2 throughput", f"{label}: callbacks/s", f"{rate:,.0f}", "≥ 100,000", rate >= 100_000)
            if "worst_event_p95" in row:
                p95 = row["worst_event_p95"]["median"]
                add("2 throughput", f"{label}: event → screen, worst event p95 (max)",
                    f"{p95 * 1e3:.0f} ms ({row['worst_event_max'] * 1e3:.0f} ms)", "≤ 100 ms", p95 <= 0.1)
    ca = results.get("cancel")
    if ca:
        grace = ca["cancel_grace"]
        for config, entry in ca["configs"].items():
            lat = entry["latency"]
            if config in ("thread", "tensorrt_raw"):
                extra = entry.get("return_after_next_callback")
                nxt = entry.get("next_callback_after_cancel")
                if extra:
                    add("3 cancel", f"{config}: cancel → returned, median/p95 (step remainder median)",
                        f"{lat['median']:.2f} s / {lat['p95']:.2f} s ({nxt['median']:.2f} s)", "step + 20 ms", None)
                    add("3 cancel", f"{config}: after the step's callback → returned, median/p95",
                        f"{extra['median'] * 1e3:.0f} ms / {extra['p95'] * 1e3:.0f} ms", "≤ 20 ms",
                        extra["p95"] <= 0.02 if config == "thread" else None)
                    if "teardown_after_next_callback" in entry:
                        td = entry["teardown_after_next_callback"]
                        add("3 cancel", "tensorrt_raw: after the step's callback → TensorRT objects freed, median",
                            f"{td['median'] * 1e3:.0f} ms", "-", None)
            if config == "thread" and "tensorrt_raw" in ca["configs"]:
                raw = ca["configs"]["tensorrt_raw"].get("teardown_after_next_callback")
                mine = entry.get("return_after_next_callback")
                if raw and mine:
                    own = mine["median"] - raw["median"]
                    add("3 cancel", "thread: trt-tui's own share (above minus TensorRT's return + teardown), median",
                        f"{own * 1e3:.0f} ms", "≤ 20 ms", own <= 0.02)
            if config == "process":
                add("3 cancel", f"process (grace {grace:g} s): cancel → returned, median/p95",
                    f"{lat['median'] * 1e3:.0f} ms / {lat['p95'] * 1e3:.0f} ms", f"≤ grace + 20 ms = {(grace + 0.02) * 1e3:.0f} ms",
                    lat["p95"] <= grace + 0.02)
            elif config == "process_force":
                add("3 cancel", "process, double cancel (forced): cancel → returned, median/p95",
                    f"{lat['median'] * 1e3:.0f} ms / {lat['p95'] * 1e3:.0f} ms", "≤ 20 ms", lat["p95"] <= 0.02)
    wa = results.get("watch")
    if wa:
        add("4 watch", "last write → PARSING, median/p95/max",
            f"{wa['to_parsing']['median'] * 1e3:.0f} / {wa['to_parsing']['p95'] * 1e3:.0f} / {wa['to_parsing']['max'] * 1e3:.0f} ms",
            "≤ 500 ms", wa["to_parsing"]["max"] <= 0.5)
        if "cli_to_parsing_line" in wa:
            c = wa["cli_to_parsing_line"]
            add("4 watch", "CLI: last write → parsing line, median/max", f"{c['median'] * 1e3:.0f} / {c['max'] * 1e3:.0f} ms",
                "≤ 500 ms", c["max"] <= 0.5)
    co = results.get("concurrency")
    if co:
        for row in co["results"]:
            add("5 concurrency", f"{row['executor']} {row['max_jobs']} at once: builds/s (speedup vs 1)",
                f"{row['builds_per_s']:.2f} ({row['speedup_vs_1']:.2f}x)", "-", None)
    st = results.get("startup")
    if st:
        ff = st["pty"]["first_frame"]
        add("6 start-up", "pty: process start → first frame with the model list, median/max",
            f"{ff['median'] * 1e3:.0f} / {ff['max'] * 1e3:.0f} ms", "≤ 1 s", ff["max"] <= 1.0)
        ip = st["in_process"]["to_first_repaint_s"]
        add("6 start-up", "in-process: TrtTuiApp() → first repaint, median", f"{ip['median'] * 1e3:.0f} ms", "≤ 1 s",
            ip["median"] <= 1.0)
        add("6 start-up", "import trt_tui.ui.app (subprocess), median",
            f"{st['import']['import_app']['median'] * 1e3:.0f} ms (python alone {st['import']['python']['median'] * 1e3:.0f} ms)",
            "-", None)
        idle = st["idle"]["rss_idle_kib"] / 1024
        add("6 memory", "idle app RSS", f"{idle:.1f} MiB", "< 150 MB", idle * 1.048576 < 150)
        for executor, r in st["builds"].items():
            text = f"app {r['parent_peak_kib'] / 1024:.0f} MiB peak, {r['rss_after_kib'] / 1024:.0f} MiB after"
            if executor == "process":
                text += f"; children {r['children_peak_sum_kib'] / 1024:.0f} MiB peak sum"
            add("6 memory", f"4 ResNet-50 builds, {executor} executor", text, "-", None)
    bw = results.get("buildwall")
    if bw:
        goals = {"process": 1.05, "thread": 1.03}
        for config, entry in bw["configs"].items():
            if config == "bare":
                continue
            goal = goals.get(config)
            add("8 build wall", f"{Path(bw['model']).name}: trt-tui build ({config}) / bare, process wall (paired)",
                f"{entry['ratio_to_bare']:.3f} ({entry['paired_ratio_median']:.3f}); {entry['median']:.2f} s vs"
                f" {bw['configs']['bare']['median']:.2f} s", f"≤ {goal}" if goal else "-",
                entry["ratio_to_bare"] <= goal if goal else None)
    ac = results.get("appcpu")
    if ac:
        for version, models in ac["versions"].items():
            for model, entry in models.items():
                value = entry["cpu_per_s"]["median"]
                add("9 app CPU", f"{version}: {model}, app CPU s per s of build (process executor)", f"{value:.3f}",
                    "≤ 0.05", value <= 0.05 if version == "after" else None)
    ex = results.get("executors")
    if ex:
        s = ex["startup"]
        for e in [k for k in ("thread", "process", "process_cold") if k in s]:
            add("7 executors", f"{e}: submit → first event (PARSING) / → BUILDING, mnist",
                f"{s[e]['parsing']['median'] * 1e3:.1f} / {s[e]['building']['median'] * 1e3:.1f} ms", "-", None)
        for row in ex["transport"]["table"]:
            add("7 executors", f"transport {row['kind']} {row['threads']} threads: callbacks/s, push → delivery p50",
                f"{row['callbacks_per_s']['median']:,.0f}, {row['push_to_delivery_p50']['median'] * 1e3:.1f} ms", "-", None)
    return rows


def print_table(rows: list[dict]) -> None:
    width = max((len(r["bench"]) + len(r["figure"]) for r in rows), default=40) + 3
    print("\n" + "=" * 100)
    print(f"{'benchmark / figure':{width}s} {'value':45s} {'target':14s} met")
    print("-" * 100)
    for r in rows:
        met = {True: "yes", False: "NO", None: ""}[r["met"]]
        print(f"{r['bench'] + ': ' + r['figure']:{width}s} {str(r['value']):45s} {r['target']:14s} {met}")
    print("=" * 100)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a ~2-minute smoke run with fewer repetitions")
    parser.add_argument("--out", default=str(HERE / "results" / "run.json"), help="where to write every figure (JSON)")
    parser.add_argument("--only", default=",".join(ALL), help=f"comma-separated subset of: {', '.join(ALL)}")
    parser.add_argument("--workdir", help="parent of the temporary work directory (default /dev/shm, else /tmp)")
    parser.add_argument("--overhead-configs", help=argparse.SUPPRESS)
    parser.add_argument("--overhead-reps", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--before", help="an older checkout of trt-tui (git archive REV | tar -x -C DIR): startup,"
                        " buildwall and appcpu run it side by side with this one")
    args = parser.parse_args(argv)
    only = [x.strip() for x in args.only.split(",") if x.strip()]
    unknown = set(only) - set(ALL)
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    p = {k: v[1] if args.quick else v[0] for k, v in PARAMS.items()}

    from common import Workdir, loadavg

    base = args.workdir or ("/dev/shm" if os.access("/dev/shm", os.W_OK) else None)
    work = Workdir(Path(tempfile.mkdtemp(prefix="trt-tui-bench-", dir=base)))
    os.environ["TRT_TUI_HISTORY"] = str(work.root / "history.db")  # never the user's own history
    results: dict = {"machine": machine(), "quick": args.quick, "params": p, "workdir": str(work.root),
                     "started": time.strftime("%Y-%m-%d %H:%M:%S"), "loadavg_start": loadavg()}
    m = results["machine"]
    print(f"trt-tui benchmarks{' (quick)' if args.quick else ''}: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB,"
          f" GPU: {m['gpu']}; {m['versions']}; load {results['loadavg_start']}")
    t_all = time.perf_counter()
    durations = {}

    def log(text: str) -> None:
        print(text, flush=True)

    try:
        t = time.perf_counter()
        work.prepare()
        durations["samples"] = time.perf_counter() - t
        for name in only:
            t = time.perf_counter()
            print(f"\n[{name}] {time.strftime('%H:%M:%S')} load {loadavg()[0]:.2f}", flush=True)
            if name == "overhead":
                import overhead

                configs = args.overhead_configs.split(",") if args.overhead_configs else None
                reps = args.overhead_reps or p["overhead_reps"]
                results["overhead"] = overhead.run(work, reps, ["mnist", "resnet50"], log=log, configs=configs)
                if p["densenet_reps"] and not args.overhead_configs:
                    log("  DenseNet (~15 s a build), no warm-up:")
                    results["overhead_densenet"] = overhead.run(work, p["densenet_reps"], ["densenet"], log=log,
                                                                configs=DENSENET_CONFIGS, warmup=False)
            elif name == "throughput":
                import throughput

                results["throughput"] = throughput.run(work, p["throughput_duration"], p["throughput_reps"], log=log)
            elif name == "cancel":
                import cancel

                results["cancel"] = cancel.run(work, p["cancel_reps"], log=log)
            elif name == "watch":
                import watch

                results["watch"] = watch.run(work, p["watch_reps"], p["watch_cli_reps"], log=log)
            elif name == "concurrency":
                import concurrency

                results["concurrency"] = concurrency.run(work, p["concurrency_reps"], log=log)
            elif name == "startup":
                import startup

                results["startup"] = startup.run(work, p["startup_reps"], log=log,
                                                 before=Path(args.before) if args.before else None)
            elif name == "buildwall":
                import buildwall

                results["buildwall"] = buildwall.run(work, p["buildwall_reps"],
                                                     before=Path(args.before) if args.before else None, log=log)
            elif name == "appcpu":
                import appcpu

                results["appcpu"] = appcpu.run(work, p["appcpu_reps"], before=Path(args.before) if args.before else None,
                                               log=log)
            elif name == "executors":
                import executors_cmp

                results["executors"] = executors_cmp.run(work, p["executor_reps"], p["transport_reps"],
                                                         p["transport_duration"], log=log)
            durations[name] = time.perf_counter() - t
    finally:
        work.cleanup()
    results["durations_s"] = durations
    results["total_s"] = time.perf_counter() - t_all
    results["loadavg_end"] = loadavg()
    results["targets"] = targets(results)
    print_table(results["targets"])
    print(f"total {results['total_s']:.0f} s; load at start {results['loadavg_start']}, at end {results['loadavg_end']}")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1, default=str) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
