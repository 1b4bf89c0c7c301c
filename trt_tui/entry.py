"""The `trt-tui` command (and `python -m trt_tui`) as its process starts: what runs before the CLI.

`trt-tui build` builds in a child process (the default executor). Here, before the CLI is imported,
`build` forks that process (`core.execution.early_spare`): its TensorRT import runs beside the CLI's
imports and checks instead of after them, and the executor takes it as its first spare. Where the
command line names another executor it is not forked; where the config file does, or the command
ends before its build (a usage error, `--help`), it is stopped.
"""

from __future__ import annotations

import sys

_NOT_A_BUILD = ("-h", "--help", "--print-config", "--version")


def builds_in_a_child(argv: list[str]) -> bool:
    """A `trt-tui build` that, as far as its command line says, builds in a child process."""
    if not argv or argv[0] != "build" or any(a in _NOT_A_BUILD for a in argv):
        return False
    named = [b for a, b in zip(argv, argv[1:]) if a == "--executor"]
    named += [a.partition("=")[2] for a in argv if a.startswith("--executor=")]
    return all(name == "process" for name in named)


def entry() -> None:
    early = builds_in_a_child(sys.argv[1:])
    if early:
        from .core.execution import early_spare

        early_spare.start()
    from .cli.main import entry as cli_entry

    try:
        cli_entry()
    finally:  # a command that ended before its executor took the build process
        if early:
            early_spare.discard()
