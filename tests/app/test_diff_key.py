"""The app's `D`: the diff against the previous build, through the pilot.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.commands import build_json

from trt_tui.core.model.samples import write_samples


@pytest.fixture
def mnist(tmp_path: Path) -> Path:
    (model,) = write_samples(tmp_path, ["mnist"])
    return model


async def test_app_key_shows_the_diff_against_the_previous_build(mnist, tmp_path, capsys):
    """D on a finished build opens the same diff as `history diff`, against the model's previous build."""
    from trt_tui.core.execution.session_settings import SessionSettings
    from trt_tui.ui.app import AppConfig, TrtTuiApp
    from trt_tui.ui.widgets.diff_panel import DiffPanel

    history = tmp_path / "history.sqlite3"
    build_json(capsys, mnist, history, "--opt-level", "3")
    app = TrtTuiApp(AppConfig(paths=[str(mnist)], session=SessionSettings(history=str(history), executor="thread")))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("D")
        await pilot.pause()
        assert not isinstance(app.screen, DiffPanel)  # nothing selected yet
        await pilot.press("enter")  # default options: the engine is stale
        for _ in range(400):
            await pilot.pause(0.05)
            if app.selected is not None and app.views[app.selected].state.final:
                break
        view = app.views[app.selected]
        assert view.state.value == "succeeded" and view.reason == "options changed (--opt-level 3 → default)"
        await pilot.press("D")
        await pilot.pause()
        panel = app.screen
        assert isinstance(panel, DiffPanel)
        text = "\n".join(panel.lines)
        assert "why it built: options changed (--opt-level 3 → default)" in text
        assert "  option: --opt-level 3 → default" in text and "phases (by change in time)" in text
        assert str(panel.query_one("#diff-text").render()).count("\n") >= 4
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, DiffPanel)
