"""`trt-tui samples DIR [NAMES]`: write the sample ONNX models (random weights, generated locally)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import EXIT_OK, UsageError

HELP = "write sample ONNX models (random weights, generated locally)"


def options(s: argparse.ArgumentParser) -> None:
    s.add_argument("directory")
    s.add_argument("names", nargs="*", help="which samples (default: all)")
    s.add_argument("--force", action="store_true", help="overwrite existing files")


def run(args) -> int:
    from ...core.model.samples import SAMPLES, write_samples

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
