"""`trt-tui` command line: the app by default, `build`, `watch`, `history`, `bundle`, `run`, `samples`
and `serve` for scripts.

- `commands/`: one module per command and the table of them (name -> help, options, handler)
- `options`: the options every building command shares, made into `BuildOptions` and `SessionSettings`
- `types`: the values options take, checked where they are parsed
- `checks`: models, engines, terminal, paths and theme, checked before anything starts
- `signals`: SIGINT, SIGTERM and SIGHUP while a command runs
- `startup`: what keeps it quick to start and end (help sizing, one subparser, fast exit)
- `parser`, `suggest`, `errors`, `main`: the parsers, "did you mean", exit codes, and the entry point
- `serve_tab`: the entry point of a `serve` browser tab's app process

The top of the import order (`[tool.importlinter]` in pyproject.toml): it builds what each mode needs
(a served tab's client, a program's run) and hands it to the app; it may import `ui`, `api`, `serve`,
`run`, `headless` and `core`, and none of them imports it.
"""

from __future__ import annotations

from .commands import COMMANDS, SUBCOMMANDS
from .commands.app import app_config
from .main import entry, main
from .parser import app_parser, build_parser, command_parser, every_parser

__all__ = ["COMMANDS", "SUBCOMMANDS", "app_config", "app_parser", "build_parser", "command_parser", "entry",
           "every_parser", "main"]
