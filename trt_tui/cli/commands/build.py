"""`trt-tui build MODEL...`: build engines headless, for scripts and CI logs."""

from __future__ import annotations

import argparse
import sys
import time

from ..errors import EXIT_CANCELLED, EXIT_FAILED, EXIT_OK, EXIT_USAGE
from ..options import add_build_options

HELP = "build engines headless"

# How often `trt-tui build` and `watch` hand the builds' events to their renderer: what a terminal shows
# at most (`headless.TtyRenderer` draws 10 times a second). The app's shorter interval is for its latency; here
# each wake-up only costs the GIL that a build on a thread (`--executor thread`) shares (BENCHMARKS.md).
HEADLESS_PUMP = 0.1


def options(b: argparse.ArgumentParser) -> None:
    b.add_argument("models", nargs="+", help="ONNX files")
    b.add_argument("-o", "--output", help="engine file (one model) or directory (several)")
    b.add_argument("--json", action="store_true", help="one JSON object per event per line")
    add_build_options(b)


def run(args) -> int:
    from ..options import session_settings
    from ..startup import may_exit_at_once

    settings = session_settings(args)
    executor = settings.prewarmed_executor(len(args.models))
    if executor is not None:
        executor.release_on_close = False  # this process exits once the builds are done
    if args.executor != "thread" or (settings.jobs > 1 and len(args.models) > 1):
        code = _build_models(args, settings, executor)
    else:
        from ...core.build import native_log

        # The builds run in this process, one at a time, and nothing else writes to its stdout once the
        # renderer writes to a copy of it: TensorRT's own logger may use it, filtering lines in C++.
        with native_log.dedicated_stdout():
            code = _build_models(args, settings, executor)
    if args.executor != "ray":  # everything it wrote is closed; a local Ray's processes are not ours to drop
        may_exit_at_once()
    return code


def _build_models(args, settings, executor) -> int:
    from ...core.build.driver import spec_for
    from ...core.build.events import State
    from ...core.files.output_paths import check_engines, check_trace
    from ...core.files.printable import escaped
    from ...headless import make_renderer, totals_line
    from ..checks import check_model_readable, check_outputs, outputs_for, unique_models
    from ..options import build_options
    from ..signals import Stopper, abandon

    started = time.monotonic()
    try:
        options = build_options(args)
        models = unique_models(args.models)
        unreadable = {m: err for m in models if (err := check_model_readable(m))}
        buildable = [m for m in models if m not in unreadable]
        outputs = outputs_for(models, args.output)
        check_engines(outputs, args.history)
        check_outputs(models, outputs, args.force)
        check_trace(args.trace, models, outputs, args.history, args.force)
        renderer = make_renderer("json" if args.json else "auto", sys.stdout, args.verbose)
        for err in unreadable.values():
            print(f"trt-tui: {escaped(err)}", file=sys.stderr)
        session = settings.open(executor, HEADLESS_PUMP)
    except BaseException:
        if executor is not None:
            executor.close()
        raise
    scheduler = session.scheduler
    scheduler.subscribe(renderer.handle)
    jobs = []
    if len(buildable) > 1:
        from ...core.execution.queue_order import longest_first_by_history

        buildable = longest_first_by_history(buildable, session.history)
        if settings.auto_jobs is not None and not args.json:  # every JSON line is one build's
            renderer.message(f"trt-tui: {settings.auto_jobs.text()}")
    output_of = dict(zip(models, outputs))

    def cancel_everything(name: str) -> None:
        again = "Ctrl-C" if name == "SIGINT" else name
        renderer.message(f"trt-tui: {name}: cancelling every build ({again} again to exit at once)")
        scheduler.cancel_all()

    with Stopper(cancel_everything, lambda: abandon(scheduler)) as stopper:
        try:
            for model in buildable:
                if stopper.signal is None:
                    jobs.append(scheduler.submit(spec_for(model, options, output=output_of[model], force=args.force,
                                                          replace=args.force)))
            while not scheduler.wait(timeout=0.2):
                pass
        finally:
            session.close()
            renderer.close()
    builds = [renderer.build(job.id) for job in jobs]  # as their events said
    states = [build.state for build in builds]
    for build in builds:
        if build.state is State.FAILED and build.error is not None and not args.json:
            print(f"trt-tui: {escaped(build.error)}", file=sys.stderr)
    cancelled = [build.model for build in builds if build.state is State.CANCELLED]
    if not args.json:
        renderer.message(totals_line(states, len(unreadable), time.monotonic() - started))
    if stopper.signal is not None:
        print(f"trt-tui: stopped by {stopper.name}: "
              + (f"cancelled {escaped(', '.join(cancelled))}" if cancelled else "no build was running"), file=sys.stderr)
        return stopper.exit_code
    if State.CANCELLED in states:
        return EXIT_CANCELLED
    if unreadable:
        return EXIT_USAGE
    if State.FAILED in states or session.errors:
        return EXIT_FAILED
    return EXIT_OK
