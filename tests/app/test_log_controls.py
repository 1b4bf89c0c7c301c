"""The log pane's controls, the zoom, the compact layout and the notifications, driven through the
real app with its pilot after real TensorRT-RTX builds of the MNIST sample. Where a test needs more
lines than a small build logs (to scroll, to spill to disk), it adds them to the real build's log
through the app's own message, as the scheduler's pump would."""

from __future__ import annotations

import os
import tempfile

import pytest
from support.app import SIZE, SMALL, drawn, filter_to, held_replay_app, key_bar, make, start_held_build
from support.waiting import pilot_wait

from trt_tui.core.build import log_store
from trt_tui.core.build.events import Log, Severity, State
from trt_tui.core.build.log_store import HEADER, LogStore
from trt_tui.ui.notifier import notification, summary
from trt_tui.ui.widgets.log_prompt import LogInput
from trt_tui.ui.widgets.messages import BuildEvents


async def built_mnist(pilot, app) -> int:
    await filter_to(pilot, app, "mnist")
    await pilot.press("enter")
    await pilot_wait(pilot, lambda: app.views and app.views[1].state.final, 90)
    assert app.views[1].state is State.SUCCEEDED, app.views[1].error
    return 1


async def more_lines(pilot, app, job: int, messages: list[tuple[Severity, str]]) -> None:
    """Lines that arrive for the build through the app's message, as the pump brings them."""
    t = app.views[job].tree.last_t
    app.post_message(BuildEvents(job, [Log(job, t + i * 0.001, severity, text)
                                       for i, (severity, text) in enumerate(messages)]))
    await pilot.pause(0.2)


def title(app) -> str:
    return str(app.query_one("#log-title").render())


async def test_the_log_holds_still_while_read_and_end_follows_again(models):
    """Scrolling the log up stops new lines from moving it (the title says so); End follows the
    newest line again; `F` holds and follows as a toggle."""
    app = make(models)
    async with app.run_test(size=SIZE) as pilot:
        job = await built_mnist(pilot, app)
        pane = app.log_pane
        await more_lines(pilot, app, job, [(Severity.INFO, f"line {i}") for i in range(200)])
        assert pane.following and pane.scroll_y == pane.max_scroll_y > 0
        pane.focus()
        await pilot.press("up", "up", "up")
        await pilot.pause(0.1)
        assert not pane.following and "paused" in title(app), title(app)
        held, seen = pane.scroll_y, drawn(pane)
        await more_lines(pilot, app, job, [(Severity.INFO, f"late line {i}") for i in range(50)])
        assert pane.scroll_y == held < pane.max_scroll_y, "new lines moved the log the user reads"
        assert drawn(pane) == seen
        await pilot.press("end")
        await pilot.pause(0.1)
        assert pane.following and pane.scroll_y == pane.max_scroll_y and "paused" not in title(app)
        assert "late line 49" in "\n".join(drawn(pane))
        await pilot.press("F")
        held = pane.scroll_y
        await more_lines(pilot, app, job, [(Severity.INFO, f"later line {i}") for i in range(30)])
        assert not pane.following and pane.scroll_y == held < pane.max_scroll_y
        await pilot.press("F")
        await pilot.pause(0.1)
        assert pane.following and pane.scroll_y == pane.max_scroll_y
        await pilot.press("q")


async def test_search_highlights_matches_and_f3_moves_between_them(models):
    """ctrl+f opens a prompt that takes every key (letters that are commands too); Enter moves to a
    match, highlighted, and the title counts them; F3 and shift+F3 go to the next and previous."""
    app = make(models)
    async with app.run_test(size=SIZE) as pilot:
        job = await built_mnist(pilot, app)
        pane = app.log_pane
        await more_lines(pilot, app, job, [(Severity.INFO, f"Needle {i}" if i % 50 == 7 else f"hay {i}")
                                           for i in range(300)])
        await pilot.press("ctrl+f")
        await pilot_wait(pilot, lambda: isinstance(app.focused, LogInput), 2)
        assert "Done" in key_bar(app) and "Build all" not in key_bar(app)
        for char in "needle":  # `n` and `e` are commands outside the prompt
            await pilot.press(char)
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: app.focused is pane, 2)
        assert app.follow_newest is False, "a letter typed in the search ran a command"
        matches = pane.matches()
        assert [pane.shown[i].message for i in matches] == [f"Needle {i}" for i in range(7, 300, 50)]
        assert pane.current in matches and not pane.following

        def current_drawn() -> str:
            line = next(i for i, text in enumerate(drawn(pane)) if pane.shown[pane.current].message in text)
            strip = pane.render_line(line)
            lit = [seg.text for seg in strip if seg.style is not None and seg.style.reverse]
            return "".join(lit)

        assert current_drawn().lower() == "needle", "the match is not highlighted in view"
        at = matches.index(pane.current)
        assert f"“needle” {at + 1}/6" in title(app), title(app)
        await pilot.press("f3")
        assert pane.current == matches[(at + 1) % 6] and current_drawn().lower() == "needle"
        await pilot.press("shift+f3", "shift+f3")
        assert pane.current == matches[(at - 1) % 6]
        await pilot.press("ctrl+f")
        await pilot_wait(pilot, lambda: isinstance(app.focused, LogInput), 2)
        await pilot.press("escape")  # ends the search
        await pilot_wait(pilot, lambda: app.focused is pane, 2)
        assert pane.matches() == [] and "needle" not in title(app)
        await pilot.press("q")


async def test_e_moves_to_the_next_warning_or_error_and_w_wraps(models):
    app = make(models)
    async with app.run_test(size=SIZE) as pilot:
        job = await built_mnist(pilot, app)
        pane = app.log_pane
        lines = [(Severity.INFO, f"fine {i}") for i in range(120)]
        lines[40] = (Severity.WARNING, "a warning to find")
        lines[90] = (Severity.ERROR, "an error to find")
        lines.append((Severity.INFO, "long " + "x" * 400 + " end"))
        await more_lines(pilot, app, job, lines)
        problems = [i for i, e in enumerate(pane.shown) if e.severity <= Severity.WARNING]
        pane.focus()
        await pilot.press("home")
        for expected in [*problems, problems[0]]:  # then round to the first
            await pilot.press("e")
            assert pane.current == expected
            assert pane.shown[expected].message in "\n".join(drawn(pane)), "the problem is not in view"
        assert not pane.following
        wide, rows = pane.virtual_size.width, pane.virtual_size.height
        assert wide > pane.size.width
        await pilot.press("W")
        await pilot.pause(0.1)
        assert pane.wrap and "wrap" in title(app)
        assert pane.virtual_size.width <= pane.size.width and pane.virtual_size.height > rows
        await pilot.press("W")
        await pilot.pause(0.1)
        assert not pane.wrap and pane.virtual_size.height == rows
        await pilot.press("q")


async def test_s_saves_every_line_of_the_build_and_never_over_a_file_it_did_not_write(models, tmp_path,
                                                                                      monkeypatch):
    """A long build keeps its oldest lines on disk: saving writes every line, in order, to
    MODEL-ID.log in the current directory (or a path typed), says where, and refuses a file it
    did not write."""
    monkeypatch.setattr(log_store, "MEMORY_LINES", 20)  # what a very long build reaches
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    app = make(models)
    async with app.run_test(size=SIZE) as pilot:
        job = await built_mnist(pilot, app)
        await more_lines(pilot, app, job, [(Severity.VERBOSE, f"extra {i}") for i in range(100)])
        store = app.views[job].logs
        assert store.spilled > 0 and len(store) <= 20
        first = app.log_pane.shown[0]  # the pane's oldest line: already on disk
        await pilot.press("S")
        await pilot_wait(pilot, lambda: isinstance(app.focused, LogInput), 2)
        assert app.focused.value == "mnist-1.log"
        await pilot.press("enter")
        saved = here / "mnist-1.log"
        await pilot_wait(pilot, lambda: saved.exists(), 5)
        text = saved.read_text().splitlines()
        assert text[0].startswith(HEADER) and "mnist" in text[0]
        assert text[1:] == list(store.text_lines()) and len(text) - 1 == store.total > 100
        assert text[-1].endswith("extra 99") and any(line.endswith(first.message) for line in text[1:])
        assert any(str(saved) in n.message for n in app._notifications), "it does not say where"
        mine = here / "mine.log"
        mine.write_text("my notes\n")
        await pilot.press("S")
        await pilot_wait(pilot, lambda: isinstance(app.focused, LogInput), 2)
        app.focused.value = "mine.log"
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert mine.read_text() == "my notes\n", "a file trt-tui did not write was replaced"
        assert any("did not write" in n.message for n in app._notifications)
        assert sorted(p.name for p in here.iterdir()) == ["mine.log", "mnist-1.log"], "a temporary was left"
        await pilot.press("q")


def test_log_stores_spill_their_oldest_lines_to_one_file_without_a_name(monkeypatch):
    """Two builds' lines interleaved: each gets every line back, in order; an ended build keeps fewer
    in memory; the spilled lines share one unnamed file (one descriptor however many builds)."""
    monkeypatch.setattr(log_store, "ENDED_MEMORY_LINES", 4)
    before = {p for p in os.listdir(tempfile.gettempdir()) if p.startswith("trt-tui-log-")}
    one, two = LogStore(memory=10), LogStore(memory=10)
    for i in range(25):
        one.append(Log(1, float(i), Severity.INFO, f"m{i}\nsecond\x0cline"))
        two.append(Log(2, float(i), Severity.WARNING, f"w{i}"))
    assert len(one) <= 10 and one.spilled > 0 and one.total == 25
    assert [line.split(maxsplit=2)[2] for line in one.text_lines()] == [f"m{i}\\nsecond\x0cline" for i in range(25)]
    assert [line.split()[1:] for line in two.text_lines()] == [["W", f"w{i}"] for i in range(25)]
    one.settle()
    assert len(one) == 4 and one.total == 25 and len(list(one.text_lines())) == 25
    one.append(Log(1, 25.0, Severity.ERROR, "after it ended"))
    assert list(one.text_lines())[-1].endswith("E after it ended") and one.total == 26
    after = {p for p in os.listdir(tempfile.gettempdir()) if p.startswith("trt-tui-log-")}
    assert after == before, "the spilled lines have a file name that could be left behind"


async def test_z_zooms_the_focused_pane_and_back(models):
    app = make(models)
    async with app.run_test(size=SIZE) as pilot:
        job = await built_mnist(pilot, app)
        await more_lines(pilot, app, job, [(Severity.INFO, f"line {i}") for i in range(200)])
        pane = app.log_pane
        pane.focus()
        await pilot.press("z")
        await pilot.pause(0.1)
        assert app.screen.maximized is pane
        assert pane.region.width == SIZE[0] and pane.region.height > SIZE[1] - 3 and not app.builds.region
        assert "Zoom" in key_bar(app)
        assert pane.following and pane.scroll_y == pane.max_scroll_y, "a taller pane stopped following"
        await pilot.press("ctrl+f")  # the prompt sits above the log: the zoom gives way to it
        await pilot_wait(pilot, lambda: isinstance(app.focused, LogInput) and app.focused.region, 2)
        await pilot.press("escape")
        await pilot.press("z", "z")
        await pilot.pause(0.1)
        assert app.screen.maximized is None and app.builds.region and pane.region.width < SIZE[0]
        app.builds.focus()
        await pilot.press("z")
        await pilot.pause(0.1)
        assert app.screen.maximized is app.builds and app.builds.region.width == SIZE[0]
        assert drawn(app.builds)[1].split()[:3] == ["1", "mnist.onnx", "succeeded"]
        await pilot.press("q")


async def test_at_80x24_the_builds_list_takes_the_width_over_the_running_phase(models):
    app = held_replay_app(models)
    async with app.run_test(size=SMALL) as pilot:
        await start_held_build(pilot, app)
        await pilot.pause(1.3)
        assert app.builds.region.width == SMALL[0]
        header, row = drawn(app.builds)[:2]
        assert header.split()[:5] == ["#", "Model", "State", "Progress", "Elapsed"], header
        assert row.split()[:3] == ["1", "resnet50.onnx", "building"] and "%" in row, row
        assert any("▸ Determining refit engines" in line for line in drawn(app.phase_view))
        assert "? Help" in key_bar(app) and "q Quit" in key_bar(app)
        await pilot.press("q")


def test_notification_sequences_and_tmux_passthrough():
    plain = notification("trt-tui: a;b", "done\x1b[2J")
    assert plain == "\x07\x1b]9;trt-tui: a b: done [2J\x07\x1b]777;notify;trt-tui: a b;done [2J\x07"
    wrapped = notification("t", "b", tmux=True)
    assert wrapped == "\x07\x1bPtmux;\x1b\x1b]9;t: b\x07\x1b\\\x1bPtmux;\x1b\x1b]777;notify;t;b\x07\x1b\\"


@pytest.mark.parametrize(("after", "rings"), [(0.01, True), (3600.0, False), (0.0, False)])
async def test_a_long_build_rings_and_notifies_through_the_driver(models, after, rings):
    app = make(models, notify_after=after)
    async with app.run_test(size=SIZE) as pilot:
        written: list[str] = []
        app._driver.write = written.append
        await built_mnist(pilot, app)
        await pilot.pause(0.2)
        out = "".join(written)
        assert ("\x1b]9;trt-tui: mnist.onnx succeeded: build #1 succeeded after" in out) is rings, out
        assert ("\x1b]777;notify;trt-tui: mnist.onnx succeeded;" in out) is rings
        assert ("\x07" in out) is rings
        assert summary(app.views.values()) == "trt-tui: 1 built (mnist.onnx), 0 failed, 0 cancelled"
        await pilot.press("q")


def test_on_a_terminal_the_bytes_reach_it_and_quit_prints_what_was_built(cli_env, trt_tui_command, models_src,
                                                                         tmp_path):
    """The real program on a pseudo-terminal: the bell and both notifications come out, and after the
    app's screen is gone one line says what it built."""
    from support.terminal import AppOnATerminal

    os.link(models_src / "mnist.onnx", tmp_path / "mnist.onnx")
    app = AppOnATerminal([*trt_tui_command, str(tmp_path), "--notify-after", "0.01"], cli_env)
    try:
        app.wait_for("mnist.onnx")
        app.send("\r")
        app.wait_for("\x1b]777;notify;trt-tui: mnist.onnx succeeded;build #1 succeeded after", 120)
        assert b"\x1b]9;trt-tui: mnist.onnx succeeded: build #1" in app.output and b"\x07" in app.output
        app.send("q")
    finally:
        code = app.finish()
    assert code == 0
    line = b"trt-tui: 1 built (mnist.onnx), 0 failed, 0 cancelled"
    assert line in app.output
    assert app.output.rfind(line) > app.output.rfind(b"\x1b[?1049l"), "the summary was drawn over by the app"


@pytest.mark.parametrize("value", ["-1", "soon"])
def test_a_bad_notify_after_is_one_line_and_exit_2(cli_env, trt_tui_command, models_src, value):
    import subprocess

    done = subprocess.run([*trt_tui_command, str(models_src), "--notify-after", value], env=cli_env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--notify-after" in lines[0], done.stderr


async def test_quitting_mid_build_counts_it_cancelled(models):
    app = held_replay_app(models)
    async with app.run_test(size=SIZE) as pilot:
        await start_held_build(pilot, app)
        await pilot.press("q")
        await pilot_wait(pilot, lambda: app.return_code is not None, 20)
    assert summary(app.views.values()) == "trt-tui: 0 built, 0 failed, 1 cancelled (resnet50.onnx)"
