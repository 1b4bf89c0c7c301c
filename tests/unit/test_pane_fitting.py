"""What decides the panes' cells and the view kept between runs, as pure functions: sizes in three
figures, which build columns fit a width, the model list's widths, and reading a view file."""

from __future__ import annotations

import json

import pytest

from trt_tui.core.files.units import compact_bytes
from trt_tui.ui import view_prefs
from trt_tui.ui.widgets.columns import BUILD_COLUMNS, fit_columns, line_width
from trt_tui.ui.widgets.columns.sizes import PeakColumn
from trt_tui.ui.widgets.model_picker import fit_widths


@pytest.mark.parametrize("n, text", [(None, "-"), (512, "512 B"), (318_540, "311 KiB"), (102_471_489, "97.7 MiB"),
                                     (1_071_644_672, "1022 MiB"), (3 * 2**30 // 2, "1.5 GiB")])
def test_sizes_take_three_figures_and_fit_the_peak_column_with_a_forecast_mark(n, text):
    assert compact_bytes(n) == text
    assert len("~" + text) <= (PeakColumn.width or 0)


def test_a_long_model_name_is_cut_rather_than_push_the_figures_off():
    widths = {column: column.header_width for column in BUILD_COLUMNS}
    model = next(column for column in BUILD_COLUMNS if column.name == "Model")
    widths[model] = 70  # a path another program gave
    shown, fitted = fit_columns(BUILD_COLUMNS, widths, 110)
    assert [column.name for column in shown][-1] == "Backend", [column.name for column in shown]
    assert line_width(fitted, shown) <= 110 and fitted[model] < 70


def test_the_model_list_cuts_its_inputs_then_the_name_then_leaves_the_inputs_out():
    rows = [[13, 8, 18, 9]]
    assert fit_widths(rows, 80) == [13, 8, 18, 10]
    assert fit_widths(rows, 54) == [13, 8, 15, 10]  # 8 cells of padding
    assert fit_widths(rows, 40) == [8, 8, 6, 10]
    assert fit_widths(rows, 37) == [13, 8, None, 10]


def test_a_view_file_of_another_kind_is_one_line_and_the_defaults(tmp_path):
    path = tmp_path / "view.json"
    assert view_prefs.load(path) == (view_prefs.ViewPrefs(), None)  # none yet: no line
    for text in ("[1, 2]", "{", "\xff\xfe"):
        path.write_bytes(text.encode("latin-1"))
        prefs, line = view_prefs.load(path)
        assert prefs == view_prefs.ViewPrefs() and line == f"{path}: not a view trt-tui wrote; the view starts" \
            " as it does by default"
    path.unlink()
    path.mkdir()
    prefs, line = view_prefs.load(path)
    assert prefs == view_prefs.ViewPrefs() and line is not None and line.startswith(f"{path}: ") and "\n" not in line
    saved = tmp_path / "state" / "trt-tui" / "view.json"
    view_prefs.save(saved, view_prefs.ViewPrefs(sort="Peak", theme="trt-light"))
    assert json.loads(saved.read_text())["sort"] == "Peak" and view_prefs.load(saved)[0].theme == "trt-light"


def test_the_view_file_is_in_the_users_state_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert view_prefs.default_path() == tmp_path / "trt-tui" / "view.json"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert view_prefs.default_path() == tmp_path / "home" / ".local" / "state" / "trt-tui" / "view.json"
