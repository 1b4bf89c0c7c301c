"""One module per command, each with its `HELP`, its `options(parser)` and its `run(args)`; `COMMANDS`
is the table `main`, the parsers and `trt-tui -h` read. The modules are light at import (what a command
needs is imported when it runs): the table is read at every start."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from . import app, build, bundle, cache, cpp, history, hook, run, samples, serve, trust, watch


class Subcommand(NamedTuple):
    help: str
    options: Callable  # adds the command's options to its parser
    handler: Callable  # runs it: args -> exit code


def _command(module) -> Subcommand:
    return Subcommand(module.HELP, module.options, module.run)


# name -> Subcommand, in the order `trt-tui -h` names them
COMMANDS: dict[str, Subcommand] = {
    "build": _command(build),
    "watch": _command(watch),
    "history": _command(history),
    "bundle": _command(bundle),
    "run": _command(run),
    "samples": _command(samples),
    "serve": _command(serve),
    "hook": _command(hook),
    "trust": _command(trust),
    "cache": _command(cache),
    "cpp": _command(cpp),
}
SUBCOMMANDS = tuple(COMMANDS)
APP = _command(app)  # what runs without a subcommand
