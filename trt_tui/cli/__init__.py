"""`trt-tui` command line: the app by default, `build`, `watch`, `history`, `bundle`, `run`, `samples`
and `serve` for scripts.

- `commands/`: one module per command and the table of them (name -> help, options, handler)
- `options`: the options every building command shares, made into `BuildOptions` and `SessionSettings`
- `types`: the values options take, checked where they are parsed
- `checks`: models, engines, terminal, paths and theme, checked before anything starts
- `signals`: SIGINT, SIGTERM and SIGHUP while a command runs
- `startup`: what keeps it quick to start and end (help sizing, one subparser, fast exit)
- `config_file`: the user's config file and a project's `[tool.trt-tui]` as the parsers' defaults
- `trust`: the project directories the user trusts with the keys that write, route or open something
- `parser`, `suggest`, `errors`, `main`: the parsers, "did you mean", exit codes, and the entry point

May import `core`, `headless`, `serve`, `ui.commands` (the key table, for `[keys]`) and (when the app
runs) `ui`; of those only `serve.tab` imports it (a browser tab's app process runs `main`).
"""

from __future__ import annotations

from .commands import COMMANDS, SUBCOMMANDS
from .commands.app import app_config
from .main import entry, main
from .parser import app_parser, build_parser, command_parser, every_parser

__all__ = ["COMMANDS", "SUBCOMMANDS", "app_config", "app_parser", "build_parser", "command_parser", "entry",
           "every_parser", "main"]
