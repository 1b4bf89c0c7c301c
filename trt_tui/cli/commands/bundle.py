"""`trt-tui bundle ID`: one `.tar.gz` with what a maintainer asks for about one recorded build.

Light at import: the command table imports it for its options; what assembles the bundle
(`core.history.bundle`) is imported when the command runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import EXIT_OK, EXIT_USAGE

HELP = "write one .tar.gz of a past build for a bug report"


def options(b: argparse.ArgumentParser) -> None:
    b.add_argument("id", help="the build's id, as `trt-tui history` lists it")
    b.add_argument("-o", "--output", metavar="FILE", help="the bundle (default: trt-tui-bundle-ID.tar.gz here)")
    b.add_argument("--no-model", action="store_true", help="leave the model out (its hash and input shapes stay)")
    b.add_argument("--log", metavar="FILE", help="a saved log of the build to include (default: the log the"
                   " history kept)")
    b.add_argument("--trace", metavar="FILE", help="the trace trt-tui wrote of the build (--trace) to include"
                   " (default: the one the history names, if it is still there)")
    b.add_argument("--history", metavar="PATH", help="history database (default: user data directory)")


def _fail(message: str) -> int:
    from ...core.files.printable import escaped

    print(f"trt-tui: bundle: {escaped(message)}", file=sys.stderr)
    return EXIT_USAGE


def _readable(option: str, text: str | None) -> Path | None:
    if text is None:
        return None
    path = Path(text)
    if not path.is_file():
        raise ValueError(f"{option} {path}: " + ("not a regular file" if path.exists() else "no such file"))
    return path


def run(args) -> int:
    import sqlite3

    from ...core.history.bundle import BundleInput, check_bundle_output, write_bundle
    from ...core.history.output_paths import OutputRefused
    from ...core.history.records import History, HistoryError, default_path, history_path
    from ...core.observe.trace import trace_written_by_us

    if not (args.id.isascii() and args.id.isdigit() and len(args.id) <= 18):  # SQLite's ids are 64-bit
        return _fail(f"{args.id!r} is not a build id (trt-tui history lists them)")
    path = history_path(args.history) or default_path()
    try:
        with History(path, create=False) as history:
            record = history.get(int(args.id))
            kept = history.kept(int(args.id)) if record is not None else None
    except (HistoryError, sqlite3.Error) as exc:
        return _fail(str(exc))
    if record is None:
        return _fail(f"{path}: no build {args.id} in this history (trt-tui history lists them)")
    output = Path(args.output) if args.output else Path(f"trt-tui-bundle-{record.id}.tar.gz")
    try:
        log, trace = _readable("--log", args.log), _readable("--trace", args.trace)
        if trace is not None and not trace_written_by_us(trace):
            raise ValueError(f"--trace {trace}: not a trace trt-tui wrote")
        if trace is None and kept is not None and kept.trace:  # the one it went into, where it still is
            named = Path(kept.trace)
            trace = named if named.is_file() and trace_written_by_us(named) else None
        protected = [Path(record.model), path, *(p for p in (log, trace) if p is not None)]
        check_bundle_output(output, protected)
        lines = kept.log_lines if log is None and kept is not None else None
        write_bundle(BundleInput(record, include_model=not args.no_model, log=log, log_lines=lines, trace=trace,
                                 stacks=kept.stacks if kept is not None else None,
                                 output=kept.output if kept is not None else None), output)
    except (ValueError, OutputRefused) as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"{output}: cannot write the bundle: {exc.strerror or exc}")
    print(output)
    return EXIT_OK
