"""`trt-tui [PATHS]`: the full-screen app, what runs without a subcommand."""

from __future__ import annotations

import argparse

from ...version import __version__
from ..errors import UsageError
from ..options import add_build_options
from ..types import seconds

HELP = "Watch TensorRT engine builds live and cancel them."


def options(app: argparse.ArgumentParser) -> None:
    app.add_argument("paths", nargs="*", default=["."], help="ONNX files or directories (default: .)")
    app.add_argument("--demo", action="store_true", help="write the sample models to a temporary directory and open them")
    app.add_argument("--theme", help="theme name (--list-themes prints them)")
    app.add_argument("--watch", action="store_true", help="rebuild models when their ONNX files change")
    app.add_argument("--notify-after", type=seconds, default=10.0, metavar="SECONDS", help="a build that ends after longer than this rings and notifies (default 10; 0: never)")
    app.add_argument("--log-level", choices=("warning", "info", "verbose", "error"), default=None,
                     help="the log pane's level at start (l cycles it; default: as you left it, else info)")
    app.add_argument("--version", action="version", version=f"trt-tui {__version__}")
    app.add_argument("--attach", metavar="SOCKET", help=argparse.SUPPRESS)  # a `serve` browser session
    add_build_options(app)


def app_config(args):
    """The app's configuration from the command line (the app itself never reads argv)."""
    from ...core.build.driver import default_output
    from ...core.history.output_paths import check_trace
    from ...core.model.discover import find_models
    from ...ui.app import AppConfig
    from ...ui.view_prefs import default_path as default_view_file
    from ..options import build_options, session_settings

    paths = list(args.paths)
    if args.demo:  # the app writes the sample models into it as it starts, quickest to build first
        from ...core.model.demo_dir import make_demo_dir

        paths = [str(make_demo_dir())]
    models = find_models(paths)[0] if args.trace else []
    check_trace(args.trace, models, [default_output(m) for m in models], args.history, args.force)
    return AppConfig(paths=paths, options=build_options(args), theme=args.theme, log_level=args.log_level,
                     watch=args.watch, keys=args.keys, notify_after=args.notify_after,
                     session=session_settings(args), demo=args.demo,
                     view_file=None if args.attach else default_view_file())  # a served tab keeps none


def app_session(args, config):
    """What the app shows, made here and handed to it (the UI imports no mode's machinery): with
    `--attach`, a `serve` tab's client of the build server; else the app's own builds, whose spare
    build processes start now."""
    from ...ui.modes import AttachedViewer, OwnBuilds

    if args.attach:
        from ...serve.build_server import attach_session

        return AttachedViewer(attach_session(args.attach, config.session.history))
    return OwnBuilds.open(config.session)


def run(args) -> int:
    from ...ui.app import make_app
    from ...ui.notifier import run_app
    from ..checks import path_problem, terminal_problem, theme_problem

    local = not args.attach  # an attached app is `serve`'s, drawn in a browser through pipes
    problem = ((local and not args.demo and path_problem(args.paths, args.watch)) or theme_problem(args.theme)
               or (local and terminal_problem()))
    if problem:
        raise UsageError(problem)
    config = app_config(args)
    # The session first (its spare build processes start now), then the app that shows it.
    return run_app(make_app(config, app_session(args, config))).return_code or 0  # then a line of what it built
