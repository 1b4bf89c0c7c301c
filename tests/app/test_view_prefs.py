"""The view as the user left it comes back at the next start (btop and lazygit keep theirs): the builds
list's sort and hidden skipped builds, the log's level, the theme picked; a broken file is one line
and the defaults. Two real runs of the app with its pilot, one after the other, on one state file."""

from __future__ import annotations

import json

from support.app import SIZE, make
from support.waiting import pilot_wait

from trt_tui.core.build.events import Severity
from trt_tui.ui import view_prefs


async def test_the_sort_hidden_skipped_log_level_and_theme_are_back_after_a_restart(models, tmp_path):
    kept = tmp_path / "state" / "trt-tui" / "view.json"
    app = make(models, view_file=kept, history=str(tmp_path / "h.sqlite3"))
    async with app.run_test(size=SIZE) as pilot:
        assert app.builds.sort_column is None and app.log_pane.min_severity is Severity.INFO
        await pilot.press("o", "o", "O", "H", "l")  # by State, reversed; skipped hidden; verbose
        app.theme = "trt-light"  # as the palette's theme picker sets it
        assert app.builds.order_text == "by State ↓ · skipped hidden"
        await pilot.press("q")
        await pilot_wait(pilot, lambda: app.return_code is not None, 20)
    assert json.loads(kept.read_text()) == {"sort": "State", "sort_reverse": True, "hide_skipped": True,
                                            "log_level": "verbose", "theme": "trt-light"}
    again = make(models, view_file=kept, history=str(tmp_path / "h.sqlite3"))
    async with again.run_test(size=SIZE) as pilot:
        assert again.builds.order_text == "by State ↓ · skipped hidden"
        assert again.log_pane.min_severity is Severity.VERBOSE and again.theme == "trt-light"
        assert "level verbose" in str(again.query_one("#log-title").render())
        await pilot.press("q")
    given = make(models, view_file=kept, log_level="error", theme="trt-dark")  # the command line's win
    async with given.run_test(size=SIZE) as pilot:
        assert given.log_pane.min_severity is Severity.ERROR and given.theme == "trt-dark"
        await pilot.press("q")


async def test_a_broken_view_file_is_one_line_and_the_defaults(models, tmp_path):
    kept = tmp_path / "view.json"
    kept.write_text('{"sort": "State", "hide_skipped": tru')
    app = make(models, view_file=kept)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        assert app.builds.order_text is None and app.log_pane.min_severity is Severity.INFO
        await pilot_wait(pilot, lambda: app.screen.query("Toast"), 5)
        toast = str(app.screen.query_one("Toast").render())
        assert f"{kept}: not a view trt-tui wrote" in toast and "\n" not in toast.strip(), toast
        await pilot.press("q")
    kept.write_text(json.dumps({"sort": 5, "hide_skipped": True, "log_level": "loud", "theme": "no-such-theme"}))
    assert view_prefs.load(kept) == (view_prefs.ViewPrefs(hide_skipped=True, log_level="loud", theme="no-such-theme"), None)
    app = make(models, view_file=kept)
    async with app.run_test(size=SIZE) as pilot:  # the values of the wrong kind or unknown: left out
        assert app.builds.order_text == "skipped hidden" and app.log_pane.min_severity is Severity.INFO
        assert app.theme == "trt-dark"
        await pilot.press("q")
