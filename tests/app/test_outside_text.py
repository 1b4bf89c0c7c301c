"""Text from outside shows as text: a file name, a model's own metadata and what another program
reports are shown with their control characters escaped (`\\x1b`), and markup in them is never read
(no click action, no bold). The real app through its pilot; real ONNX files; a real client of the
collector's socket. What reaches the terminal itself is `tests/integration/test_terminal.py`'s."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import onnx
from onnx import TensorProto, helper
from support.waiting import pilot_wait

from trt_tui.core.execution.session_settings import SessionSettings
from trt_tui.ui.app import AppConfig, TrtTuiApp

SIZE = (160, 48)
MARKUP_NAME = "[@click=app.quit]x[b]y.onnx"
FLOOD = Path(__file__).parent.parent / "programs" / "collector_flood.py"


def make(models: Path, tmp_path: Path) -> TrtTuiApp:
    return TrtTuiApp(AppConfig(paths=[str(models)],
                               session=SessionSettings(history=str(tmp_path / "h.sqlite3"), executor="thread")))


def segments(widget, y: int) -> list:
    return list(widget.render_line(y))


def drawn(widget) -> str:
    return "\n".join(widget.render_line(y).text.rstrip() for y in range(widget.size.height))


async def test_a_file_name_with_markup_shows_as_it_is_named(models_src, tmp_path):
    """`[@click=app.quit]x[b]y.onnx` is listed by that name: not `xy.onnx`, no part of it bold, no
    click action on it (a click on it would have quit the app)."""
    folder = tmp_path / "models"
    folder.mkdir()
    shutil.copy(models_src / "mnist.onnx", folder / MARKUP_NAME)
    app = make(folder, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot_wait(pilot, lambda: app.picker.row_count == 1 and "KiB" in drawn(app.picker), timeout=30)
        row = segments(app.picker, 1)  # under the header
        text = "".join(segment.text for segment in row)
        assert MARKUP_NAME in text, text
        named = [s for s in row if s.text.strip() and s.text.strip() in MARKUP_NAME]
        assert len(named) == 1, named  # in one style: no part of it made bold
        assert not any(s.style is not None and "@click" in s.style.meta for s in row), row
        await pilot_wait(pilot, lambda: "nodes" in drawn(app.details), timeout=30)
        assert MARKUP_NAME in drawn(app.details)


def hostile_model(path: Path) -> None:
    """A valid ONNX model whose producer and tensor names carry escape sequences and markup."""
    x = helper.make_tensor_value_info("in\x1b]0;evil\x07[b]put", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("out[@click=app.quit]q", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", [x.name], [y.name])], "g", [x], [y])
    model = helper.make_model(graph, producer_name="maker\x1b[2J\x1b]52;c;cm0gLXJmIH4K\x07",
                              opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, path)


async def test_a_models_own_metadata_shows_escaped(tmp_path):
    """The producer and the inputs' and outputs' names a model carries show in the details and the
    list as text, `\\x1b` where the escape was, markup as typed."""
    folder = tmp_path / "models"
    folder.mkdir()
    hostile_model(folder / "m.onnx")
    app = make(folder, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot_wait(pilot, lambda: "maker" in drawn(app.details), timeout=30)
        details, picker = drawn(app.details), drawn(app.picker)
        assert "\x1b" not in details + picker and "\x07" not in details + picker
        assert "maker\\x1b[2J\\x1b]52;c;cm0gLXJmIH4K\\x07" in details, details
        assert "in\\x1b]0;evil\\x07[b]put" in details and "out[@click=app.quit]q" in details, details
        assert "in\\x1b]0;evil\\x07[b]put" in picker, picker
        assert not any("@click" in s.style.meta for y in range(app.details.size.height)
                       for s in segments(app.details, y) if s.style is not None)


async def test_what_another_program_reports_shows_escaped(tmp_path):
    """A real client of the collector names its program and its log lines with escape sequences and
    markup: the builds list, the title and the log show them as text."""
    folder = tmp_path / "none"
    folder.mkdir()
    app = make(folder, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot_wait(pilot, lambda: app.collector is not None and app.collector.listening, timeout=30)
        client = subprocess.Popen([sys.executable, str(FLOOD), "logs", "5"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=dict(os.environ))
        try:
            await pilot_wait(pilot, lambda: any(v.state.final for v in app.views.values()), timeout=60)
            job = next(iter(app.views))
            app.main_screen.select_build(job)
            await pilot_wait(pilot, lambda: "line 4" in drawn(app.log_pane) and "flood" in drawn(app.builds), timeout=30)
            shown = drawn(app.builds) + drawn(app.phase_view) + drawn(app.log_pane)
            assert "\x1b" not in shown and "\x07" not in shown
            assert "flood\\x1b]0;pwned\\x07[b]x" in drawn(app.builds), drawn(app.builds)
            assert "line 4 \\x1b]52;c;cm0gLXJmIH4K\\x07 [b]x" in drawn(app.log_pane), drawn(app.log_pane)
        finally:
            client.stdin.close()
            client.wait(30)
