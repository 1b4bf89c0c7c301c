"""What `trt-tui hook install` costs every interpreter start of the environment, with bytecode written
and with PYTHONDONTWRITEBYTECODE=1 (where a file run at start is compiled at every start), for no hook,
the previous `.pth` (it ran `run/env_hook.py` at every start) and the current one (a few lines; the
file is read only when TensorRT is imported). Side by side in one run, interleaved.

Two figures per variant, each from a fresh process:
- `site`: the time of `site.addsitedir(DIR)` in a child, DIR holding the variant's `.pth` (what Python's
  `site` does for site-packages at start): the hook's own cost, without the rest of the start's noise.
- `start`: the wall time of a whole `python -c pass` of a throwaway venv whose site-packages hold the
  variant's `.pth`: what a user's every Python start pays, the hook's share and all.

Both `.pth` files point at a copy of env_hook.py of their own, without bytecode beside it, as in a
package installed where bytecode is never written. The user's environment is not touched.
Usage: `python bench/hook_start.py [--reps N] [--out FILE]`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

from common import REPO, interleaved, loadavg, summary

sys.path.insert(0, str(REPO))

# The `.pth` line `trt-tui hook install` wrote before (4d23d6a): env_hook.py run at every start.
PREVIOUS = ("import importlib.machinery as m, os; p = {path}; os.path.isfile(p) and "
            "exec(m.SourceFileLoader('trt_tui_env_hook', p).get_code('trt_tui_env_hook'), "
            "{{'__name__': 'trt_tui_env_hook', '__file__': p}})")
CHILD = "import site, sys, time; t0 = time.perf_counter(); site.addsitedir(sys.argv[1]); print(time.perf_counter() - t0)"
HOOKS = ("none", "previous", "current")
BYTECODE = ("bytecode", "no_bytecode")


def pth_text_of(hook: str, directory: Path) -> str | None:
    """The variant's `.pth`, pointing at a copy of env_hook.py of its own in `directory` (no variant
    reads bytecode another one wrote)."""
    from trt_tui.cli.commands.hook import ENV_HOOK, MARKER, pth_text

    if hook == "none":
        return None
    copy = directory / "env_hook.py"
    copy.parent.mkdir(parents=True)
    shutil.copy(ENV_HOOK, copy)
    return f"{MARKER}\n{PREVIOUS.format(path=repr(str(copy)))}\n" if hook == "previous" else pth_text(copy)


def site_packages(env_dir: Path) -> Path:
    return next(env_dir.glob("lib/python*/site-packages"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "hook_start.json"))
    args = parser.parse_args()
    from trt_tui.cli.commands.hook import PTH_NAME

    with tempfile.TemporaryDirectory(prefix="trt-tui-bench-hook-start-") as root:
        root_path = Path(root)
        variants = [f"{hook}/{code}" for code in BYTECODE for hook in HOOKS]
        site_dirs, pythons = {}, {}
        for variant in variants:
            hook, code = variant.split("/")
            here = root_path / hook / code
            text = pth_text_of(hook, here / "installed")
            site_dirs[variant] = here / "site"
            site_dirs[variant].mkdir(parents=True)
            venv.EnvBuilder(with_pip=False, symlinks=True).create(here / "venv")
            pythons[variant] = here / "venv" / "bin" / "python"
            if text is not None:
                (site_dirs[variant] / PTH_NAME).write_text(text, encoding="utf-8")
                (site_packages(here / "venv") / PTH_NAME).write_text(text, encoding="utf-8")
        runtime = root_path / "runtime"  # no app listens
        runtime.mkdir(mode=0o700)
        base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE")}
        base["XDG_RUNTIME_DIR"] = str(runtime)
        envs = {"bytecode": base, "no_bytecode": {**base, "PYTHONDONTWRITEBYTECODE": "1"}}
        results: dict[str, dict[str, list[float]]] = {v: {"site": [], "start": []} for v in variants}
        for rep, variant in interleaved(variants, args.reps + 1):
            hook, code = variant.split("/")
            done = subprocess.run([sys.executable, "-c", CHILD, str(site_dirs[variant])], capture_output=True,
                                  text=True, env=envs[code], check=True, timeout=60)
            t0 = time.perf_counter()
            subprocess.run([str(pythons[variant]), "-c", "pass"], env=envs[code], check=True, timeout=60)
            wall = time.perf_counter() - t0
            if rep:  # the first round warms up: caches, and the bytecode variants' bytecode
                results[variant]["site"].append(float(done.stdout))
                results[variant]["start"].append(wall)
        # the variants are what they claim: without bytecode nothing was written beside env_hook.py
        for hook in ("previous", "current"):
            assert not (root_path / hook / "no_bytecode" / "installed" / "__pycache__").exists()
        assert (root_path / "previous" / "bytecode" / "installed" / "__pycache__").exists()
    report = {"python": sys.version.split()[0], "reps": args.reps, "load": loadavg(),
              **{variant: {part: summary(values) for part, values in parts.items()} for variant, parts in results.items()}}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    for variant, parts in results.items():
        print(f"{variant:>22}: site dir {summary(parts['site'])['median'] * 1e3:6.3f} ms, whole start "
              f"{summary(parts['start'])['median'] * 1e3:6.2f} ms (medians of {args.reps})")


if __name__ == "__main__":
    main()
