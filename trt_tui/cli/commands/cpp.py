"""`trt-tui cpp`: what a C++ program needs to use trt-tui's header, and the preload compiled now.

`--includes` prints the compiler flags for `#include <trt_tui/monitor.h>` (as `python -m pybind11
--includes` does), `--cmakedir` the directory for CMake's `find_package(trt_tui)`; `build` compiles
the preload library `trt-tui run` gives programs that are not Python (it would on their first run)
and prints where it is.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import EXIT_FAILED, EXIT_OK, UsageError

HELP = "C++: compiler flags and CMake directory for trt_tui/monitor.h; build the preload for C++ programs"


def options(c: argparse.ArgumentParser) -> None:
    c.add_argument("action", nargs="?", choices=["build"], help="build: compile the preload library now")
    c.add_argument("--includes", action="store_true", help="print the compiler flags for trt_tui/monitor.h")
    c.add_argument("--cmakedir", action="store_true", help="print the directory for find_package(trt_tui)")


def run(args) -> int:
    from ...cpp import toolchain

    if args.includes:
        print(f"-I{toolchain.INCLUDE_DIR}")
    if args.cmakedir:
        print(toolchain.CMAKE_DIR)
    if args.action == "build":
        try:
            print(toolchain.preload_library())
        except toolchain.ToolchainMissing as exc:
            print(f"trt-tui: {exc}", file=sys.stderr)
            return EXIT_FAILED
    elif not (args.includes or args.cmakedir):
        raise UsageError("cpp: give --includes, --cmakedir or build")
    return EXIT_OK
