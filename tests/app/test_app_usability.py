"""What a new user trips on in the first minutes, driven through the real app with its pilot: the
filter prompt, the selection, a small terminal, the builds list's columns, the help, the palette, a
run's app. Real TensorRT-RTX builds of the samples where a build is needed; a replayed trace where
a build must hold still."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import onnx
from support.app import SIZE, SMALL, drawn, held_replay_app, key_bar, make, start_held_build
from support.replay import replay_executor
from support.waiting import pilot_wait

from trt_tui.core.build.events import State

PROGRAMS = Path(__file__).parent.parent / "programs"


async def test_the_filter_prompt_takes_every_key_until_enter_or_esc(models):
    """Letters in the model list are commands and never start a filter; `/` opens a visible prompt
    where every key is text (`q`, `a`, `c`, `?` included) until Enter keeps the filter or Esc
    clears it; while it is open the key bar says how to leave it, not the commands."""
    app = make(models)
    async with app.run_test(size=SIZE) as pilot:
        box = app.query_one("#filter")
        assert not box.region, "the filter box is on screen before `/`"
        await pilot.press("m")  # not a command: nothing, and no filter starts behind the user's back
        await pilot.pause(0.1)
        assert app.focused is app.picker and box.value == "" and len(app.picker.visible_paths()) == 3
        await pilot.press("slash")
        await pilot_wait(pilot, lambda: app.focused is box and bool(box.region), 2)
        bar = key_bar(app)
        assert "Keep filter" in bar and "Clear filter" in bar and "Build all" not in bar, bar
        for char in "qac?/":
            await pilot.press(char)
        await pilot.pause(0.2)
        assert box.value == "qac?/" and app.return_code is None
        assert not app.views and not app.scheduler.jobs, "a key typed in the filter ran a command"
        assert app.picker.visible_paths() == []
        for _ in "qac?/":
            await pilot.press("backspace")
        for char in "res":
            await pilot.press(char)
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: app.focused is app.picker, 2)
        assert app.picker.visible_paths() == [str(models / "resnet50.onnx")]
        assert box.region and box.value == "res", "a kept filter stays in view"
        assert "Build all" in key_bar(app)
        await pilot.press("slash")
        await pilot_wait(pilot, lambda: app.focused is box, 2)
        await pilot.press("escape")
        await pilot_wait(pilot, lambda: app.focused is app.picker, 2)
        assert box.value == "" and not box.region and len(app.picker.visible_paths()) == 3
        assert not app.scheduler.jobs
        await pilot.press("q")
        await pilot_wait(pilot, lambda: app.return_code is not None, 10)


async def test_the_filter_matches_the_name_shown_not_the_directory(models):
    """Every model lives under the directory given: a filter that names it keeps none, not all."""
    app = make(models)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("slash", *models.name[:12], "enter")
        await pilot_wait(pilot, lambda: app.focused is app.picker, 2)
        assert app.picker.visible_paths() == []
        await pilot.press("q")


async def test_the_pickers_last_build_shows_a_running_build(models):
    app = held_replay_app(models)
    async with app.run_test(size=SIZE) as pilot:
        await start_held_build(pilot, app)
        path = str(models / "resnet50.onnx")
        await pilot_wait(pilot, lambda: str(app.picker.get_cell(path, "Last build")) == "building", 5)
        await pilot.press("c")
        await pilot_wait(pilot, lambda: str(app.picker.get_cell(path, "Last build")) == "cancelled", 10)
        await pilot.press("q")


def _touch_content(model: Path, text: str) -> None:
    """A real change of the model: the same graph with another doc string, saved as editors save
    (a new file renamed over the old: the hard-linked sample it was is left alone)."""
    proto = onnx.load(str(model))
    proto.doc_string = text
    onnx.save(proto, str(model) + ".new")
    os.replace(str(model) + ".new", model)


async def test_watched_changes_leave_the_selection_where_the_user_put_it(models):
    """With watch on: a touch that changes nothing adds no row; a real change adds a row without
    taking the selection from the build studied; with `n` (follow newest) the next one takes it."""
    mnist = models / "mnist.onnx"
    app = make(models, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot_wait(pilot, lambda: app.watcher is not None, 5)
        await pilot.press("slash", *"mnist", "enter")
        await pilot_wait(pilot, lambda: app.focused is app.picker, 2)
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: 1 in app.views and app.views[1].state.final, 60)
        assert app.views[1].state is State.SUCCEEDED and app.selected == 1
        await pilot.pause(1.0)  # the engine's own writes are not changes of a model
        jobs_before = len(app.scheduler.jobs)
        os.utime(mnist, (time.time() + 5, time.time() + 5))  # touched: same bytes
        await pilot_wait(pilot, lambda: len(app.scheduler.jobs) > jobs_before
                       and all(j.final for j in app.scheduler.jobs.values()), 30)
        await pilot.pause(0.3)
        skipped = max(app.scheduler.jobs)
        assert app.scheduler.jobs[skipped].outcome.state is State.SKIPPED
        assert app.builds.row_count == 1, "an up-to-date touch added a row"
        assert app.selected == 1
        _touch_content(mnist, "changed once")
        await pilot_wait(pilot, lambda: app.builds.row_count == 2, 30)
        changed = app.builds._order[-1]
        await pilot_wait(pilot, lambda: app.views[changed].state.final, 60)
        assert app.views[changed].state is State.SUCCEEDED
        assert app.selected == 1 and app.phase_view.job == 1 and app.builds.cursor_row == 0, \
            "a build started by a change took the selection"
        await pilot.press("n")  # follow newest
        _touch_content(mnist, "changed twice")
        await pilot_wait(pilot, lambda: app.builds.row_count == 3, 30)
        newest = app.builds._order[-1]
        await pilot_wait(pilot, lambda: app.selected == newest and app.builds.cursor_row == 2, 5)
        await pilot_wait(pilot, lambda: app.views[newest].state.final, 60)
        await pilot.press("q")
        await pilot_wait(pilot, lambda: app.return_code is not None, 10)


async def test_usable_at_80x24_on_a_real_build(models):
    """At 80×24: the state reads whole, the running phase is in view however deep the tree, the title
    keeps its ETA, and the key bar keeps `?` and `q`."""
    app = make(models, executor="process", cache=False)
    async with app.run_test(size=SMALL) as pilot:
        bar = key_bar(app)
        assert "? Help" in bar and "q Quit" in bar, bar
        await pilot.press("enter")  # densenet, highlighted first
        await pilot_wait(pilot, lambda: 1 in app.views, 5)
        view = app.views[1]
        view.expected_seconds = 600.0  # what the history would say of a slow model
        await pilot_wait(pilot, lambda: view.backend is not None and view.tree.deepest_active() is not None
                       and view.tree.deepest_active().name == "Determining refit engines", 60)
        await pilot.pause(1.2)  # a tick of the title, one of the left-hand panes
        tree = drawn(app.phase_view)
        assert "ETA" in tree[0], tree[0]
        assert any("▸ Determining refit engines" in line for line in tree), tree
        assert any(line.split()[:3] == ["1", "densenet.onnx", "building"] for line in drawn(app.builds)), \
            drawn(app.builds)
        await pilot.press("c", "c")
        await pilot_wait(pilot, lambda: view.state.final, 30)
        await pilot.pause(1.2)
        assert any("cancelled" in line.split() for line in drawn(app.builds)), drawn(app.builds)
        await pilot.press("q")
        await pilot_wait(pilot, lambda: app.return_code is not None, 20)


async def test_builds_list_keeps_its_header_and_cursor_and_needs_no_sideways_scroll(models):
    """Many builds: the header stays on top while the rows scroll, the selected row stays in view;
    at 160 columns Peak and Engine are shown without scrolling sideways; narrower, the last
    columns go whole and the state stays whole."""
    for i in range(14):  # one build per engine at a time: fourteen models, fourteen engines
        os.link(models / "mnist.onnx", models / f"m{i:02}.onnx")
    app = make(models, executor_obj=replay_executor("mnist.onnx:full"), jobs=4)
    async with app.run_test(size=SIZE) as pilot:
        for i in range(14):
            app.submit(str(models / f"m{i:02}.onnx"), force=True)
        await pilot_wait(pilot, lambda: len(app.views) == 14 and all(v.state.final for v in app.views.values()), 30)
        builds = app.builds
        builds.focus()
        await pilot.press("home")
        await pilot.press("end")
        await pilot.pause(0.2)
        lines = drawn(builds)
        assert lines[0].split()[:3] == ["#", "Model", "State"], lines
        assert {"Peak", "Engine"} <= set(lines[0].split()), lines[0]
        assert builds.virtual_size.width <= builds.size.width, "the list scrolls sideways"
        assert any(line.split()[:1] == ["14"] for line in lines[1:]), f"the selected row is off screen: {lines}"
        await pilot.press("home")
        await pilot.pause(0.2)
        lines = drawn(builds)
        assert lines[0].split()[:1] == ["#"] and lines[1].split()[:1] == ["1"], lines
        await pilot.resize_terminal(*SMALL)
        await pilot.pause(0.3)
        lines = drawn(builds)
        assert lines[0].split()[:3] == ["#", "Model", "State"], lines
        assert lines[1].split()[2] == "succeeded", lines
        assert builds.virtual_size.width <= builds.size.width
        await pilot.press("q")


async def test_help_is_trt_tuis_own(models):
    from trt_tui.ui.help_screen import HelpScreen

    app = make(models)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        await pilot_wait(pilot, lambda: isinstance(app.screen, HelpScreen), 2)
        text = app.screen.text()
        for words in ("a second c forces", "fold or unfold", "copy all the stacks", "Phase tree",
                      "Builds", "Log", "new build takes the selection"):
            assert words in text, words
        await pilot.press("escape")
        await pilot_wait(pilot, lambda: not isinstance(app.screen, HelpScreen), 2)
        await pilot.press("q")


async def test_a_runs_app_offers_no_picker_build_or_watch(models, tmp_path):
    """`trt-tui run`'s app: no model picker, and Build, Build all and Watch are neither in the key
    bar, nor in the palette, nor do their keys do anything (Filter is offered: it filters the builds)."""
    from trt_tui.run.observer import ProgramRun
    from trt_tui.ui.app import make_app

    engine = tmp_path / "mnist.engine"
    run = ProgramRun([sys.executable, str(PROGRAMS / "own_monitor.py"), str(models / "mnist.onnx"), str(engine)])
    app = make_app(None, run=run)
    async with app.run_test(size=SIZE) as pilot:
        await pilot_wait(pilot, lambda: len(app.views) == 2 and all(v.state.final for v in app.views.values()), 60)
        assert not app.picker.region, "an empty model picker is on screen"
        bar = key_bar(app)
        titles = {command.title for command in app.get_system_commands(app.screen)}
        for name in ("Build", "Build all", "Watch", "Pause queue", "More at once", "Queue earlier"):
            assert f" {name} " not in bar, bar
            assert name not in titles, titles
        assert "Cancel" in bar and "Quit" in titles
        await pilot.press("w", "a", "P")
        await pilot.pause(0.3)
        assert app.watcher is None and len(app.scheduler.jobs) == 2
        assert not app.scheduler.paused, "the program's builds are its own to start"
        await pilot.press("q")
        await pilot_wait(pilot, lambda: app.return_code is not None, 10)


async def test_the_trees_top_phase_hangs_from_nothing(models):
    """The first row is the top phase itself, not a branch `└` with nothing above it."""
    app = held_replay_app(models)
    async with app.run_test(size=SIZE) as pilot:
        await start_held_build(pilot, app)
        lines = app.phase_view.shown_lines()
        assert lines[1].startswith("▼ ▸ Building engine"), lines[1]
        assert lines[2].startswith("├     Cloning network graph"), lines[2]
        await pilot.press("q")


async def test_cancel_never_takes_progress_back(models):
    app = held_replay_app(models)
    async with app.run_test(size=SIZE) as pilot:
        await start_held_build(pilot, app)
        await pilot.pause(1.3)
        before = str(app.builds.get_cell("1", "Progress"))
        await pilot.press("c")
        await pilot_wait(pilot, lambda: app.views[1].state.final, 10)
        await pilot.pause(1.3)
        after = str(app.builds.get_cell("1", "Progress"))
        assert int(after.split()[-1].rstrip("%")) >= int(before.split()[-1].rstrip("%")), (before, after)
        await pilot.press("q")


async def test_a_skipped_build_names_the_backend_of_the_engine_it_kept(models):
    app = make(models)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("slash", *"mnist", "enter")
        await pilot_wait(pilot, lambda: app.focused is app.picker, 2)
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: 1 in app.views and app.views[1].state.final, 60)
        await pilot.press("r")
        await pilot_wait(pilot, lambda: 2 in app.views and app.views[2].state.final, 30)
        assert app.views[2].state is State.SKIPPED
        assert str(app.builds.get_cell("2", "Backend")) == str(app.builds.get_cell("1", "Backend"))
        assert str(app.builds.get_cell("2", "Backend")).startswith("RTX 1.")
        await pilot.press("q")


async def test_long_text_is_cut_between_words_where_it_is_cut(models):
    """The title of a cancelled build and the vitals line end on a whole word (or figure)."""
    app = make(models, executor="process", cache=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")  # densenet
        await pilot_wait(pilot, lambda: 1 in app.views and app.views[1].state is State.BUILDING
                       and len(app.views[1].vitals) >= 1, 60)
        await pilot_wait(pilot, lambda: app.views[1].tree.deepest_active() is not None
                       and app.views[1].tree.deepest_active().name == "Determining refit engines", 60)
        await pilot.press("c", "c")
        await pilot_wait(pilot, lambda: app.views[1].state.final, 30)
        await pilot.pause(1.3)
        title, whole = drawn(app.phase_view)[0], str(app.phase_view.title)
        assert title == whole or title.endswith("…") and whole.startswith(title[:-1].rstrip()), (title, whole)
        cut = title[:-1].rstrip()
        assert title == whole or whole[len(cut)] == " ", f"cut mid-word: {title!r} of {whole!r}"
        line = app.query_one("#vitals-summary")
        summary = str(line.render())
        assert len(summary) <= line.size.width and "…" not in summary, summary  # whole figures only
        await pilot.press("q")
        await pilot_wait(pilot, lambda: app.return_code is not None, 20)


async def test_the_headers_icon_is_a_glyph_every_monospace_font_has(models):
    """Textual's default header icon (U+2B58) is in none of the usual terminal fonts nor in the one
    of the README's pictures, where it showed as an empty box: the drawn header starts with a
    character below the rarer symbol blocks (U+2500 on), which every monospace font carries."""
    from textual.widgets._header import HeaderIcon

    app = make(models)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.1)
        first = "".join(drawn(app.screen.query_one(HeaderIcon))).strip()[0]
        assert ord(first) < 0x2500, f"the header's icon {first!r} (U+{ord(first):04X}) is missing from common fonts"
