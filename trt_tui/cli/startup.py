"""What keeps `trt-tui` quick to start and to end, in one place, each with its reason.

- Help sizing: argparse makes a help formatter for every option it is given (to check its metavar),
  and the stock one imports `shutil` (and with it bz2 and lzma) to ask the terminal's width:
  every `trt-tui build` paid that before its build began, help or not. `HelpFormatter` sizes help as
  argparse does without it.
- One subparser: `trt-tui SUBCOMMAND` builds that subcommand's parser alone (`only_command`); the
  other six (four of them with every build option) were built at every start.
- Fast exit: after `trt-tui build`, `finish` ends the process without the interpreter's teardown
  (`os._exit`, once stdout and stderr are flushed). Freeing every module and object, the atexit
  handlers of libraries that have nothing left to do, and, with the thread executor, TensorRT's own
  destructors added to every build's wall time, where the operating system frees the same
  memory at once. A command says it may (`may_exit_at_once`) only once everything it wrote is closed
  (engines, history, trace; its build processes reaped, its spares stopped); other commands, and
  `main` called from Python, exit as usual.
- Quiet end into a closed pipe: `trt-tui history | head -1` ends as `git log | head` does, exit 0
  and nothing on stderr, once the reader has gone (`reader_gone`); stdout then points at /dev/null, so
  neither a later line nor the interpreter's last flush raises again.
"""

from __future__ import annotations

import argparse
import os
import sys

_exit_at_once = False


def terminal_columns() -> int:
    """What `shutil.get_terminal_size().columns` says ($COLUMNS, else the terminal of stdout, else 80),
    without importing shutil."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0 and sys.__stdout__ is not None:  # None: Python started without a stdout
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (ValueError, OSError):
            columns = 0
    return columns or 80


class HelpFormatter(argparse.HelpFormatter):
    """argparse's, sized as argparse sizes it, without importing shutil."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         terminal_columns() - 2 if width is None else width)


def only_command(argv: list[str], commands: tuple[str, ...]) -> str | None:
    """The subcommand whose parser alone is to be built, or None for the app's."""
    return argv[0] if argv and argv[0] in commands else None


def may_exit_at_once() -> None:
    """Called by a command once everything it wrote is closed: `finish` may skip the teardown."""
    global _exit_at_once
    _exit_at_once = True


def reader_gone() -> bool:
    """Whether stdout is a pipe whose reader has closed it (poll reports an error on its write end);
    if so, stdout is pointed at /dev/null: what is left to write has nobody to read it."""
    try:
        import select

        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLOUT)
        gone = any(events & select.POLLERR for _, events in poll.poll(0))
    except (AttributeError, OSError, ValueError):  # no stdout, or no poll on this system
        return False
    if gone:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    return gone


def finish(code: int) -> None:
    """Exit with `code`: at once where the command allowed it, else as usual."""
    try:
        sys.stdout.flush()  # here, not in the interpreter's teardown, where a closed pipe's error is printed
    except BrokenPipeError:
        if not reader_gone():
            raise
    except (AttributeError, OSError, ValueError):
        pass
    if _exit_at_once:
        try:
            sys.stderr.flush()
        except (AttributeError, OSError, ValueError):
            pass
        os._exit(code)
    sys.exit(code)
