"""The values options take, each checked where it is parsed: whole numbers in a range, seconds,
sizes, and shapes as trtexec writes them. An argparse type raises `ArgumentTypeError` (argparse
names the option); the parsers of several options at once raise `UsageError`.
"""

from __future__ import annotations

import argparse
import re

from .errors import UsageError

MAX_DIMENSION = (1 << 31) - 1  # TensorRT's dimensions are 32-bit signed integers
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(i?B)?\s*$", re.IGNORECASE)

Shape = tuple[int, ...]


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


def jobs_count(text: str) -> int | str:
    """An argparse type: `auto` (one build per usable core, `core.execution.capacity`) or 1 to 256."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number, nor auto") from None
    return int_in(1, 256)(text)


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds, zero or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, not {text}")
    return value


def parse_size(text: str) -> int:
    """'4G', '512M', '1.5GiB', or a plain number of MiB (as trtexec's --memPoolSize takes)."""
    match = _SIZE.match(text)
    if not match:
        raise UsageError(f"--workspace: {text!r} is not a size (try 1024M or 4G)")
    number, unit = float(match.group(1)), match.group(2).upper() or "M"
    return int(number * 1024 ** " KMGT".index(unit))


def spare_size(text: str) -> int:
    """An argparse type: a size as `parse_size` takes it (0 allowed): `--spare-memory`."""
    try:
        return parse_size(text)
    except UsageError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (try 512M, 2G or 0)") from None


def limit_size(text: str) -> int:
    """An argparse type: a size as `parse_size` takes it, more than nothing: `--memory-limit`."""
    try:
        value = parse_size(text)
    except UsageError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (try 4G or 512M)") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a memory limit must be more than nothing")
    return value


def parse_shape_list(option: str, text: str) -> dict[str, Shape]:
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


def profile_shapes(shapes: str | None, min_shapes: str | None, opt_shapes: str | None,
                   max_shapes: str | None) -> dict[str, tuple[Shape, Shape, Shape]]:
    """Each input's (min, opt, max) from `--shapes` or the three `--*-shapes`; the bounds are checked
    here, once (min <= opt <= max in every dimension), the model's own inputs by the build."""
    trio = (min_shapes, opt_shapes, max_shapes)
    if shapes and any(trio):
        raise UsageError("--shapes sets min, opt and max at once: do not combine it with --min/--opt/--max-shapes")
    if shapes:
        fixed = parse_shape_list("--shapes", shapes)
        return {name: (s, s, s) for name, s in fixed.items()}
    if not any(trio):
        return {}
    if not (min_shapes and opt_shapes and max_shapes):
        raise UsageError("--min-shapes, --opt-shapes and --max-shapes go together: give all three")
    lo, opt, hi = (parse_shape_list("--min-shapes", min_shapes), parse_shape_list("--opt-shapes", opt_shapes),
                   parse_shape_list("--max-shapes", max_shapes))
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


def gpu_list(text: str) -> tuple[str, ...]:
    """An argparse type: distinct GPU indices, each of a GPU that exists where NVML can tell. Asked
    only when the option is given (NVML is then started in this process, so its build processes
    are spawned, not forked: `build_process.may_fork`)."""
    from ..core.execution.gpu_slots import GpuListError, nvml_gpu_count, parse_gpus

    try:
        return parse_gpus(text, nvml_gpu_count())
    except GpuListError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
