"""The options every building command shares, and what they make: one `BuildOptions` (how each
engine is built) and one `SessionSettings` (how the builds run). Each option is checked here, once,
as the command line is read: the builds and the app take the values as given.

TensorRT itself is imported here only for --compute-capability (the targets' names are the installed
version's): the builds import it in their own processes, and this process's import
would compete with them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..core.build.backend import CHOICES, BackendError, find_backend, has_timing_cache, load_backend
from ..core.build.driver import BuildOptions
from ..core.execution.executor import DEFAULT_CANCEL_GRACE, Executor
from ..core.execution.executor_registry import (
    BUILT_IN,
    DEFAULT_EXECUTOR,
    built_in_executors,
    executor_class,
    memory_limit_refusal,
)
from ..core.execution.session_settings import SessionSettings
from .errors import UsageError
from .types import gpu_list, int_in, jobs_count, limit_size, parse_size, profile_shapes, seconds, spare_size


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
    p.add_argument("-j", "--jobs", type=jobs_count, default="auto", metavar="N|auto",
                   help="builds at once (default auto: one per core this process may use, cgroup CPU quota"
                        " included)")
    add_executor_options(p)
    p.add_argument("--cancel-grace", type=seconds, default=DEFAULT_CANCEL_GRACE, metavar="SECONDS",
                   help="with an executor that builds in a process of its own: force a cancel that TensorRT has"
                        " not honoured by then")
    p.add_argument("--spare-memory", type=spare_size, default=None, metavar="SIZE",
                   help="with the process executor: the most heap the waiting build process faults in ahead"
                        " of a build, as much as recent builds needed (default 2G; 0: none)")
    p.add_argument("--force", action="store_true", help="build even when the engine is up to date")
    p.add_argument("--cache", metavar="URL", dest="shared_cache", type=shared_cache_url,
                   help="a shared engine cache: a directory (file:///mnt/engines, an NFS mount), s3://bucket/prefix"
                        " (pip install 'trt-tui[cache]'), gs://bucket/prefix ('trt-tui[gcs]'); builds fetch from it"
                        " and store to it. Credentials come from the back end's usual places, never the URL")
    p.add_argument("--cache-timeout", type=seconds, default=30.0, metavar="SECONDS",
                   help="the most one fetch or store may wait on the shared cache; then it is said once and the"
                        " build goes on locally (default 30)")
    p.add_argument("--history", metavar="PATH", help="build history database (default: user data directory)")
    p.add_argument("--trace", metavar="FILE", help="write the builds' phases as Chrome trace-event JSON")
    add_vitals_options(p)
    p.add_argument("--memory-limit", type=limit_size, default=None, metavar="SIZE",
                   help="put each build process under this memory limit (a cgroup where the machine allows"
                        " it, else RLIMIT_AS): a runaway build is stopped and named, not the machine's editor")
    p.add_argument("--gpus", type=gpu_list, default=None, metavar="LIST",
                   help="GPUs for full-TensorRT builds, one build per GPU at a time, each process pinned to"
                        " its GPU, e.g. 0,1 (default: every GPU; TensorRT-RTX builds use none)")


def executor_name(text: str) -> str:
    """An executor's name, trt-tui's own or one an installed package adds (`executor_registry`)."""
    try:
        executor_class(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


# Installed executors named by `--executor` on this command line (`name_installed_executor`): their
# own options join the parser as trt-tui's own executors' do. Only a named one is looked up, since
# reading every installed package's metadata costs a few tenths of a second.
_named_installed: list[type[Executor]] = []


def name_installed_executor(argv: list[str]) -> None:
    """Before the parser is made: the executor `--executor NAME` names in `argv`, where it is not one of
    trt-tui's own, so that its options are added (an unknown name is `--executor`'s error to say)."""
    names = [b for a, b in zip(argv, argv[1:]) if a == "--executor"]
    names += [a.partition("=")[2] for a in argv if a.startswith("--executor=")]
    _named_installed.clear()
    for name in names:
        if name not in BUILT_IN:
            try:
                _named_installed.append(executor_class(name))
            except (ValueError, ImportError, TypeError, AttributeError):
                pass


def add_executor_options(p: argparse.ArgumentParser) -> None:
    """`--executor`, and each executor's own options, as the executors declare them."""
    described = "; ".join(f"{name}: {cls.help}" for name, cls in built_in_executors().items())
    p.add_argument("--executor", type=executor_name, default=None, metavar="NAME",
                   help=f"where each build runs (default {DEFAULT_EXECUTOR}). {described}; or one an installed"
                        " package adds")
    for cls in [*built_in_executors().values(), *_named_installed]:
        if cls.options:
            add_options_of(p, cls)


def add_options_of(p: argparse.ArgumentParser, cls: type[Executor]) -> None:
    group = p.add_argument_group(f"the {cls.name} executor (with --executor {cls.name})")
    for option in cls.options:
        group.add_argument(f"--{option.flag}", dest=option.dest, metavar=option.metavar, help=option.help,
                           action="append" if option.repeatable else "store")


def format_name(text: str) -> str:
    """An output format's name, trt-tui's own or one an installed package adds (`formats.registry`)."""
    from ..formats.registry import format_class

    if text != "auto":
        try:
            format_class(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def add_format_option(p: argparse.ArgumentParser) -> None:
    """`--format`, the one option that says how the builds are shown, as every output format declares
    itself (`formats.registry`); `--json` stays as its alias."""
    from ..formats.registry import command_line_formats, formats

    described = "; ".join(f"{name}: {formats()[name].help}" for name in command_line_formats())
    p.add_argument("--format", type=format_name, default=None, metavar="NAME",
                   help=f"how the builds are shown (default auto: tty on a terminal, else lines). {described};"
                        " or one an installed package adds")
    p.add_argument("--json", dest="format", action="store_const", const="json", help="the same as --format json")


def add_vitals_options(p: argparse.ArgumentParser) -> None:
    from ..core.observe.vitals import DEFAULT_INTERVAL, DEFAULT_STALL_AFTER

    g = p.add_argument_group("vitals (the build's process, read from outside it)")
    g.add_argument("--vitals-interval", type=float, default=DEFAULT_INTERVAL, metavar="SECONDS",
                   help=f"sample each build's CPU and memory this often (default {DEFAULT_INTERVAL:g}; 0: off)")
    g.add_argument("--stall-after", type=float, default=DEFAULT_STALL_AFTER, metavar="SECONDS",
                   help="call a build stalled after this long with no callback and an idle CPU"
                        f" (default {DEFAULT_STALL_AFTER:g})")
    g.add_argument("--stack-after", type=float, default=None, metavar="SECONDS",
                   help="dump the build's native and Python stacks (py-spy) after this long with no"
                        " callback (default: when it is stalled)")


def build_options(args) -> BuildOptions:
    """The build options, checked before any build starts."""
    try:
        backend_name = find_backend(args.backend)
    except BackendError as exc:
        raise UsageError(str(exc)) from None
    ccs = tuple(c for value in args.compute_capability or () for c in value.split(",") if c.strip())
    if ccs:
        _check_compute_capabilities(args.backend, ccs)
    if args.timing_cache is not None and not has_timing_cache(backend_name):
        raise UsageError("--timing-cache needs full TensorRT: TensorRT-RTX does not use timing caches")
    return BuildOptions(
        backend=args.backend,
        workspace=parse_size(args.workspace) if args.workspace else None,
        opt_level=args.opt_level,
        shapes=profile_shapes(args.shapes, args.min_shapes, args.opt_shapes, args.max_shapes),
        compute_capabilities=ccs,
        timing_cache=Path(args.timing_cache) if args.timing_cache else None,
        verbose=args.verbose,
    )


def _check_compute_capabilities(choice: str, ccs: tuple[str, ...]) -> None:
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


def session_settings(args) -> SessionSettings:
    """How the builds run, from a building command's options (`build`, `watch`, `serve`, the app)."""
    from .checks import check_history

    check_history(args.history)
    auto = None
    if args.jobs == "auto":
        from ..core.execution.capacity import capacity

        auto = capacity(args.backend if args.backend != "auto" else None)
    return SessionSettings(jobs=auto.jobs if auto is not None else args.jobs, auto_jobs=auto,
                           executor=args.executor, cancel_grace=args.cancel_grace, history=args.history,
                           trace=args.trace, executor_options=executor_options(args),
                           vitals=vitals_config(args), spare_memory=args.spare_memory,
                           memory_limit=memory_limit(args), gpus=args.gpus,
                           shared_cache=args.shared_cache, cache_timeout=args.cache_timeout)


def shared_cache_url(text: str) -> str:
    """A --cache URL, checked: credentials in it are refused (they would show in the process list, the
    shell's history and every line naming the cache)."""
    from ..core.cache.shared_store import StoreError, check_url

    try:
        url = check_url(text)
    except StoreError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--cache: ")) from None
    return url if "://" in url else Path(url).expanduser().resolve().as_uri()


def vitals_config(args):
    from ..core.observe.vitals import VitalsConfig

    for option, value in (("--vitals-interval", args.vitals_interval), ("--stall-after", args.stall_after),
                          ("--stack-after", args.stack_after)):
        if value is not None and (value != value or value < 0 or value == float("inf")):
            raise UsageError(f"{option} must be a number of seconds, at least 0, not {value:g}")
    return VitalsConfig(args.vitals_interval, args.stall_after, args.stack_after)


def memory_limit(args):
    """The `MemoryLimit` the options ask for, or None; a limit with an executor that has no build
    process of its own to limit is refused in one line."""
    from ..core.build.memory_limit import MemoryLimit

    if args.memory_limit is None:
        return None
    if not executor_class(args.executor).memory_limits:
        raise UsageError(memory_limit_refusal(args.executor or DEFAULT_EXECUTOR))
    return MemoryLimit(args.memory_limit)


def executor_options(args) -> dict:
    """The chosen executor's own options, checked by it (`Executor.configure`); another executor's
    option given is one line."""
    chosen = executor_class(args.executor)
    for name in BUILT_IN:
        cls = executor_class(name)
        given = [f"--{option.flag}" for option in cls.options if vars(args).get(option.dest) is not None]
        if cls is not chosen and given:
            raise UsageError(f"{given[0]} needs --executor {name}")
    try:
        return chosen.configure({option.dest: vars(args).get(option.dest) for option in chosen.options})
    except (ValueError, RuntimeError) as exc:
        raise UsageError(str(exc)) from None
