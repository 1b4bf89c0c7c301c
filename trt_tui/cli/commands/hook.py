"""`trt-tui hook install|remove`: every Python process of this environment reports its TensorRT builds
to a running trt-tui app.

`install` writes `trt-tui-hook.pth` into the environment's site-packages; Python's `site` runs its one
code line at each interpreter start, which reads and runs `trt_tui/run/env_hook.py` (see there: a
finder that acts only when TensorRT is imported, and only while an app listens). `remove` deletes it.
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


def pth_text(env_hook: Path = ENV_HOOK) -> str:
    """The hook's file: the marker, then one line that runs `env_hook` if it is still there (trt-tui
    uninstalled: nothing), from its cached bytecode (`get_code`; compiling it would cost more at
    every start). Not imported: that would import the `trt_tui` package first, several times dearer."""
    path = repr(str(env_hook))
    code = (f"import importlib.machinery as m, os; p = {path}; os.path.isfile(p) and "
            "exec(m.SourceFileLoader('trt_tui_env_hook', p).get_code('trt_tui_env_hook'), "
            "{'__name__': 'trt_tui_env_hook', '__file__': p})")
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
