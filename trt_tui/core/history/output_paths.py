"""Where a trace (and an engine) may be written: the rules every file trt-tui writes follows, checked
before any build.

A trace is never one of the run's inputs (a model, the program `trt-tui run` runs, any file its
command line names), never one of its outputs (an engine, a sidecar), never the build history; it is
a regular file or a new one (never a device node, a FIFO or a symbolic link, which would be written
through or taken away from what it stands for); and an existing file is replaced only where trt-tui
wrote it (the mark at the start of every trace it writes, `trace.TRACE_MARK`) or `--force` says so. An
engine or its sidecar is never the build history either (`check_engines`; the build checks the rest).
Each refusal is one line naming the file and what it is. The rules live with the history because
they name its path, which no output may be.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from ..build.driver import is_same_file
from ..build.sidecar import sidecar_path
from ..observe.trace import trace_written_by_us

__all__ = ["OutputRefused", "check_engines", "check_report_file", "check_trace", "program_files"]

# Files SQLite keeps beside a database while it is open.
_HISTORY_COMPANIONS = ("", "-journal", "-wal", "-shm")


class OutputRefused(Exception):
    """The file named cannot be written; the message is the one line the user sees."""


def program_files(argv: list[str]) -> list[Path]:
    """The files a program's command line names: the program (as the shell would find it) and every
    argument that is an existing file (a script, a config, a model)."""
    import shutil  # here: `trt-tui build` has no other use for it, and its import is not free

    files = []
    for i, arg in enumerate(argv):
        found = shutil.which(arg) if i == 0 and os.sep not in arg else arg
        if found and os.path.isfile(found):
            files.append(Path(found))
    return files


def _history_of(option: str | None) -> Path:
    from .records import default_path, history_path

    return history_path(option) or default_path()


def _is_history(path: Path, history: Path) -> bool:
    return any(is_same_file(path, Path(f"{history}{suffix}")) for suffix in _HISTORY_COMPANIONS)


def check_engines(engines: Iterable[Path], history: str | None = None) -> None:
    """Raise `OutputRefused` where an engine or its sidecar would land on the build history (`--history`,
    where given, else the one this run uses): `--force` replaces a file trt-tui did not write, never that."""
    database = _history_of(history)
    for engine in engines:
        for output in (engine, sidecar_path(engine)):
            if _is_history(output, database):
                raise OutputRefused(f"{output}: is the build history {database}; choose another -o")


def check_trace(text: str | None, inputs: Iterable[Path] = (), engines: Iterable[Path] = (),
                history: str | None = None, force: bool = False) -> None:
    """Raise `OutputRefused` where `--trace text` may not be written (see the module's rules), before
    any build: a trace is written as builds end, and a long build must not end in a refusal.
    `history`: --history, where given (else the history this run would use)."""
    check_report_file("--trace", "a trace", text, inputs, engines, history, force, trace_written_by_us)


def check_report_file(option: str, kind: str, text: str | None, inputs: Iterable[Path] = (),
                      engines: Iterable[Path] = (), history: str | None = None, force: bool = False,
                      written_by_us: Callable[[Path], bool] = lambda path: False) -> None:
    """As `check_trace`, for any file a run writes beside its engines (`option` names it, `kind` says
    what it is: "a trace", "a JUnit report"); `written_by_us(path)` tells a file of that kind trt-tui wrote."""
    if not text:
        return
    database = _history_of(history)
    path = Path(text)
    parent = path.parent if str(path.parent) else Path(".")
    plural = kind.split(" ", 1)[1] + "s"
    if path.is_symlink():
        raise OutputRefused(f"{option} {path}: is a symbolic link; trt-tui writes {plural} only to regular files")
    if path.is_dir():
        raise OutputRefused(f"{option} {path}: is a directory")
    if not parent.is_dir():
        raise OutputRefused(f"{option} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputRefused(f"{option} {path}: directory {parent} is not writable")
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        raise OutputRefused(f"{option} {path}: exists and is not a regular file; trt-tui writes only regular files")
    for model in inputs:
        if is_same_file(path, model):
            raise OutputRefused(f"{option} {path}: is an input of this run ({model}); choose another file")
    for engine in engines:
        for output, what in ((engine, "the engine"), (sidecar_path(engine), "the build record")):
            if is_same_file(path, output):
                raise OutputRefused(f"{option} {path}: is {what} {output} this run writes; choose another file")
    if _is_history(path, database):
        raise OutputRefused(f"{option} {path}: is the build history {database}; choose another file")
    if mode is not None and not force and not written_by_us(path):
        raise OutputRefused(f"{option} {path}: exists and is not {kind} trt-tui wrote; use --force to replace it")
