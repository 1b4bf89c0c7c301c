"""One engine build from start to finish: parse, configure, build, write.

`run_build` is a plain function of plain data (a `BuildSpec`, a sink for events, a cancel flag) so the
same code runs on a thread of this process or inside a child process. It owns its Builder, network,
parser and config (TensorRT allows one thread per Builder), reports every state change as an event, and
writes the engine to a temporary file in the target directory that is renamed into place only after a
successful build, so a cancel, a failure or a crash never leaves a half-written engine behind.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .backend import Backend, BackendError, load_backend
from .events import Severity, State, StateChanged
from .modelinfo import ModelInfoError, read_model_info
from .monitor import MonitorState, Sink, make_monitor, shared_logger

Shape = tuple[int, ...]
Writer = Callable[[object, Path, Path], int]


class BuildError(Exception):
    """A failure the user can act on; the message is the one line they see."""


@dataclass(frozen=True)
class BuildOptions:
    backend: str = "auto"
    workspace: int | None = None  # bytes
    opt_level: int | None = None  # 0..5
    # input name -> (min, opt, max)
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

    def temp_path(self, job: int) -> Path:
        """Chosen before the build starts so whoever runs the build (or kills it) can remove it."""
        return self.output.with_name(f".{self.output.name}.{os.getpid()}.{job}.tmp")


@dataclass
class Outcome:
    state: State
    error: str | None = None
    detail: str | None = None
    engine_bytes: int | None = None
    cancelled_in: list[str] | None = None  # phase path, outermost first
    backend: str | None = None
    backend_version: str | None = None


def default_output(model: Path) -> Path:
    return model.with_suffix(".engine")


def check_output_writable(output: Path) -> None:
    parent = output.parent if str(output.parent) else Path(".")
    if not parent.is_dir():
        problem = "is not a directory" if parent.exists() else "does not exist"
        raise BuildError(f"{output}: output directory {parent} {problem}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise BuildError(f"{output}: output directory {parent} is not writable")
    if output.is_dir():
        raise BuildError(f"{output}: is a directory, not an engine file")


def missing_external_data(model: Path) -> Path | None:
    """The first external data file (weights kept beside the model) that `model` names and that is
    not there. TensorRT's parser says only that it could not import an initializer, not which file
    it could not open."""
    try:
        files = read_model_info(model).external_data
    except ModelInfoError:  # not a readable model: the parser says why
        return None
    return next((path for path in files if not path.is_file()), None)


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
    if options.compute_capabilities:
        if not backend.has_compute_capabilities:
            raise BuildError(f"--compute-capability needs TensorRT-RTX; {backend.name} builds for this GPU")
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
            if not all(a <= b <= c for a, b, c in zip(lo, opt, hi)):
                raise BuildError(f"{model}: input {name!r}: shapes must satisfy min <= opt <= max")
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
        from .filelock import locked

        with locked(self.path.with_name(self.path.name + ".lock")):
            if self.path.exists():
                other = config.create_timing_cache(self.path.read_bytes())
                cache.combine(other, ignore_mismatch=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(memoryview(cache.serialize()))
            os.replace(tmp, self.path)


def write_atomically(data, output: Path, temp: Path) -> int:
    """Write to `temp` in the target directory, fsync, rename over `output`; remove `temp` on any
    failure (ENOSPC, a vanished directory) so nothing half-written remains. The directory is held
    open meanwhile: if it is renamed during the write, the rename into place fails, and `temp` is
    removed from wherever the directory went, not looked for where it no longer is."""
    view = memoryview(data)
    directory = _open_directory(temp.parent)
    try:
        with open(temp, "xb") as f:
            f.write(view)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, output)
    except BaseException:
        remove_temp(temp)
        if directory is not None:
            try:
                os.unlink(temp.name, dir_fd=directory)
            except OSError:
                pass
        raise
    finally:
        if directory is not None:
            os.close(directory)
    return view.nbytes


def _open_directory(path: Path) -> int | None:
    """A descriptor of `path` for `unlink(dir_fd=...)`; None where there is none (Windows, or no
    such directory: then the write fails by itself)."""
    if os.unlink not in os.supports_dir_fd or not hasattr(os, "O_DIRECTORY"):
        return None
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None


def remove_temp(temp: Path) -> None:
    """Remove a temporary engine if there is one. Never raises: where the target directory is not a
    directory (or is unreadable) there is nothing to remove, and `unlink` fails with ENOTDIR or EACCES,
    which `missing_ok` does not cover; raising here would replace the build's real error."""
    try:
        temp.unlink(missing_ok=True)
    except OSError:
        pass


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
    `writer(serialized, output, temp) -> bytes written` replaces `write_atomically` (a remote build keeps
    the engine in memory for its caller to write)."""
    t0 = time.monotonic() if t0 is None else t0
    state = MonitorState(job, sink, cancel, t0)
    if on_monitor is not None:
        on_monitor(state)

    def change(new: State, **extra) -> None:
        sink(StateChanged(job, time.monotonic() - t0, new, **extra))

    outcome: Outcome
    temp = spec.temp_path(job)
    try:
        outcome = _run(spec, state, change, temp, writer or write_atomically)
    except BuildError as exc:
        outcome = Outcome(State.FAILED, error=str(exc))
    except MemoryError:
        outcome = Outcome(State.FAILED, error=f"{spec.model}: out of memory while building")
    except Exception as exc:  # a bug of ours or an unexpected TensorRT error: still one line, no traceback
        outcome = Outcome(State.FAILED, error=f"{spec.model}: {type(exc).__name__}: {exc}")
    finally:
        remove_temp(temp)
    change(outcome.state, error=outcome.error, detail=outcome.detail, engine_bytes=outcome.engine_bytes)
    return outcome


def _run(spec: BuildSpec, state: MonitorState, change, temp: Path, writer: Writer) -> Outcome:
    model, options = spec.model, spec.options
    change(State.PARSING)
    try:
        backend = load_backend(options.backend)
    except BackendError as exc:
        raise BuildError(str(exc)) from None
    if options.timing_cache is not None and not backend.has_timing_cache:
        raise BuildError("--timing-cache needs full TensorRT: TensorRT-RTX does not use timing caches")
    if not model.exists():
        raise BuildError(f"{model}: no such file")
    if not model.is_file():
        raise BuildError(f"{model}: not a file")
    if not os.access(model, os.R_OK):
        raise BuildError(f"{model}: not readable (permission denied)")
    missing = missing_external_data(model)
    if missing is not None:
        raise BuildError(f"{model}: external data file {missing} does not exist")
    check_output_writable(spec.output)

    trt = backend.trt
    router, logger = shared_logger(trt)
    with router.bind(state, Severity.VERBOSE if options.verbose else Severity.INFO):
        return _parse_and_build(backend, spec, state, change, temp, logger, writer)


def _parse_and_build(backend: Backend, spec: BuildSpec, state: MonitorState, change, temp: Path, logger,
                     writer: Writer) -> Outcome:
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

    change(State.BUILDING)
    serialized = builder.build_serialized_network(network, config)
    config.progress_monitor = None
    if state._cancelled() or state.cancelled_in is not None:
        where = state.cancelled_in or []
        detail = f"cancelled in {' › '.join(where)}" if where else "cancelled"
        return Outcome(State.CANCELLED, detail=detail, cancelled_in=list(where))
    if serialized is None or serialized.nbytes == 0:
        reason = state.last_error or "TensorRT returned no engine"
        raise BuildError(f"{model}: build failed: {reason}")
    if timing is not None and cache is not None:
        timing.save(config, cache)

    change(State.WRITING)
    try:
        size = writer(serialized, spec.output, temp)
    except OSError as exc:
        raise BuildError(f"{spec.output}: cannot write engine: {exc.strerror or exc}") from None
    return Outcome(State.SUCCEEDED, engine_bytes=size, backend=backend.name, backend_version=backend.version)
