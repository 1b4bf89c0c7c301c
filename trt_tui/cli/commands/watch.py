"""`trt-tui watch [PATHS]`: build every model now (current engines are skipped), then rebuild each
one as it changes. A file that is not a model (empty, cut short, garbage) is reported as a failed
build of that file, and watching goes on."""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

from ..errors import EXIT_CANCELLED, EXIT_OK, EXIT_USAGE
from ..options import add_build_options, add_format_option

HELP = "build models, then rebuild each when its ONNX file changes"


def options(w: argparse.ArgumentParser) -> None:
    w.add_argument("paths", nargs="*", default=["."], help="ONNX files or directories (default: .)")
    add_format_option(w)
    add_build_options(w)


def run(args) -> int:
    from ...core.build.driver import spec_for
    from ...core.execution.rebuild import RebuildController
    from ...core.model.watch import ModelChange, ModelWatcher
    from ...formats.registry import make_renderer
    from ..checks import watched_models
    from ..options import build_options, session_settings
    from ..signals import Stopper, abandon
    from .build import HEADLESS_PUMP, expect_from_history

    started = time.monotonic()
    options = build_options(args)
    models = watched_models(args)
    if models is None:
        return EXIT_USAGE
    renderer = make_renderer(args.format, sys.stdout, args.verbose)
    session = session_settings(args).open(pump_interval=HEADLESS_PUMP)
    scheduler = session.scheduler
    scheduler.subscribe(renderer.handle)
    expect_from_history(renderer, session.history)
    controller = RebuildController(scheduler, lambda m: spec_for(m, options, force=args.force, replace=args.force),
                                   on_refused=lambda model, why: watcher.errors.append(f"not rebuilt: {why}"))
    watcher = ModelWatcher([Path(p) for p in args.paths if Path(p).exists()], controller.handle)
    active_at_signal: list[str] = []

    def stop(name: str) -> None:
        active_at_signal.extend(str(renderer.build(job.id).model) for job in scheduler.active())  # as their events say

    with Stopper(stop, lambda: abandon(scheduler)) as stopper:
        try:
            controller.handle([ModelChange("added", m.resolve(), 0.0) for m in models])
            watcher.start()
            renderer.message(f"trt-tui: watching {', '.join(str(d) for d in watcher.dirs)} (Ctrl-C to stop)")
            while stopper.signal is None and not renderer.reader_gone:  # `watch | head`: ends with its reader
                time.sleep(0.1)
                for err in watcher.errors:
                    renderer.message(f"trt-tui: {err}")
                watcher.errors.clear()
        finally:
            watcher.stop()
            session.close()
            renderer.close()
    # What was built while it watched, as `build` ends with (a job that is no build is not counted).
    renderer.totals([build.state for build in renderer.builds if build.is_build], 0, time.monotonic() - started)
    if active_at_signal:
        print(f"trt-tui: stopped by {stopper.name}: cancelled {', '.join(active_at_signal)}", file=sys.stderr)
    if stopper.signal is not None and stopper.signal != signal.SIGINT:
        return stopper.exit_code
    return EXIT_CANCELLED if active_at_signal else EXIT_OK
