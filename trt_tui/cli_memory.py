"""The memory options: `--memory-limit SIZE`, the most memory each build process may use (see
`core.memory_limit`), and the size `--spare-memory` takes."""

from __future__ import annotations

import argparse


def spare_size(text: str) -> int:
    """An argparse type: a size as `cli.parse_size` takes it (0 allowed): `--spare-memory`."""
    from .cli_basics import UsageError, parse_size

    try:
        return parse_size(text)
    except UsageError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (try 512M, 2G or 0)") from None


def limit_size(text: str) -> int:
    """An argparse type: a size as `cli.parse_size` takes it, more than nothing."""
    from .cli_basics import UsageError, parse_size

    try:
        value = parse_size(text)
    except UsageError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (try 4G or 512M)") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a memory limit must be more than nothing")
    return value


def add_memory_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--memory-limit", type=limit_size, default=None, metavar="SIZE",
                   help="put each build process under this memory limit (a cgroup where the machine allows"
                        " it, else RLIMIT_AS): a runaway build is stopped and named, not the machine's editor")


def memory_limit(args):
    """The `MemoryLimit` the options ask for, or None; a limit with an executor that has no build
    process of its own to limit is refused in one line."""
    from .cli_basics import UsageError
    from .core.memory_limit import MemoryLimit

    if getattr(args, "memory_limit", None) is None:
        return None
    if args.executor in ("thread", "ray"):
        raise UsageError(f"--memory-limit needs the process executor: --executor {args.executor} runs a build"
                         " in no process of its own to limit")
    return MemoryLimit(args.memory_limit)
