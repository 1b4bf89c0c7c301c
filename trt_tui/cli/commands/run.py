"""`trt-tui run -- CMD`: run a program and show its TensorRT builds: the app on a terminal, else (or
with --json or --headless) the headless renderers, the program's output passed through.

Signals (`signals.RunSignals`): SIGINT, SIGTERM and SIGHUP (the terminal closed) all stop the program
as Ctrl-C does: every build is cancelled, the program's process group gets SIGINT, SIGTERM, SIGKILL
`--grace` apart, the builds' final events are written, and trt-tui exits 128 + the signal's number
(130, 143, 129). A second signal kills the program at once.

Headless, the program's output is written exactly as it came (bytes, in pieces of bounded size), in
time order with its builds' events (`Timeline`), and all of it: a slow reader of trt-tui's stdout
slows the program down rather than cutting its output. If trt-tui could not write all of it, the
exit code says so (1 where the program's would have been 0) with one line on stderr.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time

from ..errors import EXIT_FAILED, UsageError
from ..options import add_format_option, add_vitals_options
from ..signals import RunSignals

HELP = "run a program and observe (and cancel) the TensorRT builds it makes"
APP_CLOSE = 5.0  # seconds the app has to close after its program ended on a signal


def options(r: argparse.ArgumentParser) -> None:
    r.add_argument("cmd", nargs=argparse.REMAINDER, help="-- PROGRAM [ARGS...]")
    add_format_option(r)  # any format is headless
    r.add_argument("--headless", action="store_true", help="headless even on a terminal")
    r.add_argument("--grace", type=float, default=3.0, metavar="SECONDS",
                   help="on stop: seconds between SIGINT, SIGTERM and SIGKILL (default 3)")
    r.add_argument("--verbose", action="store_true", help="relay TensorRT's verbose log too")
    r.add_argument("--theme", help="theme name (see themes/)")
    r.add_argument("--trace", metavar="FILE", help="write the builds' phases as Chrome trace-event JSON")
    r.add_argument("--force", action="store_true", help="replace a --trace file trt-tui did not write")
    r.add_argument("--history", metavar="PATH", help="build history database (default: user data directory)")
    r.set_defaults(keys={})  # the config file's [keys], as the app's
    add_vitals_options(r)


def run(args) -> int:
    from ...core.history.output_paths import check_trace, program_files
    from ..checks import check_history
    from ..options import vitals_config

    argv = list(args.cmd)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise UsageError("run: give the program after --, e.g. trt-tui run -- python build.py")
    if args.grace <= 0:
        raise UsageError(f"--grace must be more than 0 seconds, not {args.grace}")
    args.vitals = vitals_config(args)
    check_trace(args.trace, program_files(argv), (), args.history, args.force)
    check_history(args.history)
    if args.format is None and not args.headless and sys.stdout.isatty() and sys.stdin.isatty():
        from ..checks import theme_problem  # the app would open: its theme is checked first

        if problem := theme_problem(args.theme):
            raise UsageError(problem)
        return run_app(argv, args)
    return run_headless(argv, args)


def run_app(argv: list[str], args) -> int:
    from ...run.collector.publisher import run_publisher
    from ...run.observer import ProgramRun
    from ...ui.app import AppConfig, make_app
    from ...ui.modes import ObservedProgram

    run = ProgramRun(argv, grace=args.grace, verbose=args.verbose, trace=args.trace, vitals=args.vitals,
                     history=args.history)
    run.scheduler.subscribe(run_publisher(run))  # its builds in the app that listens, if one does
    app = make_app(AppConfig(keys=args.keys), ObservedProgram(run))
    if args.theme:
        app.theme = args.theme

    def quit_app(signum: int) -> None:
        threading.Thread(target=_ask_to_quit, args=(app,), name="trt-tui-run-quit", daemon=True).start()
        # The app may be unable to quit: its terminal is gone, or stopped taking output, and a write
        # blocks. The program is being stopped all the same (`RunSignals`); once it has ended, and
        # the app had time to close, trt-tui leaves without it.
        if run.wait_exit(3 * run.grace + 5):
            time.sleep(run.grace + APP_CLOSE)
        run.close()
        os._exit(128 + signum)

    try:
        with RunSignals(run, quit_app) as signals:
            app.run()
    finally:
        run.close()  # where the app could not close it (its terminal went away)
    if signals.signal is not None or app.return_code is None:
        return run.shell_exit_code
    return app.return_code


def _ask_to_quit(app) -> None:
    try:
        app.call_from_thread(app.action_quit)
    except Exception:  # the app is not running (any more): the close after it stops the program
        pass


def run_headless(argv: list[str], args) -> int:
    from ...core.build.events import State
    from ...core.build.tracker import Trackers
    from ...formats.registry import make_renderer
    from ...run.collector.publisher import run_publisher
    from ...run.observer import ProgramRun
    from ...run.timeline import Timeline

    renderer = make_renderer(args.format, sys.stdout, args.verbose)
    holder: dict[str, Timeline] = {}
    run = ProgramRun(argv, grace=args.grace, verbose=args.verbose,
                     output=lambda stream, pieces, at: holder["timeline"].add_output(stream, pieces, at),
                     trace=args.trace, stdin=None, vitals=args.vitals, history=args.history)
    renderer.numbered = run.session.history is not None
    run.scheduler.subscribe(run_publisher(run))  # its builds in the app that listens, if one does
    timeline = holder["timeline"] = Timeline(renderer.output, renderer.handle, started=time.monotonic())
    run.output_before = timeline.before
    builds = Trackers()
    origins: dict[int, float] = {}  # job -> the start of its clock, on this process's monotonic clock

    def to_timeline(job: int, events: list) -> None:
        """A build the program made goes out in time order with its output; the program itself does not."""
        build = builds.fold(job, events)
        if build.is_build and build.origin is not None:
            t0 = origins.setdefault(job, build.origin - (time.time() - time.monotonic()))
            timeline.add_events(job, t0, events)

    run.scheduler.subscribe(to_timeline)

    def say_stopping(signum: int) -> None:
        again = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        prefix = "" if signum == signal.SIGINT else f"{signal.Signals(signum).name}: "
        try:
            renderer.message(f"trt-tui: {prefix}stopping {run.name} ({again} again to kill it)")
        except (OSError, ValueError):
            pass

    with RunSignals(run, say_stopping):
        try:
            run.start()
            while not run.wait_exit(0.2):
                pass
            run.scheduler.wait(timeout=10.0)
        finally:
            run.close()
            timeline.close()
            try:
                renderer.close()
            except (OSError, ValueError):
                pass
    code = run.shell_exit_code
    program = next((build for build in builds if not build.is_build), None)
    if program is not None and program.state is State.FAILED and run.exit_code == 127:
        print(f"trt-tui: {program.error}", file=sys.stderr)
    note = run.unobserved_note()
    if note is not None:
        print(note, file=sys.stderr)
    problem = run.unread
    if timeline.failed is not None and not timeline.reader_gone:  # `trt-tui run ... | head`: as asked
        problem = f"{timeline.lost_bytes} bytes of {run.name}'s output could not be written: {timeline.failed}"
    if problem is not None:
        _say(f"trt-tui: {problem}")
        return code or EXIT_FAILED
    return code


def _say(line: str) -> None:
    try:
        print(line, file=sys.stderr)
    except (OSError, ValueError):
        pass
