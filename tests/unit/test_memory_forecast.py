"""Memory forecasts and failures as data: the fitted forecast, old history files, the wording.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from support.history import record

from trt_tui.core.build.events import Waiting
from trt_tui.core.build.memory_limit import memory_failure
from trt_tui.core.history.forecast import fit, forecast
from trt_tui.core.history.records import History

MiB = 1 << 20


def test_a_fitted_forecast_has_a_spread_and_too_little_history_is_unknown() -> None:
    opts = '{"a": 1}'
    measured = [("h1", opts, 100 * MiB, 600 * MiB), ("h2", opts, 10 * MiB, 250 * MiB), ("h3", opts, 50 * MiB, 420 * MiB)]
    base, ratio, spread = fit(measured)
    assert ratio > 0 and base > 0 and 0 < spread < 1
    guess = forecast(measured, "other", {"b": 2}, 70 * MiB)
    assert guess.basis == "fitted" and guess.spread == spread and "±" in guess.text
    assert forecast(measured[:1], "other", {}, 70 * MiB).text == "unknown"
    two = forecast(measured[:2], "other", {}, 70 * MiB)  # a line through two points: no spread to claim
    assert two.basis == "fitted" and two.spread is None and "±" not in two.text


def test_an_old_history_file_gains_the_forecast_columns(tmp_path) -> None:
    """A database written before forecasts opens as it is: the new columns are added, NULL for old rows."""
    path = tmp_path / "old.sqlite3"
    shutil.copy(Path(__file__).parent.parent / "data" / "history-main-11cf61b.sqlite3", path)
    with History(path) as h:
        records = h.builds()
    assert records and all(r.forecast_bytes is None and r.forecast_error_bytes is None for r in records)
    columns = {row[1] for row in sqlite3.connect(path).execute("PRAGMA table_info(builds)")}
    assert {"model_bytes", "forecast_bytes", "forecast_error_bytes"} <= columns


def test_memory_failures_are_named_only_when_they_are_memory() -> None:
    model = "/m/x.onnx"
    bad_alloc = memory_failure(model, f"{model}: build failed: std::bad_alloc", False, 3 * 1024 * MiB, 4096 * MiB)
    assert bad_alloc == f"{model}: out of memory at 3.0 GiB (limit 4 GiB): build failed: std::bad_alloc"
    no_tactic = f"{model}: build failed: Could not find any implementation for node conv1"
    assert memory_failure(model, no_tactic, False, MiB, None) is None  # no memory warning: not named
    assert memory_failure(model, no_tactic, True, MiB, None).startswith(f"{model}: out of memory at 1.0 MiB: ")
    assert memory_failure(model, f"{model}: cannot parse ONNX: truncated", True, MiB, None) is None


def test_the_headless_line_says_why_a_build_waits() -> None:
    from trt_tui.formats.headless import state_line

    line = state_line("m.onnx", Waiting(1, 0.0, "waiting: needs ~6.1 GiB, 3.2 GiB free"))
    assert line == "[m.onnx] queued: waiting: needs ~6.1 GiB, 3.2 GiB free"


def test_the_forecast_hashes_the_model_only_where_the_history_may_hold_it(tmp_path) -> None:
    """Hashing happens as the build is submitted, before it starts: a model no build of the same size
    and options could be is not read for it, and it still gets the fitted forecast."""
    from trt_tui.core.build.driver import BuildOptions, BuildSpec
    from trt_tui.core.cache.engine_cache import EngineCache
    from trt_tui.core.execution.memory_guard import MemoryGuard
    from trt_tui.core.model.samples import write_samples

    write_samples(tmp_path, ["mnist"])
    model = tmp_path / "mnist.onnx"
    size = model.stat().st_size
    hasher = EngineCache().hasher
    read: list[Path] = []
    real = hasher.hash_and_stamp
    hasher.hash_and_stamp = lambda path: (read.append(path), real(path))[1]  # type: ignore[method-assign]
    with History(tmp_path / "h.sqlite3") as history:
        for i, other in enumerate((size * 2, size * 3)):
            record(history, model=f"/m{i}.onnx", model_hash=f"h{i}", options=BuildOptions().describe(),
                   model_bytes=other, peak_rss_bytes=100_000_000 + other * 10)
        guard = MemoryGuard(history, hasher=hasher)
        spec = BuildSpec(model, tmp_path / "m.engine")
        first = guard.forecast(spec)
        assert first.basis == "fitted" and read == []
        record(history, model=str(model), model_hash=hasher.model_hash(model), options=BuildOptions().describe(),
               model_bytes=size, peak_rss_bytes=123_000_000)
        read.clear()
        again = guard.forecast(spec)
    assert again.basis == "same model" and again.peak_bytes == 123_000_000 and read == [model]
