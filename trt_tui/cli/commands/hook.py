"""`trt-tui hook install|remove`: every Python process of this environment reports its TensorRT builds
to a running trt-tui app.

`install` writes `trt-tui-hook.pth` into the environment's site-packages; Python's `site` runs its one
code line at each interpreter start, which adds a small finder (`START_CODE`) that reads and runs
`trt_tui/run/env_hook.py` when TensorRT is imported (see there: it acts only while an app listens). `remove` deletes it.
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


# What every interpreter start of the environment runs (the `.pth` line execs it): a finder that answers
# for nothing but TensorRT's two module names, and only then reads `run/env_hook.py` (see there) and
# hands the import to it. Kept to these few lines because it is compiled at every start: with
# PYTHONDONTWRITEBYTECODE (common in containers) env_hook.py itself, run at each start, was compiled
# at each start too (figures: BENCHMARKS.md). `_hook` caches env_hook's names once read.
START_CODE = """\
import os, sys
class TensorRTFinder:
    def find_spec(self, name, path=None, target=None, _hook={}):
        if name not in ('tensorrt', 'tensorrt_rtx') or os.environ.get('TRT_TUI_RUN_ADDRESS') or not os.path.isfile(P):
            return None
        if not _hook:
            from importlib.machinery import SourceFileLoader
            _hook.update(__name__='trt_tui_env_hook', __file__=P)
            exec(SourceFileLoader('trt_tui_env_hook', P).get_code('trt_tui_env_hook'), _hook)
        return _hook['TensorRTFinder']().find_spec(name, path, target)
if not any(type(f).__name__ == 'TensorRTFinder' for f in sys.meta_path):
    sys.meta_path.insert(0, TensorRTFinder())
"""


def pth_text(env_hook: Path = ENV_HOOK) -> str:
    """The hook's file: the marker, then one line that runs `START_CODE` in a namespace of its own (no
    name reaches `site`'s or the program's), with `P` the path of `env_hook`. Nothing is imported or
    read at start; where trt-tui was uninstalled, the finder finds env_hook.py gone and does nothing."""
    code = f"import sys; exec({START_CODE!r}, {{'P': {str(env_hook)!r}, '__name__': 'trt_tui_pth'}})"
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
