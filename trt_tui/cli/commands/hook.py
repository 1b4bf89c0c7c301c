"""`trt-tui hook install|remove`: every Python process of this environment reports its TensorRT builds
to a running trt-tui app.

`install` writes `trt-tui-hook.pth` into the environment's site-packages; Python's `site` runs its one
code line at each interpreter start, which adds a finder that reads and runs `trt_tui/run/env_hook.py`
when TensorRT is imported, and not before (see there: it acts only while an app listens). `remove` deletes it.
Both are idempotent and say what they did in one line. A file of that name that trt-tui did not write
is neither replaced nor removed.
"""

from __future__ import annotations

import argparse
import os
import sys
import sysconfig
from pathlib import Path

from ..errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE

PTH_NAME = "trt-tui-hook.pth"
MARKER = "# trt-tui hook: written by `trt-tui hook install`, removed by `trt-tui hook remove`"
ENV_HOOK = Path(__file__).resolve().parents[2] / "run" / "env_hook.py"
HELP = "install or remove the hook that shows every Python build of this environment in the app"


def options(h: argparse.ArgumentParser) -> None:
    h.add_argument("action", choices=("install", "remove"),
                   help="install: every Python of this environment reports its TensorRT builds to a running "
                        "trt-tui app; remove: no longer")


def pth_path() -> Path:
    """The hook's file in the site-packages of the environment trt-tui runs in."""
    return Path(sysconfig.get_paths()["purelib"]) / PTH_NAME


# Evaluated when the program imports TensorRT, never at start (a string, so that no start compiles
# it): env_hook.py's names, read once (`C` keeps them), and the import handed to its finder; nothing
# where trt-tui was uninstalled and the file is gone.
ON_TENSORRT = ("(C.get('hook') or C.setdefault('hook', __import__('runpy').run_path(P, run_name='trt_tui_env_hook')))"
               "['TensorRTFinder']().find_spec(n, *a) if __import__('os').path.isfile(P) else None")


def pth_text(env_hook: Path = ENV_HOOK) -> str:
    """The hook's file: the marker, then the line every interpreter start of the environment runs. It
    adds a finder that answers for nothing but TensorRT's two module names and reads nothing, so a start
    pays for compiling this one line only: env_hook.py itself, run at each start, was compiled at each
    start where bytecode is never written (PYTHONDONTWRITEBYTECODE, common in containers; figures:
    BENCHMARKS.md). `P`: the path of `env_hook`."""
    code = ("import sys; sys.meta_path.insert(0, type('TensorRTFinder', (), {'find_spec': lambda s, n, *a, "
            f"P={str(env_hook)!r}, M={ON_TENSORRT!r}, C={{}}: eval(M) if n in ('tensorrt', 'tensorrt_rtx') else None}})())")
    return f"{MARKER}\n{code}\n"


def _ours(path: Path) -> bool | None:
    """None: no such file; else whether trt-tui wrote it (its first line is the marker)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            return file.readline().rstrip("\n") == MARKER
    except FileNotFoundError:
        return None


def install(path: Path) -> tuple[int, str]:
    from ...core.files.atomic import atomic_file

    ours = _ours(path)
    text = pth_text()
    if ours is False:
        return EXIT_USAGE, f"{path} exists and was not written by trt-tui: not replacing it"
    if ours and path.read_text(encoding="utf-8") == text:
        return EXIT_OK, f"hook already installed: {path}"
    with atomic_file(path, "w", encoding="utf-8") as file:
        file.write(text)
    again = "updated" if ours else "installed"
    return EXIT_OK, f"hook {again}: {path} (Python programs of {sys.prefix} now show their builds in a running trt-tui)"


def remove(path: Path) -> tuple[int, str]:
    ours = _ours(path)
    if ours is None:
        return EXIT_OK, f"hook not installed (no {path})"
    if not ours:
        return EXIT_USAGE, f"{path} was not written by trt-tui: not removing it"
    os.unlink(path)
    return EXIT_OK, f"hook removed: {path}"


def run(args) -> int:
    from ...core.files.printable import escaped

    path = pth_path()
    try:
        code, line = (install if args.action == "install" else remove)(path)
    except OSError as exc:
        code, line = EXIT_FAILED, f"{path}: cannot {args.action} the hook: {exc.strerror or exc}"
    print(f"trt-tui: {escaped(line)}", file=sys.stdout if code == EXIT_OK else sys.stderr)
    return code
