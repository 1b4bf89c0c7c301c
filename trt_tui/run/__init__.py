"""`trt-tui run -- CMD`: observe and cancel the TensorRT builds of a program that is not ours.

The program runs unchanged. `site/` goes first on its PYTHONPATH; its `sitecustomize` installs an
import hook that patches `tensorrt` / `tensorrt_rtx` once the program imports one (`hook`), and each
build the program makes reports to trt-tui over a Unix socket whose address and key travel in the
environment, so the processes the program spawns report too (`reporter`). The parent side
(`observer`) turns each build into a `BuildJob` of an ordinary scheduler, so the app and the headless
renderers show them as they show their own builds. Its parts: `supervisor` (the program's processes,
none left behind), `reports` (the socket), `relays` (reports to jobs), `output` (the program's output,
bounded) and `timeline` (headless output and events, in time order).

This module is imported inside the observed program: it stays light (no imports).
"""

from __future__ import annotations

import os

ENV_ADDRESS = "TRT_TUI_RUN_ADDRESS"  # the parent's Unix socket
ENV_KEY = "TRT_TUI_RUN_KEY"  # hex authkey of that socket (it is in a private directory too)
ENV_ROOT = "TRT_TUI_RUN_ROOT"  # the directory holding trt_tui, for a program whose Python lacks it
ENV_VERBOSE = "TRT_TUI_RUN_VERBOSE"  # "1": relay TensorRT's verbose log too

SITE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "site")
