"""A build whose engine differs from process to process: `run_build`'s stand-in for the reproducibility
check, sent to a child process by reference. Its engine is `PREFIX`, then the process's id and random
bytes, so two builds in two processes differ first at offset `len(PREFIX)`, with the same size."""

from __future__ import annotations

import hashlib
import os

from trt_tui.core.build.driver import Outcome
from trt_tui.core.build.events import Stage, State
from trt_tui.core.files.atomic import write_bytes

PREFIX = b"scripted engine, the same in every process: " * 100
SIZE = len(PREFIX) + 16


def nondeterministic_build(job: int, spec, sink, cancel, *, t0: float | None = None, on_monitor=None,
                           writer=None) -> Outcome:
    engine = PREFIX + os.getpid().to_bytes(8, "little") + os.urandom(8)
    sink(Stage(job, 0.0, State.BUILDING, backend="scripted 1.0"))
    write_bytes(spec.output, engine)
    return Outcome(State.SUCCEEDED, engine_bytes=len(engine), backend="scripted",
                   engine_sha256=hashlib.sha256(engine).hexdigest())
