"""`trt-tui` command line: the app by default, `build`, `samples`, `watch` and `history` for scripts.

Every user error ends in one line on stderr naming the file and the reason, and an exit code:
0 everything built, 1 a model failed to parse or build, 2 usage or unreadable input, 130 cancelled.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import time
from pathlib import Path

from . import __version__
from .core.backend import CHOICES, BackendError, load_backend
from .core.build import BuildOptions, BuildSpec, default_output
from .core.events import State
from .core.executors import DEFAULT_CANCEL_GRACE

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_CANCELLED = 0, 1, 2, 130
SUBCOMMANDS = ("build", "samples", "watch", "history")



class UsageError(Exception):
    """Bad options or unreadable input: exit 2 with the message."""


# -- option parsing ----------------------------------------------------------------------------

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(i?B)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """'4G', '512M', '1.5GiB', or a plain number of MiB (as trtexec's --memPoolSize takes)."""
    match = _SIZE.match(text)
    if not match:
        raise UsageError(f"--workspace: {text!r} is not a size (try 1024M or 4G)")
    number, unit = float(match.group(1)), match.group(2).upper() or "M"
    return int(number * 1024 ** " KMGT".index(unit))


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
        if any(d > 1 << 31 for d in shape):
            raise UsageError(f"{option}: {item!r}: a dimension is absurdly large")
        shapes[name.strip()] = shape
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
    if args.opt_level is not None and not 0 <= args.opt_level <= 5:
        raise UsageError(f"--opt-level must be 0 to 5, not {args.opt_level}")
    try:
        backend = load_backend(args.backend)
    except BackendError as exc:
        raise UsageError(str(exc)) from None
    ccs = tuple(c for value in args.compute_capability or () for c in value.split(",") if c.strip())
    if ccs:
        if not backend.has_compute_capabilities:
            raise UsageError(f"--compute-capability needs TensorRT-RTX; the {backend.name} backend builds for this GPU")
        for cc in ccs:
            try:
                backend.compute_capability(cc)
            except BackendError as exc:
                raise UsageError(f"--compute-capability: {exc}") from None
    if args.timing_cache is not None and not backend.has_timing_cache:
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


def add_build_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("build options (as trtexec names them)")
    g.add_argument("--backend", choices=CHOICES, default="auto", help="auto prefers full TensorRT when importable")
    g.add_argument("--workspace", metavar="SIZE", help="workspace memory pool limit, e.g. 4G or 1024M")
    g.add_argument("--opt-level", type=int, metavar="0-5", help="builder optimization level")
    g.add_argument("--shapes", metavar="SPEC", help="fixed shapes for dynamic inputs: input:1x3x224x224,...")
    g.add_argument("--min-shapes", metavar="SPEC", help="optimization profile minimum shapes")
    g.add_argument("--opt-shapes", metavar="SPEC", help="optimization profile optimal shapes")
    g.add_argument("--max-shapes", metavar="SPEC", help="optimization profile maximum shapes")
    g.add_argument("--compute-capability", action="append", metavar="CC",
                   help="TensorRT-RTX target(s), e.g. 8.9 or 8.6,12.0 (repeatable)")
    g.add_argument("--timing-cache", metavar="FILE", help="timing cache file (full TensorRT only)")
    g.add_argument("--verbose", action="store_true", help="record and print TensorRT's verbose log")
    p.add_argument("-j", "--jobs", type=int, default=2, help="builds at once (default 2)")
    p.add_argument("--executor", choices=("thread", "process"), default=None,
                   help="run each build on a thread or in a child process (hard cancel, crash isolation)")
    p.add_argument("--cancel-grace", type=float, default=DEFAULT_CANCEL_GRACE, metavar="SECONDS",
                   help="with --executor process: force a cancel that TensorRT has not honoured by then")
    p.add_argument("--force", action="store_true", help="build even when the engine is up to date")
    p.add_argument("--history", metavar="PATH", help="build history database (default: user data directory)")
    p.add_argument("--trace", metavar="FILE", help="write the builds' phases as Chrome trace-event JSON")
    add_vitals_options(p)


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


def find_models(paths: list[str]) -> tuple[list[Path], list[str]]:
    """ONNX files named or under the directories named; the second list holds one-line errors."""
    found, errors = [], []
    for text in paths:
        path = Path(text)
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*.onnx") if p.is_file()))
        elif path.is_file():
            found.append(path)
        elif path.exists():
            errors.append(f"{path}: not a regular file")
        else:
            errors.append(f"{path}: no such file or directory")
    return list(dict.fromkeys(found)), errors


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
    as_dir = out.is_dir() or output.endswith(os.sep) or len(models) > 1
    if not as_dir:
        if out.parent != Path("") and not out.parent.is_dir():
            problem = "is not a directory" if out.parent.exists() else "does not exist"
            raise UsageError(f"{out}: output directory {out.parent} {problem}")
        return [out]
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: -o names a file, but several models need a directory")
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


def make_executor(args):
    from .core.executors import make_executor as make

    return make(args.executor, cancel_grace=args.cancel_grace)


def make_session(args):
    from .core.session import make_session as make

    if args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, not {args.jobs}")
    return make(args.jobs, args.executor, args.cancel_grace, history=args.history, trace=args.trace,
                vitals=vitals_from_args(args))


def cmd_build(args) -> int:
    from .headless import make_renderer

    options = options_from_args(args)
    models = [Path(m) for m in args.models]
    unreadable = {m: err for m in models if (err := check_model_readable(m))}
    buildable = [m for m in models if m not in unreadable]
    outputs = outputs_for(models, args.output)
    renderer = make_renderer("json" if args.json else "auto", sys.stdout, args.verbose)
    for err in unreadable.values():
        print(f"trt-tui: {err}", file=sys.stderr)
    session = make_session(args)
    scheduler = session.scheduler
    scheduler.subscribe(renderer.handle)
    interrupts = 0
    jobs = []

    def on_sigint(signum, frame):
        nonlocal interrupts
        interrupts += 1
        if interrupts == 1:
            renderer.message("trt-tui: cancelling (Ctrl-C again to exit at once)")
            scheduler.cancel_all()
            return
        for job in jobs:  # exiting at once: still leave no temporary engine behind
            job.spec.temp_path(job.id).unlink(missing_ok=True)
        os._exit(EXIT_CANCELLED)

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        for model, output in zip(models, outputs):
            if model in buildable:
                jobs.append(scheduler.submit(BuildSpec(model, output, options, force=args.force)))
        while not scheduler.wait(timeout=0.2):
            pass
    finally:
        session.close()
        renderer.close()
        signal.signal(signal.SIGINT, previous)
    states = [job.state for job in jobs]
    for job in jobs:
        if job.state is State.FAILED and not args.json:
            print(f"trt-tui: {job.outcome.error}", file=sys.stderr)
    if interrupts or State.CANCELLED in states:
        return EXIT_CANCELLED
    if unreadable:
        return EXIT_USAGE
    if State.FAILED in states:
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
    """Build every model now (current engines are skipped), then rebuild each one as it changes."""
    from .core.watch import ModelWatcher, RebuildController
    from .headless import make_renderer

    options = options_from_args(args)
    models, errors = find_models(args.paths)
    for err in errors:
        print(f"trt-tui: {err}", file=sys.stderr)
    if errors and not models and not any(Path(p).is_dir() for p in args.paths):
        return EXIT_USAGE
    renderer = make_renderer("json" if args.json else "auto", sys.stdout, args.verbose)
    session = make_session(args)
    scheduler = session.scheduler
    scheduler.subscribe(renderer.handle)
    controller = RebuildController(scheduler, lambda m: BuildSpec(m, default_output(m), options, force=args.force))
    watcher = ModelWatcher([Path(p) for p in args.paths if Path(p).exists()], controller.handle)
    stop = {"requested": False, "cancelled": False}

    def on_sigint(signum, frame):
        if stop["requested"]:
            os._exit(EXIT_CANCELLED)
        stop["requested"] = True
        stop["cancelled"] = bool(scheduler.active())

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        from .core.watch import ModelChange

        controller.handle([ModelChange("added", m.resolve(), 0.0) for m in models])
        watcher.start()
        renderer.message(f"trt-tui: watching {', '.join(str(d) for d in watcher.dirs)} (Ctrl-C to stop)")
        while not stop["requested"]:
            time.sleep(0.1)
            for err in watcher.errors:
                renderer.message(f"trt-tui: {err}")
            watcher.errors.clear()
    finally:
        watcher.stop()
        session.close()
        renderer.close()
        signal.signal(signal.SIGINT, previous)
    return EXIT_CANCELLED if stop["cancelled"] else EXIT_OK


def cmd_history(args) -> int:
    from .core.history import History, format_history
    from .core.session import history_path

    history = History(history_path(args.history))
    try:
        records = history.builds(args.model, limit=args.limit)
    finally:
        history.close()
    if not records:
        print("no builds recorded" + (f" for {args.model}" if args.model else ""))
        return EXIT_OK
    print("\n".join(format_history(records)))
    return EXIT_OK


def cmd_app(args) -> int:
    from .ui.app import make_app

    app = make_app(args)
    app.run()
    return app.return_code or 0


# -- entry point ---------------------------------------------------------------------------------


def build_parser() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    app = argparse.ArgumentParser(
        prog="trt-tui",
        description="Watch TensorRT engine builds live and cancel them. Subcommands: "
        + ", ".join(SUBCOMMANDS) + " (trt-tui SUBCOMMAND -h).",
    )
    app.add_argument("paths", nargs="*", default=["."], help="ONNX files or directories (default: .)")
    app.add_argument("--demo", action="store_true", help="write the sample models to a temporary directory and open them")
    app.add_argument("--theme", help="theme name (see themes/)")
    app.add_argument("--watch", action="store_true", help="rebuild models when their ONNX files change")
    app.add_argument("--version", action="version", version=f"trt-tui {__version__}")
    add_build_options(app)

    sub = argparse.ArgumentParser(prog="trt-tui")
    cmds = sub.add_subparsers(dest="command", required=True)
    b = cmds.add_parser("build", help="build engines headless")
    b.add_argument("models", nargs="+", help="ONNX files")
    b.add_argument("-o", "--output", help="engine file (one model) or directory (several)")
    b.add_argument("--json", action="store_true", help="one JSON object per event per line")
    add_build_options(b)
    w = cmds.add_parser("watch", help="build models, then rebuild each when its ONNX file changes")
    w.add_argument("paths", nargs="*", default=["."], help="ONNX files or directories (default: .)")
    w.add_argument("--json", action="store_true", help="one JSON object per event per line")
    add_build_options(w)
    h = cmds.add_parser("history", help="list past builds")
    h.add_argument("model", nargs="?", help="only this model (path or file name)")
    h.add_argument("-n", "--limit", type=int, default=50, help="at most this many (default 50)")
    h.add_argument("--history", metavar="PATH", help="history database (default: user data directory)")
    s = cmds.add_parser("samples", help="write sample ONNX models (random weights, generated locally)")
    s.add_argument("directory")
    s.add_argument("names", nargs="*", help="which samples (default: all)")
    s.add_argument("--force", action="store_true", help="overwrite existing files")
    return app, sub


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    app_parser, sub_parser = build_parser()
    is_sub = bool(argv) and argv[0] in SUBCOMMANDS
    try:
        args = (sub_parser if is_sub else app_parser).parse_args(argv)
    except SystemExit as exc:  # argparse already printed its one-line usage error
        return EXIT_USAGE if exc.code else EXIT_OK
    handler = {"build": cmd_build, "samples": cmd_samples, "watch": cmd_watch, "history": cmd_history}.get(getattr(args, "command", None), cmd_app)
    try:
        return handler(args)
    except UsageError as exc:
        print(f"trt-tui: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_CANCELLED


if __name__ == "__main__":
    sys.exit(main())
