"""What `trt-tui [PATHS]` checks before the full-screen app takes the terminal: a mistake there is
one line on stderr and exit 2, where the app would open on nothing, or draw its escape codes into a
log file and wait for keys that never come.

Each check returns the line to print, or None when all is well.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def terminal_problem(stdin=None, stdout=None) -> str | None:
    """The app reads keys from stdin and draws on stdout: both must be a terminal."""
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    missing = [name for name, stream in (("stdin", stdin), ("stdout", stdout))
               if stream is None or not stream.isatty()]
    if not missing:
        return None
    return (f"the app needs a terminal ({' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not one);"
            " for scripts and CI use `trt-tui build MODEL...` (or `trt-tui watch DIR`)")


def path_problem(paths: list[str], watch: bool) -> str | None:
    """A path that does not exist, or a directory with no ONNX file under it (where watching it for
    models to come was not asked for)."""
    for text in paths:
        path = Path(text)
        if not path.exists():
            return f"{text}: no such file or directory"
        if path.is_dir() and not watch and not _has_onnx(path):
            return f"no .onnx files under {text} (write the samples there with `trt-tui samples {text}`)"
    return None


def _has_onnx(directory: Path) -> bool:
    """Whether any `.onnx` file is under `directory`; stops at the first one (a large tree is not walked)."""
    for root, _dirs, files in os.walk(directory):
        if any(name.endswith(".onnx") and os.path.isfile(os.path.join(root, name)) for name in files):
            return True
    return False


def theme_problem(name: str | None) -> str | None:
    """An unknown `--theme`, with the names there are (trt-tui's and the user's first, then Textual's)."""
    if not name:
        return None
    known = known_themes()
    if name in known:
        return None
    return f"--theme {name}: no such theme; known themes: {', '.join(known)}"


def known_themes() -> list[str]:
    """The names `--theme` takes: trt-tui's and the user's first, then Textual's."""
    from textual.theme import BUILTIN_THEMES

    from .ui.themes import load_themes

    return list(dict.fromkeys([*(theme.name for theme in load_themes()), *BUILTIN_THEMES]))
