"""`main`: read the command line (and the config file), run the command, turn every user error into
one line and an exit code (`errors`). `entry` is the `trt-tui` console script."""

from __future__ import annotations

import os
import sys

from .commands import APP, COMMANDS, SUBCOMMANDS
from .errors import EXIT_CANCELLED, EXIT_OK, EXIT_USAGE, UsageError
from .parser import app_parser, command_parser, every_parser
from .startup import finish, only_command, reader_gone


def entry() -> None:
    """The `trt-tui` command (and `python -m trt_tui`): `main`, then exit with its code (`startup`);
    output into a pipe its reader has closed ends quietly, exit 0 (`startup.reader_gone`)."""
    try:
        code = main()
    except BrokenPipeError:
        if not reader_gone():
            raise
        code = EXIT_OK
    finish(code)


def main(argv: list[str] | None = None) -> int:
    from ..core.files.printable import escaped
    from ..core.history.output_paths import OutputRefused
    from .config_file import apply_config_file, print_config

    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] not in SUBCOMMANDS and not os.path.exists(argv[0]):
        from .suggest import unknown_command

        if typo := unknown_command(argv[0], SUBCOMMANDS):
            print(f"trt-tui: {typo}", file=sys.stderr)
            return EXIT_USAGE
    only = only_command(argv, SUBCOMMANDS)
    if any(arg == "--executor" or arg.startswith("--executor=") for arg in argv):
        from .options import name_installed_executor

        name_installed_executor(argv)  # an installed one's own options join the parser
    parser = command_parser(only) if only else app_parser()
    try:
        config = apply_config_file(parser, every_parser)  # the file's values are the parser's defaults
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed its one-line usage error
        return EXIT_USAGE if exc.code else EXIT_OK
    except UsageError as exc:
        print(f"trt-tui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if (warning := config.untrusted_warning(args)) is not None:
        print(f"trt-tui: {escaped(warning)}", file=sys.stderr)
    if getattr(args, "print_config", False):
        return print_config(config, parser, argv, args, app_parser)
    command = COMMANDS[args.command] if only else APP
    try:
        return command.handler(args)
    except (UsageError, OutputRefused) as exc:  # one line, whatever the file names in it hold
        print(f"trt-tui: {escaped(config.blame(str(exc), args))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_CANCELLED
