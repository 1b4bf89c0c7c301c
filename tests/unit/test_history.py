"""Build history: the SQLite store, the scheduler subscriber that fills it, and what it predicts.

The store is exercised across a restart and with two processes writing at once; the recorder with
real mnist builds through the real scheduler; `slow_phases` with phase trees folded from events,
the same way the app folds a running build's; a build's progress and ETA (`build_progress`).
"""

from __future__ import annotations

import sqlite3
import sys
import time
from pathlib import Path

import pytest
from support.events import queued
from support.history import record

from trt_tui.core.build.events import (
    BuildResult,
    Finished,
    Log,
    PhaseFinish,
    PhaseStart,
    Stage,
    State,
    Step,
    Vitals,
)
from trt_tui.core.build.phases import PhaseTree
from trt_tui.core.build.progress import RUNNING_AT_MOST, Progress, build_progress
from trt_tui.core.history import records as history_module
from trt_tui.core.history.estimates import phase_key, slow_phases
from trt_tui.core.history.recorder import HistoryRecorder
from trt_tui.core.history.records import SCHEMA_VERSION, History, HistoryError
from trt_tui.core.history.table import format_history


def tree_of(events) -> PhaseTree:
    tree = PhaseTree()
    tree.extend(events)
    return tree


def synthetic_build(job: int = 1, scale: float = 1.0) -> list:
    """A build shaped like TensorRT's: a root with two children, the second with a child of its own."""
    s = scale
    return [
        Stage(job, 0.0, State.BUILDING),
        PhaseStart(job, 0.1, 0, "Building engine", None, 3),
        PhaseStart(job, 0.1, 1, "Cloning network graph", 0, 2),
        Step(job, 0.2, 1, 0),
        Step(job, 0.3, 1, 1),
        PhaseFinish(job, 0.3, 1),
        Step(job, 0.3, 0, 0),
        PhaseStart(job, 0.3, 2, "Optimizing graph", 0, 1),
        PhaseStart(job, 0.3, 3, "Timing tactics", 2, 4),
        PhaseFinish(job, 0.3 + 2.0 * s, 3),
        PhaseFinish(job, 0.3 + 2.5 * s, 2),
        PhaseFinish(job, 0.4 + 2.5 * s, 0),
        Finished(job, 0.5 + 2.5 * s, BuildResult(State.SUCCEEDED, engine_bytes=1234)),
    ]


# -- the store --------------------------------------------------------------------------------------


def test_history_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "history.sqlite3"  # parent directories are created
    history = History(path)
    assert history.schema_version == SCHEMA_VERSION
    assert history.journal_mode == "wal"
    started = time.time() - 60
    first = record(history, started=started, state=State.FAILED, error="mnist.onnx: build failed: boom",
                   engine_bytes=None, model_hash=None, phases={})
    second = record(history, started=started + 30)
    assert second > first
    history.close()
    history.close()  # twice is fine

    with History(path) as reopened:
        builds = reopened.builds()
        assert [b.id for b in builds] == [second, first]  # newest first
        latest, failed = builds
        assert latest.model == "/models/mnist.onnx" and latest.name == "mnist.onnx"
        assert latest.options == {"opt_level": 3, "workspace": None}
        assert latest.phases == {"Building engine": 2.0, "Building engine/Optimizing graph": 0.5}
        assert (latest.backend, latest.backend_version) == ("tensorrt-rtx", "1.7.1.116")
        assert latest.engine_bytes == 318540
        assert latest.state == "succeeded" and latest.succeeded and latest.error is None
        assert latest.started == pytest.approx(started + 30) and latest.duration == 2.5
        assert failed.state == "failed" and failed.error == "mnist.onnx: build failed: boom"
        assert failed.engine_bytes is None and failed.model_hash is None and failed.phases == {}
        assert reopened.last_success("/models/mnist.onnx") == latest
    with pytest.raises(HistoryError, match="closed"):
        reopened.builds()

    # The file is plain SQLite with the documented schema, for anyone who wants to query it.
    with sqlite3.connect(path) as db:
        columns = [row[1] for row in db.execute("PRAGMA table_info(builds)")]
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert columns == ["id", "model", "model_hash", "options", "backend", "backend_version", "state", "error",
                       "started", "duration", "engine_bytes", "phases", "fingerprint", "peak_rss_bytes",
                       "cpu_seconds", "program", "heap_bytes", "model_bytes", "forecast_bytes",
                       "forecast_error_bytes", "cache", "reason"]


def test_default_path_is_in_the_user_data_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setattr(sys, "platform", "linux")
    expected = tmp_path / "data" / "trt-tui" / "history.sqlite3"
    assert history_module.default_path() == expected
    with History() as history:
        assert history.path == expected
        record(history)
    assert expected.is_file()


def test_an_unusable_file_is_a_history_error(tmp_path: Path) -> None:
    garbage = tmp_path / "history.sqlite3"
    garbage.write_bytes(b"this is not a database, it only has its name" * 100)
    with pytest.raises(HistoryError, match="history.sqlite3: not a trt-tui build history"):
        History(garbage)
    (tmp_path / "file").write_text("")
    with pytest.raises(HistoryError, match="cannot open build history"):
        History(tmp_path / "file" / "history.sqlite3")  # its parent is a file


def test_model_filter_matches_the_absolute_path_else_the_file_name(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a").mkdir()
    with History(tmp_path / "h.sqlite3") as history:
        t = time.time()
        here = record(history, model="a/mnist.onnx", started=t)  # relative: stored absolute
        there = record(history, model="/elsewhere/mnist.onnx", started=t + 1)
        other = record(history, model="/elsewhere/resnet50.onnx", started=t + 2)
        record(history, model="/elsewhere/not_mnist.onnx", started=t + 3)
        assert history.builds()[0].model == "/elsewhere/not_mnist.onnx"
        assert [b.id for b in history.builds("a/mnist.onnx")] == [here]
        assert [b.id for b in history.builds(tmp_path / "a" / "mnist.onnx")] == [here]
        assert [b.id for b in history.builds("/elsewhere/mnist.onnx")] == [there]
        # No build has this path: every model of that file name, and only exactly that name.
        assert [b.id for b in history.builds("mnist.onnx")] == [there, here]
        assert [b.id for b in history.builds("/new/place/mnist.onnx")] == [there, here]
        assert [b.id for b in history.builds("resnet50.onnx")] == [other]
        assert history.builds("densenet.onnx") == []
        assert len(history.builds(limit=2)) == 2
        assert history.last_success("densenet.onnx") is None
        assert history.expected_phases("densenet.onnx") is None


def test_expected_phases_is_the_median_of_the_last_five_successes(tmp_path: Path) -> None:
    with History(tmp_path / "h.sqlite3") as history:
        t = time.time()
        # Old builds that must not count: older than the last five successes.
        for i in range(3):
            record(history, started=t + i, phases={"Building engine": 100.0})
        seconds = [4.0, 1.0, 3.0, 5.0, 2.0]
        for i, s in enumerate(seconds):
            phases = {"Building engine": s, "Building engine/Optimizing graph": s / 2}
            if i == 0:
                phases["Building engine/Rare phase"] = 7.0
            record(history, started=t + 10 + i, phases=phases)
            # Failures and cancels in between are not predictions of a successful build.
            record(history, started=t + 10.5 + i, state="failed", error="x",
                   phases={"Building engine": 999.0})
            record(history, started=t + 10.6 + i, state="cancelled", phases={"Building engine": 0.01})
        expected = history.expected_phases("/models/mnist.onnx")
        assert expected == {"Building engine": 3.0, "Building engine/Optimizing graph": 1.5,
                            "Building engine/Rare phase": 7.0}
        assert history.expected_phases("mnist.onnx") == expected  # by file name too
        assert history.last_success("mnist.onnx").phases["Building engine"] == 2.0


# -- predictions --------------------------------------------------------------------------------------


def test_progress_goes_by_time_and_never_claims_eta_0_while_running() -> None:
    """By time where the history expects a duration (the phase fraction is ignored then); by the
    phases without one, with no time left claimed; overdue past the expectation, never "ETA 0.0s"."""
    assert build_progress(2.0, 30.0, 0.77) == Progress(pytest.approx(2 / 30), pytest.approx(28.0))
    assert build_progress(2.0, 30.0, 0.77).eta_text() == "ETA 28.0s"
    assert build_progress(2.0, None, 0.77) == Progress(0.77, None)
    assert build_progress(2.0, None, 0.77).eta_text() is None
    late = build_progress(31.0, 30.0, 1.0)
    assert late.fraction == RUNNING_AT_MOST and late.overdue and late.eta_text() == "overdue +1.0s"
    assert build_progress(29.99, 30.0, 0.5).eta_text() == "overdue +0.0s"  # not "ETA 0.0s"
    assert build_progress(1.0, None, 1.0).fraction == RUNNING_AT_MOST  # a running build is never done
    assert build_progress(1.0, 2.0, 0.0).eta_text(from_older_model=True) == "ETA 1.0s (from an older model)"


def test_slow_phases_flags_a_phase_three_times_slower() -> None:
    expected = tree_of(synthetic_build(scale=1.0)).durations()
    slow = tree_of(synthetic_build(scale=3.0))
    names = {phase.id: phase.name for _, phase in slow.walk()}
    now = slow.last_t
    hints = slow_phases(expected, slow, now)
    assert {names[pid] for pid in hints} == {"Timing tactics", "Optimizing graph", "Building engine"}
    assert hints[3] == "3.0× slower than last time"  # Timing tactics: 6 s against 2 s
    assert hints[2] == "3.0× slower than last time"  # Optimizing graph: 7.5 s against 2.5 s
    assert hints[0] == f"{7.8 / 2.8:.1f}× slower than last time"
    assert 1 not in hints  # Cloning network graph took as long as before
    assert slow_phases(expected, tree_of(synthetic_build(scale=1.5)), now) == {}  # 1.5x: under the factor
    assert slow_phases(expected, slow, now, factor=4.0) == {}
    # Fast phases do not raise alarms over noise: 3x slower but not `min_seconds` more.
    tenth = {k: v / 10 for k, v in expected.items()}
    assert slow_phases(tenth, tree_of(synthetic_build(scale=0.3)), now) == {}
    assert slow_phases({}, slow, now) == {}
    # A phase that used to take no measurable time: no ratio to give, still slower.
    assert slow_phases({"Building engine": 0.0}, slow, now) == {0: "slower than last time"}


def test_slow_phases_flags_a_running_phase_as_it_overruns() -> None:
    expected = tree_of(synthetic_build()).durations()
    tree = tree_of(synthetic_build(scale=3.0)[:9])  # Timing tactics started at 0.3 and is still running
    running = tree.phases[3]
    assert running.active and phase_key(tree, running) == "Building engine/Optimizing graph/Timing tactics"
    assert 3 not in slow_phases(expected, tree, 0.3 + 3.0)  # 3 s against 2 s: not yet twice
    assert slow_phases(expected, tree, 0.3 + 5.0)[3] == "2.5× slower than last time"


# -- the recorder, with real builds -----------------------------------------------------------------


def test_recorder_never_raises_and_reports_once(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    history = History(tmp_path / "h.sqlite3")
    recorder = HistoryRecorder(history, backend_info=lambda build: ("tensorrt-rtx", "1.7"))
    recorder(1, [queued(1, tmp_path / "m.onnx"), *synthetic_build(1)])
    (rec,) = history.builds()
    assert rec.phases == pytest.approx(tree_of(synthetic_build()).durations())
    assert rec.duration == pytest.approx(3.0) and rec.engine_bytes == 1234 and rec.backend_version == "1.7"
    assert recorder.errors == 0
    history.close()
    for i in (2, 3):
        recorder(i, [queued(i, tmp_path / "m.onnx"), *synthetic_build(i)])  # the store is gone: no exception
    recorder(4, [Log(4, 0.0, 3, "noise"), "not an event"])
    assert recorder.errors >= 2
    err = capsys.readouterr().err
    assert err.count("trt-tui: build history") == 1 and "closed" in err


def test_format_history_is_a_plain_aligned_table() -> None:
    t = time.mktime((2026, 5, 9, 14, 30, 0, 0, 0, -1))
    rows = [
        history_module.BuildRecord(1, "/m/mnist.onnx", None, {}, "tensorrt-rtx", "1.7.1.116", "succeeded",
                                   None, t, 2.345, 318540, {}, peak_rss_bytes=200 * 1024**2, cpu_seconds=3.5),
        history_module.BuildRecord(2, "/m/densenet.onnx", None, {}, "tensorrt", "10.9", "failed", "boom",
                                   t + 60, 125.0, None, {}),
        history_module.BuildRecord(3, "/m/resnet50.onnx", None, {}, "", "", "cancelled", None,
                                   t + 120, 0.0, 3 * 1024**3, {}),
    ]
    lines = format_history(rows)
    assert len(lines) == 4
    assert lines[0].split() == ["ID", "DATE", "MODEL", "STATE", "DURATION", "ENGINE", "PEAK", "RSS", "CPU", "BACKEND"]
    lines[1:] = lines[:0:-1]  # newest id first: put them back in the order given
    assert lines[1].split() == ["1", "2026-05-09", "14:30:00", "mnist.onnx", "succeeded", "2.3s", "311.1", "KiB",
                                "200.0", "MiB", "3.5s", "tensorrt-rtx", "1.7.1.116"]
    assert lines[2].split() == ["2", "2026-05-09", "14:31:00", "densenet.onnx", "failed", "2m05s", "-", "-", "-",
                                "tensorrt", "10.9"]
    assert lines[3].split()[-5:] == ["3.0", "GiB", "-", "-", "-"]
    # Columns line up: each header starts where its column does.
    model_col = lines[0].index("MODEL")
    assert all(line[model_col:].startswith(name) for line, name in
               zip(lines[1:], ("mnist.onnx", "densenet.onnx", "resnet50.onnx")))
    assert format_history([]) == []


def test_vitals_columns_are_added_to_an_older_file_and_filled_by_the_recorder(tmp_path: Path) -> None:
    """A version-1 file without the vitals columns gains them on open (rows kept); the recorder fills
    them from the final state's peak RSS and the last vitals' CPU time."""
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as db:
        db.executescript(history_module._MIGRATIONS[0])
        db.execute("PRAGMA user_version = 1")
        db.execute("INSERT INTO builds (model, options, backend, backend_version, state, started, duration, phases)"
                   " VALUES ('/m/old.onnx', '{}', 'x', '1', 'succeeded', 1.0, 2.0, '{}')")
    db.close()
    with History(path) as history:
        (old,) = history.builds()
        assert old.name == "old.onnx" and old.peak_rss_bytes is None and old.cpu_seconds is None
        recorder = HistoryRecorder(history, backend_info=lambda build: ("tensorrt-rtx", "1.7"))
        recorder(7, [queued(7, Path("/m/new.onnx")), Stage(7, 0.0, State.BUILDING),
                       Vitals(7, 1.0, 123, 180.0, 300 << 20, 310 << 20, 9, "working", cpu_seconds=1.8)])
        recorder(7, [Finished(7, 2.0, BuildResult(State.SUCCEEDED, engine_bytes=10, peak_rss_bytes=320 << 20))])
        new = history.builds("/m/new.onnx")[0]
        assert (new.peak_rss_bytes, new.cpu_seconds) == (320 << 20, 1.8)
    with History(path) as again:  # opening twice adds nothing twice
        assert len(again.builds()) == 2
