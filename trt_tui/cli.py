"""`trt-tui` command line: the app by default, `build`, `samples`, `watch` and `history` for scripts.

Every user error ends in one line on stderr naming the file and the reason, and an exit code:
0 everything built, 1 a model failed to parse or build, 2 usage or unreadable input, 130 cancelled.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

from . import __version__
from .cli_basics import (
    EXIT_CANCELLED,
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    HandledSignals,
    UsageError,
    parse_size,
)
from .cli_bundle import bundle_options, cmd_bundle
from .cli_help_format import HelpFormatter
from .cli_memory import add_memory_option, memory_limit, spare_size
from .core.backend import CHOICES, BackendError, find_backend, has_timing_cache, load_backend
from .core.build import BuildOptions, BuildSpec, default_output
from .core.discover import find_models
from .core.events import State
from .core.executors import DEFAULT_CANCEL_GRACE
from .core.output_paths import OutputRefused, check_engines, check_trace, program_files
from .core.printable import escaped


def int_in(low: int, high: int | None = None):
    """An argparse type: a whole number in [low, high], the range named in the error."""
    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low or (high is not None and value > high):
            allowed = f"{low} to {high}" if high is not None else f"at least {low}"
            raise argparse.ArgumentTypeError(f"must be {allowed}, not {value}")
        return value
    return convert


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds, zero or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, not {text}")
    return value


# -- option parsing ----------------------------------------------------------------------------


class Parser(argparse.ArgumentParser):
    """argparse's errors as one line (its usage block buries the one line that says what is wrong)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        from .cli_suggest import explain_unrecognized

        self.exit(EXIT_USAGE, f"{self.prog}: error: {explain_unrecognized(message, self)} (see {self.prog} -h)\n")

MAX_DIMENSION = (1 << 31) - 1  # TensorRT's dimensions are 32-bit signed integers


def parse_shape_list(option: str, text: str) -> dict[str, tuple[int, ...]]:
    """trtexec's form: `input:1x3x224x224,mask:1x128`."""
    shapes = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, dims = item.rpartition(":")
        if not sep or not name:
            raise UsageError(f"{option}: {item!r} should look like NAME:1x3x224x224")
        try:
            shape = tuple(int(d) for d in dims.lower().split("x"))
        except ValueError:
            raise UsageError(f"{option}: {item!r} has a dimension that is not a whole number") from None
        if any(d < 1 for d in shape):
            raise UsageError(f"{option}: {item!r}: every dimension must be at least 1")
        if any(d > MAX_DIMENSION for d in shape):
            raise UsageError(f"{option}: {item!r}: a dimension must be at most {MAX_DIMENSION}")
        name = name.strip()
        if name in shapes:
            raise UsageError(f"{option}: input {name!r} is given twice")
        shapes[name] = shape
    if not shapes:
        raise UsageError(f"{option}: no shapes given")
    return shapes


def shapes_from_args(args) -> dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
    trio = (args.min_shapes, args.opt_shapes, args.max_shapes)
    if args.shapes and any(trio):
        raise UsageError("--shapes sets min, opt and max at once: do not combine it with --min/--opt/--max-shapes")
    if args.shapes:
        fixed = parse_shape_list("--shapes", args.shapes)
        return {name: (s, s, s) for name, s in fixed.items()}
    if not any(trio):
        return {}
    if not all(trio):
        raise UsageError("--min-shapes, --opt-shapes and --max-shapes go together: give all three")
    lo, opt, hi = (parse_shape_list(o, t) for o, t in zip(("--min-shapes", "--opt-shapes", "--max-shapes"), trio))
    if not (lo.keys() == opt.keys() == hi.keys()):
        raise UsageError("--min-shapes, --opt-shapes and --max-shapes must name the same inputs")
    result = {}
    for name in lo:
        if not (len(lo[name]) == len(opt[name]) == len(hi[name])):
            raise UsageError(f"input {name!r}: min, opt and max shapes have different numbers of dimensions")
        if not all(a <= b <= c for a, b, c in zip(lo[name], opt[name], hi[name])):
            raise UsageError(f"input {name!r}: shapes must satisfy min <= opt <= max in every dimension")
        result[name] = (lo[name], opt[name], hi[name])
    return result


def options_from_args(args) -> BuildOptions:
    """The build options, checked before any build starts. TensorRT itself is imported here only
    for --compute-capability (the targets' names are the installed version's): the builds import
    it in their own processes, and this process's import (~0.1 s of CPU) would compete with them."""
    try:
        backend_name = find_backend(args.backend)
    except BackendError as exc:
        raise UsageError(str(exc)) from None
    ccs = tuple(c for value in args.compute_capability or () for c in value.split(",") if c.strip())
    if ccs:
        check_compute_capabilities(args.backend, ccs)
    if args.timing_cache is not None and not has_timing_cache(backend_name):
        raise UsageError("--timing-cache needs full TensorRT: TensorRT-RTX does not use timing caches")
    return BuildOptions(
        backend=args.backend,
        workspace=parse_size(args.workspace) if args.workspace else None,
        opt_level=args.opt_level,
        shapes=shapes_from_args(args),
        compute_capabilities=ccs,
        timing_cache=Path(args.timing_cache) if args.timing_cache else None,
        verbose=args.verbose,
    )


def check_compute_capabilities(choice: str, ccs: tuple[str, ...]) -> None:
    try:
        backend = load_backend(choice)
    except BackendError as exc:
        raise UsageError(str(exc)) from None
    if not backend.has_compute_capabilities:
        raise UsageError(f"--compute-capability needs TensorRT-RTX; the {backend.name} backend builds for this GPU")
    for cc in ccs:
        try:
            backend.compute_capability(cc)
        except BackendError as exc:
            raise UsageError(f"--compute-capability: {exc}") from None


def add_build_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("build options (as trtexec names them)")
    g.add_argument("--backend", choices=CHOICES, default="auto", help="auto prefers full TensorRT when importable")
    g.add_argument("--workspace", metavar="SIZE", help="workspace memory pool limit, e.g. 4G or 1024M")
    g.add_argument("--opt-level", type=int_in(0, 5), metavar="0-5", help="builder optimization level")
    g.add_argument("--shapes", metavar="SPEC", help="fixed shapes for dynamic inputs: input:1x3x224x224,...")
    g.add_argument("--min-shapes", metavar="SPEC", help="optimization profile minimum shapes")
    g.add_argument("--opt-shapes", metavar="SPEC", help="optimization profile optimal shapes")
    g.add_argument("--max-shapes", metavar="SPEC", help="optimization profile maximum shapes")
    g.add_argument("--compute-capability", action="append", metavar="CC",
                   help="TensorRT-RTX target(s), e.g. 8.9 or 8.6,12.0 (repeatable)")
    g.add_argument("--timing-cache", metavar="FILE", help="timing cache file (full TensorRT only)")
    g.add_argument("--verbose", action="store_true", help="record and print TensorRT's verbose log")
    p.add_argument("-j", "--jobs", type=int_in(1, 256), default=2, help="builds at once (default 2)")
    p.add_argument("--executor", choices=("thread", "process", "ray"), default=None,
                   help="run each build on a thread, in a child process (hard cancel, crash isolation) or as"
                        " a Ray task (pip install 'trt-tui[ray]')")
    r = p.add_argument_group("Ray (with --executor ray)")
    r.add_argument("--ray-address", metavar="ADDR",
                   help="Ray cluster to build on (default: $RAY_ADDRESS, else a local Ray for this run)")
    r.add_argument("--ray-gpu", metavar="TYPE", help="each build asks for one GPU of this Ray accelerator type")
    r.add_argument("--ray-resource", action="append", metavar="NAME[=N]",
                   help="each build asks for this custom Ray resource, e.g. sm_89 (repeatable)")
    p.add_argument("--cancel-grace", type=seconds, default=DEFAULT_CANCEL_GRACE, metavar="SECONDS",
                   help="with --executor process or ray: force a cancel that TensorRT has not honoured by then")
    p.add_argument("--spare-memory", type=spare_size, default=None, metavar="SIZE",
                   help="with the process executor: the most heap the waiting build process faults in ahead"
                        " of a build, as much as recent builds needed (default 2G; 0: none)")
    p.add_argument("--force", action="store_true", help="build even when the engine is up to date")
    p.add_argument("--history", metavar="PATH", help="build history database (default: user data directory)")
    p.add_argument("--trace", metavar="FILE", help="write the builds' phases as Chrome trace-event JSON")
    add_vitals_options(p)
    add_memory_option(p)


def add_vitals_options(p: argparse.ArgumentParser) -> None:
    from .core.vitals import DEFAULT_INTERVAL, DEFAULT_STALL_AFTER

    g = p.add_argument_group("vitals (the build's process, read from outside it)")
    g.add_argument("--vitals-interval", type=float, default=DEFAULT_INTERVAL, metavar="SECONDS",
                   help=f"sample each build's CPU and memory this often (default {DEFAULT_INTERVAL:g}; 0: off)")
    g.add_argument("--stall-after", type=float, default=DEFAULT_STALL_AFTER, metavar="SECONDS",
                   help="call a build stalled after this long with no callback and an idle CPU"
                        f" (default {DEFAULT_STALL_AFTER:g})")
    g.add_argument("--stack-after", type=float, default=None, metavar="SECONDS",
                   help="dump the build's native and Python stacks (py-spy) after this long with no"
                        " callback (default: when it is stalled)")


def vitals_from_args(args):
    from .core.vitals import VitalsConfig

    for option, value in (("--vitals-interval", args.vitals_interval), ("--stall-after", args.stall_after),
                          ("--stack-after", args.stack_after)):
        if value is not None and (value != value or value < 0 or value == float("inf")):
            raise UsageError(f"{option} must be a number of seconds, at least 0, not {value:g}")
    return VitalsConfig(args.vitals_interval, args.stall_after, args.stack_after)


# -- inputs and outputs --------------------------------------------------------------------------


def check_model_readable(path: Path) -> str | None:
    if not path.exists():
        return f"{path}: no such file"
    if path.is_dir():
        return f"{path}: is a directory, not an ONNX file"
    if not os.access(path, os.R_OK):
        return f"{path}: not readable (permission denied)"
    if path.stat().st_size == 0:
        return f"{path}: empty file, not an ONNX model"
    return None


def outputs_for(models: list[Path], output: str | None) -> list[Path]:
    if output is None:
        return [default_output(m) for m in models]
    out = Path(output)
    as_dir = out.is_dir() or output.endswith(os.sep)
    if len(models) > 1 and not as_dir:
        raise UsageError(f"-o {output}: with several models -o must be an existing directory or end with '/'")
    if not as_dir:
        if out.parent != Path("") and not out.parent.is_dir():
            problem = "is not a directory" if out.parent.exists() else "does not exist"
            raise UsageError(f"{out}: output directory {out.parent} {problem}")
        return [out]
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{out}: cannot create output directory: {exc.strerror}") from None
    engines = [out / (m.stem + ".engine") for m in models]
    clashes = {e for e in engines if engines.count(e) > 1}
    if clashes:
        raise UsageError(f"{sorted(clashes)[0]}: two models would write the same engine; build them separately")
    return engines


# -- subcommands -------------------------------------------------------------------------------


# How often `trt-tui build` and `watch` hand the builds' events to their renderer: what a terminal shows
# at most (`headless.TtyRenderer` draws 10 times a second). The app's 25 ms is for its latency; here each
# wake-up only costs the GIL that a build on a thread (`--executor thread`) shares: ~15 ms of a 2.5 s build.
HEADLESS_PUMP = 0.1


def session_from_args(args, executor=None, pump_interval: float | None = None):
    from .core.session import make_session

    return make_session(args.jobs, args.executor, args.cancel_grace, history=args.history, trace=args.trace,
                        executor_obj=executor, ray=ray_options(args), vitals=vitals_from_args(args),
                        spare_memory=args.spare_memory, pump_interval=pump_interval,
                        memory_limit=memory_limit(args))


class Stopper(HandledSignals):
    """SIGINT, SIGTERM and SIGHUP for the headless commands: the first cancels every build (they end
    CANCELLED, their temporaries removed, their final events delivered); a second exits at once,
    still removing this process's temporaries. Exit code 128 + the signal's number."""


    def __init__(self, on_first, on_exit_now=None) -> None:
        self.on_first = on_first
        self.on_exit_now = on_exit_now  # before exiting at once (a local Ray's processes are stopped)
        super().__init__()

    def _handle(self, signum, frame) -> None:
        if self.signal is not None:
            from .core.atomic import remove_own_temps

            remove_own_temps()
            if self.on_exit_now is not None:
                self.on_exit_now()
            os._exit(128 + signum)
        self.signal = signum
        self.on_first(signal.Signals(signum).name)

    @property
    def name(self) -> str:
        return signal.Signals(self.signal).name if self.signal else ""

    @property
    def exit_code(self) -> int:
        return 128 + self.signal if self.signal else EXIT_OK


def check_outputs(models: list[Path], outputs: list[Path], force: bool) -> None:
    """Before any build starts: no engine on its own model or on another model, none on a file trt-tui
    did not write (unless --force), no two builds onto one engine."""
    from .core.build import BuildError, BuildSpec, check_output_replaceable, is_same_file

    seen: list[Path] = []
    for model, output in zip(models, outputs):
        if any(is_same_file(output, other) for other in seen):
            raise UsageError(f"{output}: two models would write the same engine; build them separately")
        seen.append(output)
        clash = next((m for m in models if is_same_file(output, m)), None)
        if clash is not None:
            raise UsageError(f"{output}: the engine of {model} would overwrite the model {clash}; choose another -o")
        try:
            check_output_replaceable(BuildSpec(model, output, force=force, replace=force))
        except BuildError as exc:
            raise UsageError(str(exc)) from None


def unique_models(paths: list[str]) -> list[Path]:
    """The models as given, a model named twice (by any path to the same file) built once."""
    from .core.build import is_same_file

    models: list[Path] = []
    for text in paths:
        path = Path(text)
        if not any(is_same_file(path, known) for known in models):
            models.append(path)
    return models


def prewarmed_executor(args, builds: int | None = None):
    """The executor, its spare build process started now: the child's imports (TensorRT's ~0.3 s)
    then overlap this process's own checks of the options and the models instead of following.
    `builds`, if known, is how many builds will come (no spare is started after the last)."""
    from .core.executors import make_executor, prewarmed

    if args.executor == "ray":  # no spare to start: the session makes the Ray executor itself
        return None
    executor = make_executor(args.executor, cancel_grace=args.cancel_grace, vitals=vitals_from_args(args),
                             spare_memory=args.spare_memory, jobs=args.jobs, memory_limit=memory_limit(args))
    prewarmed(executor, builds)
    executor.release_on_close = False  # this process exits once the builds are done
    return executor


def abandon(scheduler) -> None:
    """Before exiting at once: an executor that keeps processes outside ours (a local Ray) stops them."""
    scheduler.abandon()


def ray_options(args) -> dict | None:
    """The Ray executor's options from --ray-*; one clear line when Ray is missing or one is wrong."""
    given = [f"--{n}" for n in ("ray-address", "ray-gpu", "ray-resource") if getattr(args, n.replace("-", "_"), None)]
    if args.executor != "ray":
        if given:
            raise UsageError(f"{given[0]} needs --executor ray")
        return None
    from .core.ray_executor import RAY_MISSING, RayResources, parse_resource, ray_available

    if not ray_available():
        raise UsageError(RAY_MISSING)
    try:
        resources = dict(parse_resource(text) for text in args.ray_resource or [])
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return {"address": args.ray_address, "resources": RayResources(gpu_type=args.ray_gpu, resources=resources)}


def cmd_build(args) -> int:
    executor = prewarmed_executor(args, len(args.models))
    if args.executor != "thread" or (args.jobs > 1 and len(args.models) > 1):
        return _build_models(args, executor)
    from .core import native_log

    # The builds run in this process, one at a time, and nothing else writes to its stdout once the
    # renderer writes to a copy of it: TensorRT's own logger may use it, filtering lines in C++.
    with native_log.dedicated_stdout():
        return _build_models(args, executor)


def _build_models(args, executor) -> int:
    from .headless import make_renderer, totals_line

    started = time.monotonic()
    try:
        options = options_from_args(args)
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
        session = session_from_args(args, executor, HEADLESS_PUMP)
    except BaseException:
        if executor is not None:
            executor.close()
        raise
    scheduler = session.scheduler
    scheduler.subscribe(renderer.handle)
    jobs = []

    def cancel_everything(name: str) -> None:
        again = "Ctrl-C" if name == "SIGINT" else name
        renderer.message(f"trt-tui: {name}: cancelling every build ({again} again to exit at once)")
        scheduler.cancel_all()

    with Stopper(cancel_everything, lambda: abandon(scheduler)) as stopper:
        try:
            for model, output in zip(models, outputs):
                if model in buildable and stopper.signal is None:
                    jobs.append(scheduler.submit(BuildSpec(model, output, options, force=args.force, replace=args.force)))
            while not scheduler.wait(timeout=0.2):
                pass
        finally:
            session.close()
            renderer.close()
    states = [job.state for job in jobs]
    for job in jobs:
        if job.state is State.FAILED and not args.json:
            print(f"trt-tui: {escaped(job.outcome.error)}", file=sys.stderr)
    cancelled = [str(job.spec.model) for job in jobs if job.state is State.CANCELLED]
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


def cmd_samples(args) -> int:
    from .core.samples import SAMPLES, write_samples

    names = args.names or list(SAMPLES)
    unknown = [n for n in names if n not in SAMPLES]
    if unknown:
        raise UsageError(f"unknown sample {unknown[0]!r}: choose from {', '.join(SAMPLES)}")
    try:
        paths = write_samples(Path(args.directory), names, overwrite=args.force)
    except OSError as exc:
        raise UsageError(f"{args.directory}: cannot write samples: {exc.strerror or exc}") from None
    for path in paths:
        print(path)
    return EXIT_OK


def cmd_watch(args) -> int:
    """Build every model now (current engines are skipped), then rebuild each one as it changes.
    A file that is not a model (empty, cut short, garbage) is reported as a failed build of that
    file, and watching goes on."""
    from .core.watch import ModelChange, ModelWatcher, RebuildController
    from .headless import make_renderer

    options = options_from_args(args)
    models, errors = find_models(args.paths)
    check_trace(args.trace, models, [default_output(m) for m in models], args.history, args.force)
    for err in errors:
        print(f"trt-tui: {err}", file=sys.stderr)
    if errors and not models and not any(Path(p).is_dir() for p in args.paths):
        return EXIT_USAGE
    renderer = make_renderer("json" if args.json else "auto", sys.stdout, args.verbose)
    session = session_from_args(args, pump_interval=HEADLESS_PUMP)
    scheduler = session.scheduler
    scheduler.subscribe(renderer.handle)
    controller = RebuildController(scheduler, lambda m: BuildSpec(m, default_output(m), options, force=args.force,
                                                                   replace=args.force),
                                   on_refused=lambda model, why: watcher.errors.append(f"not rebuilt: {why}"))
    watcher = ModelWatcher([Path(p) for p in args.paths if Path(p).exists()], controller.handle)
    active_at_signal: list[str] = []

    def stop(name: str) -> None:
        active_at_signal.extend(str(job.spec.model) for job in scheduler.active())

    with Stopper(stop, lambda: abandon(scheduler)) as stopper:
        try:
            controller.handle([ModelChange("added", m.resolve(), 0.0) for m in models])
            watcher.start()
            renderer.message(f"trt-tui: watching {', '.join(str(d) for d in watcher.dirs)} (Ctrl-C to stop)")
            while stopper.signal is None:
                time.sleep(0.1)
                for err in watcher.errors:
                    renderer.message(f"trt-tui: {err}")
                watcher.errors.clear()
        finally:
            watcher.stop()
            session.close()
            renderer.close()
    if active_at_signal:
        print(f"trt-tui: stopped by {stopper.name}: cancelled {', '.join(active_at_signal)}", file=sys.stderr)
    if stopper.signal is not None and stopper.signal != signal.SIGINT:
        return stopper.exit_code
    return EXIT_CANCELLED if active_at_signal else EXIT_OK


def cmd_history(args) -> int:
    from .cli_history import history_command

    return history_command(args)


def cmd_serve(args) -> int:
    """The app for web browsers; the builds belong to this process (see serve/)."""
    from . import serve
    from .app_checks import theme_problem

    if problem := theme_problem(args.theme):  # found now, not by each browser session's app
        raise UsageError(problem)

    try:
        token = serve.check(args.host, args.port, args.token, args.token_file, args.no_token)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    options = options_from_args(args)
    models, errors = find_models(args.paths)
    check_trace(args.trace, models, [default_output(m) for m in models], args.history, args.force)
    for err in errors:
        print(f"trt-tui: {err}", file=sys.stderr)
    if errors and not models and not any(Path(p).is_dir() for p in args.paths):
        return EXIT_USAGE
    paths = [str(Path(p).resolve()) for p in args.paths if Path(p).exists()]
    try:
        return serve.serve(session_from_args(args), options, paths, args.host, args.port, token, args)
    except OSError as exc:
        raise UsageError(f"{args.host}:{args.port}: cannot listen: {exc.strerror or exc}") from None


def app_config(args):
    """The app's configuration from the command line (the app itself never reads argv)."""
    from .ui.app import AppConfig

    paths = list(args.paths)
    if args.demo:
        from .core.demo_dir import make_demo_dir
        from .core.samples import write_samples

        directory = make_demo_dir()
        print(f"trt-tui: writing sample models to {directory}")
        write_samples(directory)
        paths = [str(directory)]
    models = find_models(paths)[0] if args.trace else []
    check_trace(args.trace, models, [default_output(m) for m in models], args.history, args.force)
    return AppConfig(
        paths=paths,
        jobs=args.jobs,
        options=options_from_args(args),
        executor=args.executor,
        cancel_grace=args.cancel_grace,
        theme=args.theme,
        log_level=args.log_level,
        watch=args.watch,
        history=args.history,
        trace=args.trace,
        attach=getattr(args, "attach", None),
        ray=ray_options(args),
        vitals=vitals_from_args(args),
        spare_memory=args.spare_memory, notify_after=args.notify_after, memory_limit=memory_limit(args),
        keys=args.keys,
    )


def cmd_run(args) -> int:
    """Run a program and show its TensorRT builds: the app on a terminal, else (or with --json or
    --headless) the headless renderers, the program's output passed through (`run_command`)."""
    from .run_command import run_program

    argv = list(args.cmd)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise UsageError("run: give the program after --, e.g. trt-tui run -- python build.py")
    if args.grace <= 0:
        raise UsageError(f"--grace must be more than 0 seconds, not {args.grace}")
    args.vitals = vitals_from_args(args)
    check_trace(args.trace, program_files(argv), (), args.history, args.force)
    if not (args.json or args.headless) and sys.stdout.isatty() and sys.stdin.isatty():
        from .app_checks import theme_problem  # the app would open: its theme is checked first

        if problem := theme_problem(args.theme):
            raise UsageError(problem)
    return run_program(argv, args)


def cmd_app(args) -> int:
    from .app_checks import path_problem, terminal_problem, theme_problem
    from .ui.app import make_app
    from .ui.notifier import run_app

    local = not args.attach  # an attached app is `serve`'s, drawn in a browser through pipes
    problem = ((local and not args.demo and path_problem(args.paths, args.watch)) or theme_problem(args.theme)
               or (local and terminal_problem()))
    if problem:
        raise UsageError(problem)
    return run_app(make_app(app_config(args))).return_code or 0  # then a line of what it built


# -- entry point ---------------------------------------------------------------------------------


def app_parser() -> argparse.ArgumentParser:
    """`trt-tui [PATHS]`: the app."""
    from .config_file import add_config_options

    app = Parser(
        prog="trt-tui",
        description="Watch TensorRT engine builds live and cancel them. Subcommands: "
        + ", ".join(SUBCOMMANDS) + " (trt-tui SUBCOMMAND -h).",
    )
    app.add_argument("paths", nargs="*", default=["."], help="ONNX files or directories (default: .)")
    app.add_argument("--demo", action="store_true", help="write the sample models to a temporary directory and open them")
    app.add_argument("--theme", help="theme name (--list-themes prints them)")
    app.add_argument("--watch", action="store_true", help="rebuild models when their ONNX files change")
    app.add_argument("--notify-after", type=seconds, default=10.0, metavar="SECONDS", help="a build that ends after longer than this rings and notifies (default 10; 0: never)")
    app.add_argument("--log-level", choices=("warning", "info", "verbose", "error"), default="info",
                     help="the log pane's level at start (l cycles it; default info)")
    app.add_argument("--version", action="version", version=f"trt-tui {__version__}")
    app.add_argument("--attach", metavar="SOCKET", help=argparse.SUPPRESS)  # a `serve` browser session
    add_build_options(app)
    add_config_options(app)
    return app


def _build_command(b: argparse.ArgumentParser) -> None:
    b.add_argument("models", nargs="+", help="ONNX files")
    b.add_argument("-o", "--output", help="engine file (one model) or directory (several)")
    b.add_argument("--json", action="store_true", help="one JSON object per event per line")
    add_build_options(b)


def _watch_command(w: argparse.ArgumentParser) -> None:
    w.add_argument("paths", nargs="*", default=["."], help="ONNX files or directories (default: .)")
    w.add_argument("--json", action="store_true", help="one JSON object per event per line")
    add_build_options(w)


def _history_command(h: argparse.ArgumentParser) -> None:
    h.add_argument("model", nargs="?", help="only this model (path or file name); `history diff A B` compares "
                   "builds A and B (ids), `history diff MODEL` the model's last two builds")
    h.add_argument("targets", nargs="*", help=argparse.SUPPRESS)
    h.add_argument("--json", action="store_true", help="one JSON object per build (per diff with `diff`)")
    h.add_argument("-n", "--limit", type=int_in(1, 2**63 - 1), default=50, help="at most this many (default 50)")
    h.add_argument("--history", metavar="PATH", help="history database (default: user data directory)")


def _run_command(r: argparse.ArgumentParser) -> None:
    r.add_argument("cmd", nargs=argparse.REMAINDER, help="-- PROGRAM [ARGS...]")
    r.add_argument("--json", action="store_true", help="headless: one JSON object per event per line")
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


def _samples_command(s: argparse.ArgumentParser) -> None:
    s.add_argument("directory")
    s.add_argument("names", nargs="*", help="which samples (default: all)")
    s.add_argument("--force", action="store_true", help="overwrite existing files")


def _serve_command(v: argparse.ArgumentParser) -> None:
    v.add_argument("paths", nargs="*", default=["."], help="ONNX files or directories (default: .)")
    v.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    v.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    v.add_argument("--token-file", metavar="FILE", help="the token to require (default: $TRT_TUI_TOKEN, else random)")
    v.add_argument("--no-token", action="store_true", help="require no token (loopback addresses only)")
    v.add_argument("--token", nargs="?", const="", help=argparse.SUPPRESS)  # refused with a value: ps shows it
    v.add_argument("--theme", help="theme name (see themes/)")
    add_build_options(v)


# name -> (help, what adds its options); in the order `trt-tui -h` names them
COMMANDS = {
    "build": ("build engines headless", _build_command),
    "watch": ("build models, then rebuild each when its ONNX file changes", _watch_command),
    "history": ("list past builds", _history_command),
    "bundle": ("write one .tar.gz of a past build for a bug report", bundle_options),
    "run": ("run a program and observe (and cancel) the TensorRT builds it makes", _run_command),
    "samples": ("write sample ONNX models (random weights, generated locally)", _samples_command),
    "serve": ("serve the app to web browsers; the builds belong to this process", _serve_command),
}
SUBCOMMANDS = tuple(COMMANDS)


def command_parser(only: str | None = None) -> argparse.ArgumentParser:
    """`trt-tui SUBCOMMAND ...`; with `only`, that subcommand's parser alone: what `main` builds, since
    the other five (four of them with every build option) took ~3-8 ms of every start."""
    sub = Parser(prog="trt-tui")
    cmds = sub.add_subparsers(dest="command", required=True, parser_class=Parser)
    for name, (summary, add_options) in COMMANDS.items():
        if only is None or name == only:
            add_options(cmds.add_parser(name, help=summary))
    return sub


def build_parser() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """Both parsers, every subcommand in the second."""
    return app_parser(), command_parser()


# Set by `main` once a `trt-tui build` with a local executor is over and everything it wrote is closed
# (engines, history, trace; its build processes reaped, its spares stopped): `entry` may then end the
# process at once.
_done_with_everything = False


def entry() -> None:
    """The `trt-tui` command (and `python -m trt_tui`): `main`, then exit with its code.

    After `trt-tui build` that exit skips the interpreter's teardown (`os._exit`, once stdout and
    stderr are flushed): freeing every module and object, the atexit handlers of libraries that have
    nothing left to do, and, with the thread executor, TensorRT's own destructors took 15-40 ms of
    every build's wall time (MNIST, 25 rounds: thread 234 -> 219 ms, process 233 -> 201 ms), where the
    operating system frees the same memory at once. Nothing is left to write by then: `main` returned
    only after the session closed. Other commands, and `main` called from Python, exit as usual."""
    code = main()
    if _done_with_everything:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (AttributeError, OSError, ValueError):
                pass
        os._exit(code)
    sys.exit(code)


def every_parser() -> list[argparse.ArgumentParser]:
    """The app's parser and each command's: which options a config file may give any of them."""
    from .config_file import parsers_in

    return [app_parser(), *parsers_in(command_parser())]


def main(argv: list[str] | None = None) -> int:
    global _done_with_everything
    from .config_file import apply_config_file, print_config

    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] not in SUBCOMMANDS and not os.path.exists(argv[0]):
        from .cli_suggest import unknown_command

        if typo := unknown_command(argv[0], SUBCOMMANDS):
            print(f"trt-tui: {typo}", file=sys.stderr)
            return EXIT_USAGE
    parser = command_parser(argv[0]) if argv and argv[0] in SUBCOMMANDS else app_parser()
    try:
        config = apply_config_file(parser, every_parser)  # the file's values are the parser's defaults
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed its one-line usage error
        return EXIT_USAGE if exc.code else EXIT_OK
    except UsageError as exc:
        print(f"trt-tui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if getattr(args, "print_config", False):
        return print_config(config, parser, argv, args, app_parser)
    handler = {"build": cmd_build, "samples": cmd_samples, "watch": cmd_watch, "history": cmd_history,
               "serve": cmd_serve, "run": cmd_run, "bundle": cmd_bundle}.get(getattr(args, "command", None), cmd_app)
    try:
        code = handler(args)
        _done_with_everything = handler is cmd_build and args.executor != "ray"
        return code
    except (UsageError, OutputRefused) as exc:  # one line, whatever the file names in it hold
        print(f"trt-tui: {escaped(config.blame(str(exc), args))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_CANCELLED


if __name__ == "__main__":
    entry()
