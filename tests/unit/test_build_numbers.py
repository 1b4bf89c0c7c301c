"""A build's number is its history id, taken when it is queued (`History.reserve`, `HistoryNumbers`)."""

from __future__ import annotations

import time
from pathlib import Path

from trt_tui.core.build.driver import BuildSpec
from trt_tui.core.history.numbering import HistoryNumbers
from trt_tui.core.history.records import History


def _fields(model: Path, state: str = "succeeded") -> dict:
    return dict(model=model, model_hash=None, options={}, backend="b", backend_version="1", state=state, error=None,
                started=time.time(), duration=1.0, engine_bytes=None, phases={})


def test_a_reserved_number_is_hidden_until_recorded_and_its_record_keeps_it(tmp_path) -> None:
    model = tmp_path / "m.onnx"
    with History(tmp_path / "h.sqlite3") as h:
        assert h.record(**_fields(model)) == 1  # a session before numbering, or an older trt-tui
        numbers = HistoryNumbers(h)
        first, second = numbers(BuildSpec(model, tmp_path / "a")), numbers(BuildSpec(model, tmp_path / "b"))
        assert (first, second) == (2, 3)
        assert [r.id for r in h.builds()] == [1] and h.get(2) is None  # queued: no record to show yet
        assert h.record(**_fields(model, "failed"), record_id=second) == 3  # ends first: keeps its number
        assert h.record(**_fields(model), record_id=first) == 2
        assert sorted((r.id, r.state) for r in h.builds()) == [(1, "succeeded"), (2, "succeeded"), (3, "failed")]
        assert h.record(**_fields(model), record_id=3) == 4  # a number taken already: the next one
        assert HistoryNumbers(h)(BuildSpec(model, tmp_path / "c")) == 5  # a new session goes on from there
