"""`trt-tui history [MODEL]` (the table of past builds) and `trt-tui history diff` (two builds compared)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..errors import EXIT_OK, EXIT_USAGE, UsageError
from ..startup import terminal_columns
from ..types import int_in

HELP = "list past builds"


def options(h: argparse.ArgumentParser) -> None:
    h.add_argument("model", nargs="?", help="only this model (path or file name); `history diff A B` compares "
                   "builds A and B (ids), `history diff MODEL` the model's last two builds; `history log N` prints "
                   "build N's log")
    h.add_argument("targets", nargs="*", help=argparse.SUPPRESS)
    h.add_argument("--json", action="store_true", help="one JSON object per build (per diff with `diff`)")
    h.add_argument("-n", "--limit", type=int_in(1, 2**63 - 1), default=50, help="at most this many (default 50)")
    h.add_argument("--history", metavar="PATH", help="history database (default: user data directory)")


def run(args) -> int:
    from ...core.history.records import default_path, history_path
    from ...core.history.table import format_history
    from ..checks import read_history

    if args.model == "diff":  # `history diff ...`; a model file literally named "diff" needs ./diff
        return diff_command(args)
    if args.model == "log":  # `history log N`; likewise ./log for a model file named "log"
        return log_command(args)
    if args.targets:
        raise UsageError(f"history takes one model, got {len(args.targets) + 1} (did you mean `history diff`?)")
    path = history_path(args.history) or default_path()
    if not path.exists() and not args.history:
        print("no builds recorded")  # nothing built yet: nothing to read, and nothing is created
        return EXIT_OK
    records = read_history(path, lambda history: history.builds(args.model, limit=args.limit))
    if args.json:
        for record in records:
            print(json.dumps(record.as_json()))
        return EXIT_OK
    if not records:
        print("no builds recorded" + (f" for {args.model}" if args.model else ""))
        return EXIT_OK
    # Fitted to a terminal (or to $COLUMNS); a file or a pipe gets every column.
    width = terminal_columns() if sys.stdout.isatty() or os.environ.get("COLUMNS") else None
    print("\n".join(format_history(records, width)))
    return EXIT_OK


def diff_command(args) -> int:
    """`history diff A B` (two ids) or `history diff MODEL` (its last two successful builds); errors
    are one line."""
    from ...core.history.diff import DiffError, compare, format_comparison, pick
    from ...core.history.records import History, HistoryError, default_path, history_path

    path = history_path(args.history) or default_path()
    if not path.exists():
        print(f"trt-tui: history diff: {path}: no build history there yet", file=sys.stderr)
        return EXIT_USAGE
    try:
        with History(path, create=False) as history:
            a, b = pick(history, args.targets)
    except (DiffError, HistoryError) as exc:
        print(f"trt-tui: history diff: {exc}", file=sys.stderr)
        return EXIT_USAGE
    result = compare(a, b)
    print(json.dumps(result) if args.json else "\n".join(format_comparison(result)))
    return EXIT_OK


def log_command(args) -> int:
    """`history log N`: build N's log as the history kept it (every line at the level it was logged);
    errors are one line."""
    from ...core.files.printable import escaped
    from ...core.history.records import History, HistoryError, default_path, history_path

    if len(args.targets) != 1 or not (args.targets[0].isascii() and args.targets[0].isdigit()
                                      and len(args.targets[0]) <= 18):
        print("trt-tui: history log: give one build id (trt-tui history lists them)", file=sys.stderr)
        return EXIT_USAGE
    number = int(args.targets[0])
    path = history_path(args.history) or default_path()
    try:
        with History(path, create=False) as history:
            record, kept = history.get(number), history.kept(number)
    except HistoryError as exc:
        print(f"trt-tui: history log: {escaped(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    if record is None:
        print(f"trt-tui: history log: {escaped(str(path))}: no build {number} in this history", file=sys.stderr)
        return EXIT_USAGE
    if kept is None:
        print(f"trt-tui: history log: build {number}: its log is not kept (recorded before logs were, or dropped"
              " by the limit, $TRT_TUI_HISTORY_LOGS)", file=sys.stderr)
        return EXIT_USAGE
    for line in kept.log_lines:
        print(escaped(line))  # a model's own text must not move the cursor or forge lines
    return EXIT_OK
