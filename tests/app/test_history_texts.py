"""What the history screen (`h`) and a comparison of two builds (`trt-tui history diff`, the app's
diff panel) say, read as a user reads them: counts and ranges in plain words, duration bars scaled
from 0, why each build was made, and only the phase timings worth comparing (#46, items 12 and 15)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from support.app import drawn
from support.commands import run_cli
from support.waiting import pilot_wait
from textual.widgets import DataTable, Static

from trt_tui.core.execution.session_settings import SessionSettings
from trt_tui.core.history.records import History
from trt_tui.core.model.samples import write_samples
from trt_tui.ui.app import AppConfig, TrtTuiApp
from trt_tui.ui.history_screen import DurationBars, HistoryScreen

SIZE = (160, 48)


def mnist_in(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (model,) = write_samples(directory, ["mnist"])
    return model.resolve()


def add(history: Path, model: Path, *, state: str = "succeeded", seconds: float = 1.0, phases=None, **fields) -> int:
    """A build of `model`, as the recorder records one (newer each call)."""
    with History(history) as h:
        return h.record(model=model, model_hash=None, options={}, backend="tensorrt-rtx", backend_version="1.7",
                        state=state, error=None, started=time.time(), duration=seconds, engine_bytes=1000,
                        phases=phases or {"Building engine": seconds}, **fields)


async def history_screen(app: TrtTuiApp, pilot) -> HistoryScreen:
    await pilot.press("h")
    await pilot_wait(pilot, lambda: isinstance(app.screen, HistoryScreen))
    screen = app.screen
    assert isinstance(screen, HistoryScreen)
    await pilot_wait(pilot, lambda: screen.query_one(DataTable).row_count == len(screen.records))
    await pilot.pause(0.1)
    return screen


def app_on(model: Path, history: Path) -> TrtTuiApp:
    return TrtTuiApp(AppConfig(paths=[str(model.parent)], session=SessionSettings(history=str(history), cache=False)))


async def test_one_build_reads_as_one_and_its_duration_is_not_a_range(tmp_path) -> None:
    model = mnist_in(tmp_path / "m")
    history = tmp_path / "history.sqlite3"
    add(history, model, seconds=4.8, reason="no engine yet")
    app = app_on(model, history)
    async with app.run_test(size=SIZE) as pilot:
        screen = await history_screen(app, pilot)
        title = str(screen.query_one("#history-title", Static).render())
        assert title.endswith("mnist.onnx · 1 build · the successful build took 4.8s"), title
        bars = [line for line in drawn(screen.query_one(DurationBars))]
        assert [line.strip() for line in bars] == ["█", "█", "█"], bars  # one column, not a solid block
        await pilot.press("escape")


async def test_bars_start_at_0_and_why_it_built_is_the_recorded_reason(tmp_path) -> None:
    """19.6 s beside 22.2 s: two tall bars, not empty beside full. A build another program made
    (`trt-tui run`) was observed, not explained; one whose reason was recorded shows it."""
    model = mnist_in(tmp_path / "m")
    history = tmp_path / "history.sqlite3"
    add(history, model, seconds=5.0, program="build.py")
    add(history, model, seconds=19.6, reason="no engine yet")
    add(history, model, seconds=22.2, reason="options changed (--opt-level 3 → 4)")
    app = app_on(model, history)
    async with app.run_test(size=SIZE) as pilot:
        screen = await history_screen(app, pilot)
        title = str(screen.query_one("#history-title", Static).render())
        assert title.endswith("· 3 builds · successful builds took 5.0s to 22.2s"), title
        bars = drawn(screen.query_one(DurationBars))
        columns = ["".join(line[i] if i < len(line) else " " for line in bars) for i in range(3)]
        # Top row first: 22.2 s is 24 eighths of the 3 rows, 19.6 s 21 of them, 5 s 5.
        assert columns == ["  ▅", "▅██", "███"], columns
        table = screen.query_one(DataTable)
        why = [str(table.get_row_at(i)[7]) for i in range(table.row_count)]  # newest first
        assert why[0] == "options changed (--opt-level 3 → 4)"
        assert why[1] == "no engine yet", why
        assert why[2].startswith("observed from a program (run: build.py)"), why
        await pilot.press("escape")


def diff_lines(capsys, history: Path, a: int, b: int) -> list[str]:
    code, out, err = run_cli(capsys, "history", "diff", str(a), str(b), "--history", history)
    assert code == 0, err
    return out.splitlines()


def test_diff_hides_phases_too_short_to_compare_and_marks_a_build_that_did_not_finish(tmp_path, capsys) -> None:
    model = mnist_in(tmp_path / "m")
    history = tmp_path / "history.sqlite3"
    phases = {"Building engine": 2.0, "Building engine/Tactics": 1.5, "Building engine/Tiny": 0.0001,
              "Building engine/Small": 0.002}
    first = add(history, model, seconds=2.0, phases=phases)
    second = add(history, model, seconds=2.2, phases={**phases, "Building engine": 2.2, "Building engine/Tactics": 1.6,
                                                       "Building engine/Tiny": 0.0003, "Building engine/Small": 0.001})
    lines = diff_lines(capsys, history, first, second)
    text = "\n".join(lines)
    assert "Tiny" not in text and "Small" not in text, text  # "0.000s → 0.000s 3.00×" is noise
    assert "  (2 phases under 10 ms in both builds not shown)" in lines, text
    assert ["2.000s", "→", "2.200s", "1.10×", "Building", "engine"] in [line.split() for line in lines], text
    assert "fingerprint: no fingerprint for either build (recorded without one): nothing to compare" in lines, text
    assert "difference" not in text, "a missing fingerprint is no difference"

    cancelled = add(history, model, state="cancelled", seconds=0.4,
                    phases={"Building engine": 0.35, "Building engine/Tactics": 0.3})
    lines = diff_lines(capsys, history, second, cancelled)
    text = "\n".join(lines)
    assert "×" not in text.replace("before → after, ×, phase", ""), "no speed ratio against a stopped build"
    assert "  ✗ build B cancelled: its phases stopped part of the way, no speed ratio" in lines, text
    compared = [line.split() for line in lines if "→" in line and "Building engine" in line]
    assert compared and all(words[3] == "✗" for words in compared), text


async def test_the_apps_diff_panel_says_the_same(tmp_path, capsys) -> None:
    from trt_tui.ui.widgets.diff_panel import DiffPanel

    model = mnist_in(tmp_path / "m")
    history = tmp_path / "history.sqlite3"
    add(history, model, seconds=2.0, phases={"Building engine": 2.0, "Building engine/Tiny": 0.0001})
    add(history, model, seconds=2.2, phases={"Building engine": 2.2, "Building engine/Tiny": 0.0003})
    app = app_on(model, history)
    async with app.run_test(size=SIZE) as pilot:
        screen = await history_screen(app, pilot)
        await pilot.press("space", "d")
        await pilot_wait(pilot, lambda: isinstance(app.screen, DiffPanel))
        lines = app.screen.lines
        assert "  (1 phase under 10 ms in both builds not shown)" in lines, lines
        assert not any("Tiny" in line for line in lines), lines
        await pilot.press("escape")
        await pilot_wait(pilot, lambda: app.screen is screen)


def test_the_reason_a_build_was_made_is_kept_in_the_history(tmp_path, capsys) -> None:
    """A real build through the CLI: the engine cache's reason is recorded, and `history --json` says it."""
    model = mnist_in(tmp_path / "m")
    history = tmp_path / "history.sqlite3"
    for extra in ([], ["--force"]):
        code, _, err = run_cli(capsys, "build", model, "--history", history, "--json", *extra)
        assert code == 0, err
    code, out, _ = run_cli(capsys, "history", "--history", history, "--json")
    assert code == 0
    assert [json.loads(line)["reason"] for line in out.splitlines()] == ["--force", "no engine yet"]
