"""What the screen shows of a build, as the pure functions of `ui/build_view.py` and the widgets' texts
(`ui/widgets/phase_row.py`, `ui/widgets/palette.py`) compute it."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.events import tree_of
from textual.app import App

from trt_tui.core.build.driver import BuildSpec
from trt_tui.core.build.events import (
    BuildResult,
    Finished,
    PhaseFinish,
    PhaseStart,
    Queued,
    Started,
    State,
    Step,
)
from trt_tui.core.build.phases import PhaseTree
from trt_tui.ui.build_view import BuildView, build_title
from trt_tui.ui.builds_title import batch_progress
from trt_tui.ui.themes import load_themes
from trt_tui.ui.widgets.columns import backend_label
from trt_tui.ui.widgets.palette import PLAIN, ROLES, Palette, progress_text
from trt_tui.ui.widgets.phase_row import BAR, MARK, Columns, columns_for, phase_row


@pytest.fixture
def phases() -> PhaseTree:
    """A running parent, a finished child, a child finished early, and a running leaf."""
    return tree_of(
        PhaseStart(1, 0.0, 1, "Building engine", None, 6),
        Step(1, 0.1, 1, 3),
        PhaseStart(1, 0.1, 2, "Optimizing graph", 1, 30),
        Step(1, 0.2, 2, 29),
        PhaseFinish(1, 0.3, 2),
        PhaseStart(1, 0.3, 3, "Timing tactics", 1, 3),
        Step(1, 0.4, 3, 1),
        PhaseFinish(1, 0.5, 3),
        PhaseStart(1, 0.5, 4, "Determining refit engines", 1, 1),
    )


def test_row_reads_name_first_then_bar_count_and_time_at_the_right(phases):
    row = phase_row(phases.phases[1], 1.0, 80).plain
    assert row.startswith("▸ Building engine")
    assert row.rstrip().endswith("4/6      1.00s")
    assert "█" in row and row.index("█") > row.index("Building engine")
    assert len(row) == 80


def test_rows_of_different_names_line_their_columns_up(phases):
    rows = [phase_row(phases.phases[i], 1.0, 72).plain for i in (1, 2, 3, 4)]
    assert {len(r) for r in rows} == {72}
    bars = {r.index("█") if "█" in r else r.index("░") for r in rows}
    assert len(bars) == 1, rows


def test_only_running_and_stopped_phases_have_a_marker(phases):
    marks = {i: phase_row(phases.phases[i], 1.0, 80).plain[:MARK] for i in (1, 2, 3, 4)}
    assert marks == {1: "▸ ", 2: "  ", 3: "  ", 4: "▸ "}
    stopped = phase_row(phases.phases[4], 1.0, 80, stopped=True).plain
    assert stopped.startswith("✗ Determining refit engines  stopped here")
    assert "finished early" in phase_row(phases.phases[3], 1.0, 80).plain


def test_a_narrow_row_drops_the_bar_then_the_count_before_the_name(phases):
    refit = phases.phases[4]
    name = "Determining refit engines"
    wide = phase_row(refit, 1.0, 70).plain
    assert name in wide and "░" in wide and "0/1" in wide
    no_bar = phase_row(refit, 1.0, 50).plain
    assert name in no_bar and "░" not in no_bar and "0/1" in no_bar
    no_count = phase_row(refit, 1.0, 36).plain
    assert name in no_count and "0/1" not in no_count and no_count.rstrip().endswith("0.50s")
    no_time = phase_row(refit, 1.0, 30).plain
    assert name in no_time and "0.50s" not in no_time
    cut = phase_row(refit, 1.0, 20).plain
    assert cut.startswith("▸ Determining refit…"), "the name is cut last"
    for width in (70, 50, 36, 30):
        assert len(phase_row(refit, 1.0, width).plain) == width


def test_notes_are_cut_before_the_name(phases):
    verdict = ("stalled", "CPU 0%, no callback for 1m05s")
    row = phase_row(phases.phases[4], 1.0, 60, vitals=verdict).plain
    assert "Determining refit engines" in row and len(row) == 60
    full = phase_row(phases.phases[4], 1.0, 140, vitals=verdict).plain
    assert "stalled CPU 0%, no callback for 1m05s" in full


def test_palette_comes_from_the_theme_variables():
    variables = {"background": "#000000", "state-failed": "#ff0000", "error": "#00ff00",
                 "success": "#0000ff", "foreground-muted": "#808080"}
    palette = Palette.from_variables(variables)
    assert palette.state(State.FAILED) == "bold #FF0000", "the theme's own state colour wins"
    assert palette.state(State.SUCCEEDED) == "bold #0000FF", "a theme without one falls back to success"
    assert palette.verdict("stalled") == "bold #00FF00"
    assert palette.verdict("nonsense") == ""


@pytest.mark.parametrize("theme", [t.name for t in load_themes() if t.name.startswith("trt-")])
def test_each_builtin_theme_sets_every_state_colour(theme):
    themes = {t.name: t for t in load_themes()}
    app = App()
    app.register_theme(themes[theme])
    app.theme = theme
    variables = app.get_css_variables()
    missing = [name for name, _ in ROLES.values() if name.startswith(("state-", "verdict-")) and name not in variables]
    assert not missing, f"{theme} lacks {missing}"
    palette = Palette.from_variables(variables)
    assert len({palette.state(s) for s in (State.FAILED, State.SUCCEEDED, State.CANCELLED, State.BUILDING)}) == 4


def test_title_progress_and_backend():
    spec = BuildSpec(Path("/m/resnet50.onnx"), Path("/m/resnet50.engine"))
    view = BuildView.of(3, clock=lambda: 0.0, name="resnet50.onnx")
    for event in [Queued(3, 0.0, spec.summary(), at=100.0),
                  Started(3, 0.0, State.BUILDING, backend="tensorrt-rtx 1.7.1", at=101.0),
                  PhaseStart(3, 0.0, 1, "Building engine", None, 4), Step(3, 2.5, 1, 1)]:
        view.apply(event)
    assert view.model == Path("/m/resnet50.onnx") and view.output == Path("/m/resnet50.engine")
    assert build_title(view).plain == "#3 resnet50.onnx building · 2.5s · tensorrt-rtx 1.7.1"
    view.apply(Finished(3, 3.0, BuildResult(State.CANCELLED, detail="cancelled in Building engine"), at=104.0))
    assert build_title(view, PLAIN).plain.endswith("· cancelled in Building engine")
    assert view.fraction() == pytest.approx(0.5)
    bar = progress_text(0.5, width=10).plain
    assert bar == "█████░░░░░  50%"
    assert backend_label(None) == "auto"
    assert backend_label("tensorrt-rtx 1.7.1.116") == "RTX 1.7.1.116"
    assert backend_label("tensorrt 10.3.0") == "TRT 10.3.0"
    assert BAR > 0


def test_a_tree_drops_a_column_for_all_rows_so_they_stay_aligned(phases):
    rows = [(60, "Building engine"), (58, "Determining refit engines")]
    assert columns_for(rows) == Columns(bar=True, count=True, time=True)
    assert columns_for(rows + [(40, "Computing reformatting costs")]) == Columns(bar=False, count=False, time=True)
    chosen = columns_for([(40, "Computing reformatting costs"), (44, "Building engine")])
    short = phase_row(phases.phases[1], 1.0, 44, columns=chosen).plain
    assert "█" not in short and "4/6" not in short, "a short name follows the tree's choice"


def test_build_all_progress_and_eta_go_by_time_and_never_say_0_while_a_build_runs():
    """Three builds of a batch: one done, one 2 s into an expected 10 s (TensorRT's steps at 75%), one
    queued and expected to take 4 s; then the running one overruns its estimate."""
    now = [0.0]

    def view(job: int, expected: float | None) -> BuildView:
        made = BuildView.of(job, clock=lambda: now[0], name=f"m{job}.onnx", expected_seconds=expected)
        made.apply(Queued(job, 0.0, BuildSpec(Path(f"/m/m{job}.onnx"), Path(f"/m/m{job}.engine")).summary(), at=1.0))
        return made

    done, running, queued = view(1, 3.0), view(2, 10.0), view(3, 4.0)
    done.apply(Started(1, 0.0, State.BUILDING, at=1.0))
    done.apply(Finished(1, 3.0, BuildResult(State.SUCCEEDED), at=4.0))
    for event in [Started(2, 0.0, State.BUILDING, at=4.0), PhaseStart(2, 0.0, 1, "Building engine", None, 4),
                  Step(2, 2.0, 1, 2)]:
        running.apply(event)
    running.last_event_at = now[0]
    assert running.tree.overall_fraction() == 0.75
    text = batch_progress([done, running, queued], max_jobs=1)
    assert text == "build all: 1/3 done · 40% · ETA 12.0s", text  # (1 + 0.2 + 0) / 3; 8 s + 4 s left
    now[0] = 9.0  # 11 s into the expected 10 s
    text = batch_progress([done, running, queued], max_jobs=1)
    assert text.startswith("build all: 1/3 done · 66%") and text.endswith(" · #2 overdue"), text
    assert "ETA" not in text
