"""One engine build from start to finish: parse, configure, build, write.

`run_build` is a plain function of plain data (a `BuildSpec`, a sink for events, a cancel flag) so the
same code runs on a thread of this process or inside a child process. It owns its Builder, network,
parser and config (TensorRT allows one thread per Builder), reports every state change as an event, and
writes the engine through `atomic` (a temporary in the target directory, renamed into place only after a
successful build), so a cancel, a failure or a crash never leaves a half-written engine behind. It
refuses to write over its own model, and over any file that is not an engine trt-tui wrote (its
sidecar says which bytes those are) unless the spec says `replace`, nor over anything but a regular file.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..files import atomic
from ..model.modelinfo import ModelInfoError, read_model_info
from . import engine_file, native_log, sidecar
from .backend import Backend, BackendError, load_backend
from .events import BuildResult, Finished, Severity, SpecSummary, Stage, State
from .memory_limit import memory_failure, own_limit, own_peak
from .monitor import MonitorState, Sink, make_monitor, shared_logger
from .phases import cancelled_detail

Shape = tuple[int, ...]
# writer(engine bytes, output, before_replace) -> bytes written; before_replace() raises to abandon the write.
# Without one the engine is installed with its sidecar (`engine_file`); a writer keeps the bytes for its
# caller, who installs them.
Writer = Callable[[object, Path, Callable[[], None]], int]


class BuildError(Exception):
    """A failure the user can act on; the message is the one line they see."""


@dataclass(frozen=True)
class BuildOptions:
    backend: str = "auto"
    workspace: int | None = None  # bytes
    opt_level: int | None = None  # 0..5
    # input name -> (min, opt, max), min <= opt <= max: checked where the options are read (`cli.types`)
    shapes: dict[str, tuple[Shape, Shape, Shape]] = field(default_factory=dict)
    compute_capabilities: tuple[str, ...] = ()
    timing_cache: Path | None = None
    verbose: bool = False

    def describe(self) -> dict:
        """The options as JSON-able data, for the cache key and the history."""
        return {
            "workspace": self.workspace,
            "opt_level": self.opt_level,
            "shapes": {k: [list(s) for s in v] for k, v in sorted(self.shapes.items())},
            "compute_capabilities": list(self.compute_capabilities),
        }


@dataclass(frozen=True)
class BuildSpec:
    model: Path  # as the user gave it
    output: Path
    options: BuildOptions = field(default_factory=BuildOptions)
    force: bool = False  # build even when the engine cache says the engine is current
    # Replace a regular file at `output` that trt-tui did not write (`--force` on the command line; the
    # app's `f` only once the user said yes): forcing a rebuild alone is no leave to replace it.
    replace: bool = False

    def history_fields(self) -> dict | None:
        """What this build's history row says in place of the usual fields: nothing for a build of
        trt-tui's own; a build another program made says who chose its options; None for a job that is
        no build (its history has no row)."""
        return {}

    def summary(self) -> SpecSummary:
        """What was queued, as its queued state says it."""
        return SpecSummary(model=str(self.model), output="" if self.output == Path("") else str(self.output),
                           backend=self.options.backend, options=self.options.describe(),
                           history=self.history_fields())

    def clock_origin(self) -> float | None:
        """Where the build's clock (its events' `t`) starts, on this process's monotonic clock, for a
        build whose clock is its own (one another program runs); None: when the scheduler starts it."""
        return None


@dataclass
class Outcome:
    state: State
    error: str | None = None
    detail: str | None = None
    engine_bytes: int | None = None
    cancelled_in: list[str] | None = None  # phase path, outermost first
    backend: str | None = None
    backend_version: str | None = None
    engine_sha256: str | None = None
    heap_bytes: int | None = None  # heap the build's own process needed (`child.HeapNeed`), if it had one

    def result(self, peak_rss_bytes: int | None = None) -> BuildResult:
        """The outcome as its `Finished` event says it (`peak_rss_bytes`: as the caller measured it)."""
        backend = f"{self.backend} {self.backend_version or ''}".strip() if self.backend else None
        return BuildResult(self.state, self.error, self.detail, self.engine_bytes, peak_rss_bytes, backend,
                           self.engine_sha256, self.heap_bytes)


def default_output(model: Path) -> Path:
    return model.with_suffix(".engine")


def model_problem(model: Path) -> str | None:
    """Why `model` cannot be read at all (missing, a directory, unreadable), else None: the one check,
    made by `trt-tui build` before any build starts and by every build as it starts."""
    if not model.exists():
        return f"{model}: no such file"
    if model.is_dir():
        return f"{model}: is a directory, not an ONNX file"
    if not os.access(model, os.R_OK):
        return f"{model}: not readable (permission denied)"
    return None


def spec_for(model: Path, options: BuildOptions, *, output: Path | None = None, force: bool = False,
             replace: bool = False) -> BuildSpec:
    """A build of `model` with `options`, its engine beside it unless `output` says where: the one
    way the CLI, the app and the build server say what to build."""
    return BuildSpec(model, default_output(model) if output is None else output, options, force=force,
                     replace=replace)


def check_output_writable(output: Path) -> None:
    parent = output.parent if str(output.parent) else Path(".")
    if not parent.is_dir():
        problem = "is not a directory" if parent.exists() else "does not exist"
        raise BuildError(f"{output}: output directory {parent} {problem}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise BuildError(f"{output}: output directory {parent} is not writable")
    if output.is_dir():
        raise BuildError(f"{output}: is a directory, not an engine file")


def is_same_file(a: Path, b: Path) -> bool:
    """The same path, the same inode (a hard link) or a link to it."""
    try:
        if os.path.abspath(a) == os.path.abspath(b) or a.resolve() == b.resolve():
            return True
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_output_replaceable(spec: BuildSpec) -> None:
    """The engine must not land on the model, must not replace anything but a regular file (nor its
    sidecar), and must not replace a file trt-tui did not write (a user's engine from another tool, a
    model, anything) unless the spec says `replace`."""
    output = spec.output
    if is_same_file(output, spec.model):
        raise BuildError(f"{output}: the engine would overwrite its own model {spec.model}; choose another -o")
    if output.is_symlink():
        raise BuildError(f"{output}: is a symbolic link; trt-tui writes engines only to regular files")
    for path in (output, sidecar.sidecar_path(output)):
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            raise BuildError(f"{path}: exists and is not a regular file; trt-tui replaces only regular files")
    if spec.replace or not output.exists():
        return
    try:  # under the engine's lock: never between another build's engine and its sidecar
        with sidecar.locked(output):
            ours = sidecar.written_by_us(output)
    except OSError:  # no lock in a directory we cannot write to (the build says so before writing)
        ours = sidecar.written_by_us(output)
    if not ours:
        raise BuildError(f"{output}: exists and is not an engine trt-tui wrote; use --force to replace it")


def parser_errors(parser, model: Path) -> str:
    """One line naming the file and, where TensorRT knows them, the node and its operator."""
    parts = []
    for i in range(parser.num_errors):
        err = parser.get_error(i)
        desc = " ".join(str(err.desc()).split())
        node = err.node_name() if hasattr(err, "node_name") else ""
        op = err.node_operator() if hasattr(err, "node_operator") else ""
        if node or op:
            where = f"node {node!r}" if node else "a node"
            where += f" ({op})" if op else ""
            parts.append(f"{where}: {desc}")
        else:
            parts.append(desc)
    reason = "; ".join(dict.fromkeys(parts)) or "the parser gave no reason"
    return f"{model}: cannot parse ONNX: {reason}"


def _configure(backend: Backend, builder, network, options: BuildOptions, model: Path):
    trt = backend.trt
    config = builder.create_builder_config()
    if options.workspace is not None:
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, options.workspace)
    if options.opt_level is not None:
        config.builder_optimization_level = options.opt_level
    if options.compute_capabilities:  # checked against the backend where the option is read (`cli.options`)
        config.num_compute_capabilities = len(options.compute_capabilities)
        for i, text in enumerate(options.compute_capabilities):
            try:
                config.set_compute_capability(backend.compute_capability(text), i)
            except BackendError as exc:
                raise BuildError(f"--compute-capability: {exc}") from None
    inputs = [network.get_input(i) for i in range(network.num_inputs)]
    names = {inp.name for inp in inputs}
    unknown = sorted(set(options.shapes) - names)
    if unknown:
        raise BuildError(f"{model}: --shapes names {', '.join(unknown)}, but the inputs are {', '.join(sorted(names))}")
    dynamic = [inp for inp in inputs if any(d < 0 for d in inp.shape)]
    missing = [inp for inp in dynamic if inp.name not in options.shapes]
    if missing:
        inp = missing[0]
        raise BuildError(
            f"{model}: input {inp.name!r} has dynamic shape {tuple(inp.shape)}: give its shapes with "
            f"--shapes {inp.name}:1x... or --min-shapes/--opt-shapes/--max-shapes"
        )
    if options.shapes:
        profile = builder.create_optimization_profile()
        by_name = {inp.name: inp for inp in inputs}
        for name, (lo, opt, hi) in options.shapes.items():
            declared = tuple(by_name[name].shape)
            if len(lo) != len(declared):
                raise BuildError(f"{model}: input {name!r} has {len(declared)} dimensions {declared}, --shapes gives {len(lo)}")
            for dim, (want_lo, want_hi, fixed) in enumerate(zip(lo, hi, declared)):
                if fixed >= 0 and not (want_lo == fixed == want_hi and opt[dim] == fixed):
                    raise BuildError(f"{model}: input {name!r} dimension {dim} is fixed at {fixed}, --shapes asks otherwise")
            profile.set_shape(name, lo, opt, hi)
        config.add_optimization_profile(profile)
    return config


class _TimingCache:
    """A persistent timing cache (full TensorRT only), read before and merged back after the build
    under an exclusive file lock, so concurrent builds and processes never corrupt it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self, config):
        data = self.path.read_bytes() if self.path.exists() else b""
        cache = config.create_timing_cache(data)
        config.set_timing_cache(cache, ignore_mismatch=False)
        return cache

    def save(self, config, cache) -> None:
        from ..files.filelock import locked

        with locked(self.path.with_name(self.path.name + ".lock")):
            if self.path.exists():
                other = config.create_timing_cache(self.path.read_bytes())
                cache.combine(other, ignore_mismatch=True)
            atomic.write_bytes(self.path, cache.serialize())


def run_build(
    job: int,
    spec: BuildSpec,
    sink: Sink,
    cancel,
    *,
    t0: float | None = None,
    on_monitor: Callable[[MonitorState], None] | None = None,
    writer: Writer | None = None,
) -> Outcome:
    """Build `spec`, reporting through `sink`; never raises. `cancel` has `.cancelled` or `.is_set()`.
    `writer` replaces `write_file` (a remote build keeps the engine in memory for its caller to write)."""
    t0 = time.monotonic() if t0 is None else t0
    state = MonitorState(job, sink, cancel, t0)
    if on_monitor is not None:
        on_monitor(state)

    def change(new: State, backend: str | None = None) -> None:
        sink(Stage(job, time.monotonic() - t0, new, backend=backend))

    outcome: Outcome
    try:
        outcome = _run(spec, state, change, writer)
    except BuildError as exc:
        outcome = Outcome(State.FAILED, error=str(exc))
    except MemoryError:
        outcome = Outcome(State.FAILED, error=f"{spec.model}: out of memory while building")
    except Exception as exc:  # a bug of ours or an unexpected TensorRT error: still one line, no traceback
        outcome = Outcome(State.FAILED, error=f"{spec.model}: {type(exc).__name__}: {exc}")
    if outcome.state is State.FAILED:  # an allocation TensorRT could not make, named with the figure
        named = memory_failure(spec.model, outcome.error, state.memory_warned, own_peak(), own_limit())
        outcome.error = named or outcome.error
    sink(Finished(job, time.monotonic() - t0, BuildResult(outcome.state, outcome.error, outcome.detail,
                                                          outcome.engine_bytes)))
    return outcome


def _run(spec: BuildSpec, state: MonitorState, change, writer: Writer | None) -> Outcome:
    model, options = spec.model, spec.options
    change(State.PARSING)
    if (problem := model_problem(model)) is not None:
        raise BuildError(problem)
    if not model.is_file():  # a pipe or a device: reading it could block
        raise BuildError(f"{model}: not a file")
    try:
        info = read_model_info(model)  # empty, cut short, not ONNX: say so before TensorRT guesses
    except ModelInfoError as exc:
        reason = str(exc).removeprefix(f"{model}: ")
        raise BuildError(f"{model}: cannot parse ONNX: {reason}") from None
    missing = next((path for path in info.external_data if not path.is_file()), None)
    if missing is not None:
        raise BuildError(f"{model}: external data file {missing} does not exist")
    check_output_writable(spec.output)
    check_output_replaceable(spec)
    try:  # after the model's checks: a file that is not a model fails without loading TensorRT
        backend = load_backend(options.backend)
    except BackendError as exc:
        raise BuildError(str(exc)) from None
    # A writer killed mid-write (SIGKILL, a crash) cannot clean up after itself: the next one does.
    atomic.remove_stale_temps(spec.output.parent)

    min_severity = Severity.VERBOSE if options.verbose else Severity.INFO
    # Where stdout is free to lend, TensorRT's C++ logger drops the verbose lines nobody asked for
    # without calling Python for each of them (see `native_log`).
    native = None if options.verbose else native_log.capture(backend.trt, state, min_severity)
    if native is not None:
        with native:
            return _parse_and_build(backend, spec, state, change, native.logger, writer, native.settle)
    router, logger = shared_logger(backend.trt)
    with router.bind(state, min_severity):
        return _parse_and_build(backend, spec, state, change, logger, writer)


class _CancelledWhileWriting(Exception):
    pass


def _parse_and_build(backend: Backend, spec: BuildSpec, state: MonitorState, change, logger,
                     writer: Writer | None, settle_log: Callable[[], None] = lambda: None) -> Outcome:
    """`settle_log` returns once every line logged so far has reached `state` (its last error)."""
    trt, model, options = backend.trt, spec.model, spec.options
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(str(model)):
        raise BuildError(parser_errors(parser, model))
    if state._cancelled():
        return Outcome(State.CANCELLED, detail="cancelled before the build started")
    config = _configure(backend, builder, network, options, model)
    config.progress_monitor = make_monitor(trt, state)
    timing = _TimingCache(options.timing_cache) if options.timing_cache is not None else None
    cache = timing.load(config) if timing is not None else None

    change(State.BUILDING, backend=f"{backend.name} {backend.version}")
    serialized = builder.build_serialized_network(network, config)
    config.progress_monitor = None
    if state._cancelled() or state.cancelled_in is not None:
        where = state.cancelled_in or []
        return Outcome(State.CANCELLED, detail=cancelled_detail(where), cancelled_in=list(where))
    if serialized is None or serialized.nbytes == 0:
        settle_log()
        reason = state.last_error or "TensorRT returned no engine"
        raise BuildError(f"{model}: build failed: {reason}")
    if timing is not None and cache is not None:
        timing.save(config, cache)

    change(State.WRITING)

    def unless_cancelled() -> None:
        # A cancel that came while the engine was being written still means "leave nothing".
        if state._cancelled():
            raise _CancelledWhileWriting

    hashing = _Digest(serialized)  # on a thread, while the engine is written
    try:
        if writer is None:  # the engine and its sidecar (which names these bytes) go into place together
            size, digest = engine_file.install(serialized, spec.output, hashing.result, unless_cancelled)
        else:
            size, digest = writer(serialized, spec.output, unless_cancelled), hashing.result()
    except _CancelledWhileWriting:
        return Outcome(State.CANCELLED, detail="cancelled while writing the engine; nothing was written")
    except OSError as exc:
        raise BuildError(f"{spec.output}: cannot write engine: {exc.strerror or exc}") from None
    finally:
        hashing.result()
    return Outcome(State.SUCCEEDED, engine_bytes=size, backend=backend.name, backend_version=backend.version,
                   engine_sha256=digest)


class _Digest:
    """The engine's SHA-256, computed on a thread of its own: hashlib lets go of the GIL for a large
    buffer, and the write mostly waits on the kernel, so the two overlap instead of adding up."""

    def __init__(self, data) -> None:
        self._data = memoryview(data)
        self._value: str | None = None
        self._thread = threading.Thread(target=self._run, name="trt-tui-digest", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        self._value = hashlib.sha256(self._data).hexdigest()

    def result(self) -> str:
        self._thread.join()
        self._data.release()
        if self._value is None:  # the hashing thread raised (and printed why): no hash to record
            raise RuntimeError("the engine's SHA-256 could not be computed")
        return self._value
