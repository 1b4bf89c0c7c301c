"""What `trt-tui build` tells a CI system, beside its log: `--junit`, `$GITHUB_STEP_SUMMARY`, the
baseline gate (`--baseline`, `--save-baseline`, `--tolerance`) and the reproducibility check (`--repro`,
`--require-reproducible`). The command checks every option and file here before any build, submits the
repeated builds beside its own, and hands over the builds' trackers (their events) once all have ended.

A tripped gate exits `EXIT_GATE` (3), where every build succeeded: a failed build (1), a usage error (2)
and a cancel (130) say more and win.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .errors import EXIT_FAILED, EXIT_GATE, UsageError


def add_ci_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("for CI")
    g.add_argument("--junit", metavar="FILE", help="write a JUnit XML report: one test case per model")
    g.add_argument("--save-baseline", metavar="FILE", help="save each model's build time, peak memory and engine size")
    g.add_argument("--baseline", metavar="FILE",
                   help=f"compare with a saved baseline; a figure grown beyond its tolerance exits {EXIT_GATE}")
    g.add_argument("--tolerance", metavar="SPEC",
                   help="how much a figure may grow over the baseline: 10%% for all, or"
                        " time=50%%,peak=20%%,size=1%% (the defaults)")
    g.add_argument("--repro", type=int, metavar="N", default=0,
                   help="build each model N more times in separate processes and compare the engines' SHA-256")
    g.add_argument("--require-reproducible", action="store_true",
                   help=f"with --repro: engines that differ exit {EXIT_GATE}")


class CiRun:
    """The CI outputs of one `trt-tui build`, their options checked (`UsageError`, `OutputRefused`)."""

    def __init__(self, args, models: list[Path], outputs: list[Path]) -> None:
        from ..core.history.output_paths import check_report_file

        self.args = args
        if args.repro < 0 or args.repro == 1:
            raise UsageError(f"--repro {args.repro}: needs 2 builds or more to compare")
        if args.require_reproducible and not args.repro:
            raise UsageError("--require-reproducible needs --repro N")
        if args.repro and args.executor not in (None, "process"):
            raise UsageError(f"--repro builds each copy in a process of its own; --executor {args.executor} does not")
        if args.tolerance and not args.baseline:
            raise UsageError("--tolerance needs --baseline FILE")
        self.baseline = None
        self.tolerances: dict[str, float] = {}
        if args.baseline or args.save_baseline:  # the report modules load only for a run that asks for them
            from ..report.baseline import (
                BaselineError,
                baseline_written_by_us,
                load_baseline,
                parse_tolerances,
            )

            try:
                self.tolerances = parse_tolerances(args.tolerance)
                self.baseline = load_baseline(Path(args.baseline)) if args.baseline else None
            except BaselineError as exc:
                raise UsageError(str(exc)) from None
            check_report_file("--save-baseline", "a baseline", args.save_baseline, models, outputs, args.history,
                              args.force, baseline_written_by_us)
        if args.junit:
            from ..report.junit import junit_written_by_us

            check_report_file("--junit", "a JUnit report", args.junit, models, outputs, args.history, args.force,
                              junit_written_by_us)
        if args.junit and args.save_baseline and Path(args.junit).absolute() == Path(args.save_baseline).absolute():
            raise UsageError(f"--junit and --save-baseline name the same file {args.junit}")
        self.repro_dir: Path | None = None
        self.repro_jobs: dict[str, list[tuple[Path, int]]] = {}

    def submit_repro(self, scheduler, models: list[Path], options, say) -> None:
        """The repeated builds: forced (never skipped as up to date), each to a file of its own in a
        temporary directory, removed by `finish`."""
        if not self.args.repro:
            return
        import tempfile

        from ..core.build.driver import spec_for
        from ..report.repro import repro_outputs

        self.repro_dir = Path(tempfile.mkdtemp(prefix="trt-tui-repro-"))
        say(f"trt-tui: repro: building each model {self.args.repro} more times, each in a process of its own,"
            f" to {self.repro_dir}")
        for index, model in enumerate(models):
            directory = self.repro_dir / str(index)
            directory.mkdir()
            self.repro_jobs[str(model)] = [
                (output, scheduler.submit(spec_for(model, options, output=output, force=True, replace=True)).id)
                for output in repro_outputs(model, self.args.repro, directory)]

    def finish(self, renderer, builds, unreadable: dict[Path, str], seconds: float) -> int | None:
        """Write the reports and judge the gates from the builds' trackers; the exit code where a
        gate tripped or a report could not be written, else None."""
        from ..report.step_summary import VARIABLE

        args = self.args
        if not (self.repro_jobs or args.baseline or args.junit or args.save_baseline or os.environ.get(VARIABLE)):
            return None  # no CI output asked for: a plain build loads none of the report modules
        import shutil

        from ..core.files.printable import escaped
        from ..report.baseline import compare, save_baseline
        from ..report.junit import write_junit
        from ..report.repro import verdict
        from ..report.results import results_of
        from ..report.step_summary import append_step_summary

        results = results_of(builds, {str(m): e for m, e in unreadable.items()})
        code: int | None = None
        problems = []
        for model, copies in self.repro_jobs.items():
            judged = verdict(model, [(output, renderer.build(job)) for output, job in copies])
            renderer.message(escaped(f"trt-tui: repro: {judged.line()}"))
            if not judged.reproducible and args.require_reproducible:
                print(escaped(f"trt-tui: gate: {judged.line()}"), file=sys.stderr)  # where the gates' lines go
                code = EXIT_GATE
        if self.repro_dir is not None:
            shutil.rmtree(self.repro_dir, ignore_errors=True)
        if self.baseline is not None:
            for line in compare(self.baseline, results, self.tolerances):
                print(escaped(f"trt-tui: gate: {line}"), file=sys.stderr)
                code = EXIT_GATE
        for option, text, write in (("--junit", args.junit, lambda p: write_junit(p, results, seconds)),
                                    ("--save-baseline", args.save_baseline, lambda p: save_baseline(p, results))):
            if text:
                try:
                    write(Path(text))
                except OSError as exc:
                    problems.append(f"{option} {text}: cannot write it: {exc.strerror or exc}")
        for problem in problems:
            print(escaped(f"trt-tui: {problem}"), file=sys.stderr)
        if (warning := append_step_summary(results, seconds)) is not None:  # the builds' outcome stands
            print(escaped(f"trt-tui: warning: {warning}"), file=sys.stderr)
        return EXIT_FAILED if problems and code is None else code
