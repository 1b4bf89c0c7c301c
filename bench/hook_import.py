"""What `trt-tui hook install` costs a Python process of the environment: its interpreter start and its
`import tensorrt_rtx`, each in a fresh process, side by side in one run, interleaved.

Variants:
- `plain`: no hook.
- `hooked`: the hook's `.pth` (the very text `trt-tui hook install` writes), no app listening: the
  finder is added at start, and at the import it finds no collector socket and does nothing else.
- `hooked_app`: the same while a collector listens (started in this process): the import also patches
  TensorRT (the cost a user pays only while the app runs).

Each child runs `site.addsitedir(DIR)` (where DIR holds the `.pth`, or nothing for `plain`), as Python's
`site` does for site-packages at start, then `import tensorrt_rtx`, timing each with `perf_counter`.
The user's environment is not touched. Usage: `python bench/hook_import.py [--reps N] [--out FILE]`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from common import REPO, interleaved, loadavg, measure_as_installed, summary

sys.path.insert(0, str(REPO))

CHILD = """
import site, sys, time
t0 = time.perf_counter()
site.addsitedir(sys.argv[1])
t1 = time.perf_counter()
import tensorrt_rtx
t2 = time.perf_counter()
print(t1 - t0, t2 - t1, int(any(type(f).__name__ == "TensorRTFinder" for f in sys.meta_path)),
      int("trt_tui.run.hook" in sys.modules))
"""


def run_child(site_dir: Path, env: dict) -> tuple[float, float, int, int]:
    done = subprocess.run([sys.executable, "-c", CHILD, str(site_dir)], capture_output=True, text=True, env=env,
                          check=True, timeout=120)
    start, imported, finder, patched = done.stdout.split()
    return float(start), float(imported), int(finder), int(patched)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "hook_import.json"))
    args = parser.parse_args()
    measure_as_installed()
    from trt_tui.cli.commands.hook import PTH_NAME, pth_text
    from trt_tui.core.execution.scheduler import Scheduler
    from trt_tui.run.collector.server import Collector

    with tempfile.TemporaryDirectory(prefix="trt-tui-bench-hook-") as root:
        root_path = Path(root)
        plain, hooked = root_path / "plain", root_path / "hooked"
        plain.mkdir()
        hooked.mkdir()
        (hooked / PTH_NAME).write_text(pth_text(), encoding="utf-8")
        runtime = root_path / "runtime"
        runtime.mkdir(mode=0o700)
        env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)
        scheduler = Scheduler(1)
        collector = None
        results: dict[str, dict[str, list]] = {v: {"start": [], "import": []} for v in ("plain", "hooked", "hooked_app")}
        checks: dict[str, set] = {v: set() for v in results}
        try:
            for rep, variant in interleaved(list(results), args.reps + 1):
                if variant == "hooked_app" and collector is None:
                    collector = Collector(scheduler, vitals=None).start()
                elif variant != "hooked_app" and collector is not None:
                    collector.close()
                    collector = None
                start, imported, finder, patched = run_child(plain if variant == "plain" else hooked, env)
                checks[variant].add((finder, patched))
                if rep == 0:
                    continue  # warm-up: caches, bytecode
                results[variant]["start"].append(start)
                results[variant]["import"].append(imported)
        finally:
            if collector is not None:
                collector.close()
            scheduler.shutdown()
    # The variants are what they claim: the finder is there when hooked, the patch only with an app.
    assert checks == {"plain": {(0, 0)}, "hooked": {(1, 0)}, "hooked_app": {(1, 1)}}, checks
    report = {"python": sys.version.split()[0], "reps": args.reps, "load": loadavg(),
              **{variant: {part: summary(values) for part, values in parts.items()}
                 for variant, parts in results.items()}}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    for variant, parts in results.items():
        print(f"{variant:>10}: site dir {summary(parts['start'])['median'] * 1e3:7.2f} ms, "
              f"import tensorrt_rtx {summary(parts['import'])['median'] * 1e3:7.1f} ms (median of {args.reps})")


if __name__ == "__main__":
    main()
