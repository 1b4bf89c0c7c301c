"""Build histories: a record written as a finished build leaves it, and one an older trt-tui wrote."""

from __future__ import annotations

import time
from pathlib import Path

from trt_tui.core.history.records import History


def record(history: History, model: str | Path = "/models/mnist.onnx", **overrides) -> int:
    fields = dict(
        model=model, model_hash="abc123", options={"opt_level": 3, "workspace": None}, backend="tensorrt-rtx",
        backend_version="1.7.1.116", state="succeeded", error=None, started=time.time(), duration=2.5,
        engine_bytes=318540, phases={"Building engine": 2.0, "Building engine/Optimizing graph": 0.5},
    )
    fields.update(overrides)
    return history.record(**fields)


OLD_DB = Path(__file__).parent.parent / "data" / "history-main-11cf61b.sqlite3"  # a history an older trt-tui wrote
