"""The parsers: the app's (`trt-tui [PATHS]`) and the subcommands' (`trt-tui SUBCOMMAND`), each
command's options taken from the command table."""

from __future__ import annotations

import argparse

from .commands import APP, COMMANDS, SUBCOMMANDS
from .errors import EXIT_USAGE
from .startup import HelpFormatter


class Parser(argparse.ArgumentParser):
    """argparse's errors as one line (its usage block buries the one line that says what is wrong)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        from .suggest import explain_unrecognized

        self.exit(EXIT_USAGE, f"{self.prog}: error: {explain_unrecognized(message, self)} (see {self.prog} -h)\n")


def app_parser() -> argparse.ArgumentParser:
    """`trt-tui [PATHS]`: the app."""
    from .config_file import add_config_options

    app = Parser(prog="trt-tui", description=f"{APP.help} Subcommands: " + ", ".join(SUBCOMMANDS)
                 + " (trt-tui SUBCOMMAND -h).")
    APP.options(app)
    add_config_options(app)
    return app


def command_parser(only: str | None = None) -> argparse.ArgumentParser:
    """`trt-tui SUBCOMMAND ...`; with `only`, that subcommand's parser alone (`startup`)."""
    sub = Parser(prog="trt-tui")
    cmds = sub.add_subparsers(dest="command", required=True, parser_class=Parser)
    for name, command in COMMANDS.items():
        if only is None or name == only:
            command.options(cmds.add_parser(name, help=command.help))
    return sub


def build_parser() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """Both parsers, every subcommand in the second."""
    return app_parser(), command_parser()


def every_parser() -> list[argparse.ArgumentParser]:
    """The app's parser and each command's: which options a config file may give any of them."""
    from .config_file import parsers_in

    return [app_parser(), *parsers_in(command_parser())]
