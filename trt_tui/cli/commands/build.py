"""`trt-tui build MODEL...`: build engines headless, for scripts and CI logs."""

from __future__ import annotations

import argparse
import sys
import time

from ..ci import add_ci_options
from ..errors import EXIT_CANCELLED, EXIT_FAILED, EXIT_OK, EXIT_USAGE
from ..options import add_build_options, add_format_option

HELP = "build engines headless"

# How often `trt-tui build` and `watch` hand the builds' events to their renderer: what a terminal shows
# at most (`headless.TtyRenderer` draws 10 times a second). The app's shorter interval is for its latency; here
# each wake-up only costs the GIL that a build on a thread (`--executor thread`) shares (BENCHMARKS.md).
HEADLESS_PUMP = 0.1


def expect_from_history(renderer, history) -> None:
    """The renderer's status lines show progress and ETA by time from the history's durations of the
    same model and options (`history.estimates.expected_duration`); without a history, by phases."""
    if history is None:
        return
    from pathlib import Path

    from ...core.history.estimates import expected_duration

    def expected(spec) -> float | None:
        try:
            return expected_duration(history, Path(spec.model).resolve(), spec.options)[0]
        except Exception:  # an ETA is a convenience: the build is shown without one
            return None

    renderer.expected_seconds = expected


def options(b: argparse.ArgumentParser) -> None:
    b.add_argument("models", nargs="+", help="ONNX files")
    b.add_argument("-o", "--output", help="engine file (one model) or directory (several)")
    add_format_option(b)
    add_build_options(b)
    add_ci_options(b)


def run(args) -> int:
    from ..options import session_settings
    from ..startup import may_exit_at_once

    settings = session_settings(args)
    executor = settings.prewarmed_executor(len(args.models))
    executor.release_on_close = False  # this process exits once the builds are done
    if executor.own_process or (settings.jobs > 1 and len(args.models) > 1):
        code = _build_models(args, settings, executor)
    else:
        from ...core.build import native_log

        # The builds run in this process, one at a time, and nothing else writes to its stdout once the
        # renderer writes to a copy of it: TensorRT's own logger may use it, filtering lines in C++.
        with native_log.dedicated_stdout():
            code = _build_models(args, settings, executor)
    if not executor.outlives_exit:  # everything it wrote is closed; a local Ray's processes are not ours to drop
        may_exit_at_once()
    return code


def _build_models(args, settings, executor) -> int:
    from ...core.build.driver import spec_for
    from ...core.build.events import State
    from ...core.files.printable import escaped
    from ...core.history.output_paths import check_engines, check_trace
    from ...formats.registry import make_renderer
    from ..checks import check_model_readable, check_outputs, outputs_for, unique_models
    from ..ci import CiRun
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
        ci = CiRun(args, models, outputs)
        renderer = make_renderer(args.format, sys.stdout, args.verbose)
        for err in unreadable.values():
            print(f"trt-tui: {escaped(err)}", file=sys.stderr)
        session = settings.open(executor, HEADLESS_PUMP)
    except BaseException:
        executor.close()
        raise
    scheduler = session.scheduler
    renderer.numbered = session.history is not None
    expect_from_history(renderer, session.history)
    scheduler.subscribe(renderer.handle)
    jobs = []
    if len(buildable) > 1:
        from ...core.execution.queue_order import longest_first_by_history

        buildable = longest_first_by_history(buildable, session.history)
        if settings.auto_jobs is not None:
            renderer.remark(f"trt-tui: {settings.auto_jobs.text()}")
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
            if stopper.signal is None:
                ci.submit_repro(scheduler, buildable, options, renderer.message)
            while not scheduler.wait(timeout=0.2):
                pass
        finally:
            session.close()
            renderer.close()
    builds = [renderer.build(job.id) for job in jobs]  # as their events said
    states = [build.state for build in builds]
    for build in builds:
        if build.state is State.FAILED and build.error is not None:
            renderer.failed(build)
    cancelled = [build.model for build in builds if build.state is State.CANCELLED]
    renderer.totals(states, len(unreadable), time.monotonic() - started)
    gate = ci.finish(renderer, builds, unreadable, time.monotonic() - started)
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
    return EXIT_OK if gate is None else gate
