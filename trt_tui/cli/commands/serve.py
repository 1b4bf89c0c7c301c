"""`trt-tui serve [PATHS]`: the app for web browsers; the builds belong to this process (see serve/)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

from ..errors import EXIT_USAGE, UsageError
from ..options import add_build_options
from ..types import int_in, seconds

HELP = "serve the app to web browsers; the builds belong to this process"
# Each tab is an app process of its own (~50 MB): at most this many at once, in all and per client
# address (serve/tab_limits.py).
DEFAULT_TABS = 8
DEFAULT_TABS_PER_CLIENT = 4
DEFAULT_SLOT_WAIT = 10.0  # seconds (serve.tab_limits.SLOT_WAIT): more than a closed tab's app takes to end


def options(v: argparse.ArgumentParser) -> None:
    v.add_argument("paths", nargs="*", default=["."], help="ONNX files or directories (default: .)")
    v.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    v.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    v.add_argument("--token-file", metavar="FILE", help="the token to require (default: $TRT_TUI_TOKEN, else random)")
    v.add_argument("--no-token", action="store_true", help="require no token (loopback addresses only)")
    v.add_argument("--token", nargs="?", const="", help=argparse.SUPPRESS)  # refused with a value: ps shows it
    v.add_argument("--theme", help="theme name (see themes/)")
    v.add_argument("--max-tabs", type=int_in(1, 1000), default=DEFAULT_TABS, metavar="N",
                   help=f"browser tabs open at once, each an app process (default {DEFAULT_TABS})")
    v.add_argument("--max-tabs-per-client", type=int_in(1, 1000), default=DEFAULT_TABS_PER_CLIENT, metavar="N",
                   help=f"tabs open at once from one client address (default {DEFAULT_TABS_PER_CLIENT})")
    v.add_argument("--slot-wait", type=seconds, default=DEFAULT_SLOT_WAIT, metavar="SECONDS",
                   help="how long a tab beyond those limits waits for a slot to free before it is refused"
                   f" (default {DEFAULT_SLOT_WAIT:g}: a reloaded tab's old app is still ending)")
    add_build_options(v)


def tab_command(args, paths: list[str]) -> Callable[[str], list[str]]:
    """Each browser tab's app process (`cli.serve_tab`): the app attached to the build server's socket,
    with this server's backend, theme and history, dying with this process."""
    def command(socket_path: str) -> list[str]:
        argv = [sys.executable, "-m", "trt_tui.cli.serve_tab", str(os.getpid()),
                "--attach", socket_path, "--backend", args.backend]
        if args.theme:
            argv += ["--theme", args.theme]
        if args.history:
            argv += ["--history", str(Path(args.history).resolve())]
        return argv + ["--", *paths]

    return command


def run(args) -> int:
    from ... import serve
    from ..checks import theme_problem, watched_models
    from ..options import build_options, session_settings

    if problem := theme_problem(args.theme):  # found now, not by each browser session's app
        raise UsageError(problem)
    try:
        token = serve.check(args.host, args.port, args.token, args.token_file, args.no_token)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    options = build_options(args)
    models = watched_models(args)
    if models is None:
        return EXIT_USAGE
    paths = [str(Path(p).resolve()) for p in args.paths if Path(p).exists()]
    try:
        return serve.serve(session_settings(args).open(), options, paths, args.host, args.port, token,
                           tab_command(args, paths), serve.TabLimits(args.max_tabs, args.max_tabs_per_client, args.slot_wait))
    except OSError as exc:
        raise UsageError(f"{args.host}:{args.port}: cannot listen: {exc.strerror or exc}") from None
