"""The width `trt-tui -h` wraps its help to, found without `shutil`."""

from __future__ import annotations

import argparse
import os
import sys


def terminal_columns() -> int:
    """What `shutil.get_terminal_size().columns` says ($COLUMNS, else the terminal of stdout, else 80),
    without importing shutil."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class HelpFormatter(argparse.HelpFormatter):
    """argparse's, sized as argparse sizes it. argparse makes a formatter for every option it is given
    (to check its metavar) and the stock one imports `shutil` (and with it bz2 and lzma, ~3-5 ms) to
    ask the terminal's width: every `trt-tui build` paid that before its build began, help or not."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         terminal_columns() - 2 if width is None else width)
