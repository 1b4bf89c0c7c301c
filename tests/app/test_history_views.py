"""The history as a user reads it: `trt-tui history`'s table, `history diff`, the app's `D` panel and
its ETA. Builds are real MNIST builds through `cli.main`; where a build must stay running long enough
to be looked at, the app replays a recorded trace through the real monitor."""

from __future__ import annotations

import json
import time
from pathlib import Path

import onnx
import pytest
from onnx import helper
from support.commands import run_cli
from support.replay import TRACES, ReplayExecutor, load_trace
from support.waiting import pilot_wait

from trt_tui.core.execution.session_settings import SessionSettings
from trt_tui.core.history.records import History
from trt_tui.core.model.samples import write_samples
from trt_tui.ui.app import AppConfig, TrtTuiApp


def build(capsys, model: Path, history: Path, *extra: str) -> None:
    code, _, err = run_cli(capsys, "build", model, "--history", history, "--json", *extra)
    assert code == 0, err


def mnist_in(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (model,) = write_samples(directory, ["mnist"])
    return model


def edit(model: Path) -> None:
    """Another version of the model: one more node on a branch nothing reads."""
    proto = onnx.load(model)
    proto.graph.node.append(helper.make_node("Relu", [proto.graph.node[0].output[0]], ["spare"]))
    onnx.save(proto, model)


def add_cancelled(history: Path, model: Path) -> int:
    """A build of `model` cancelled part of the way, recorded as the recorder records one."""
    with History(history) as h:
        return h.record(model=model.resolve(), model_hash=None, options={}, backend="tensorrt-rtx",
                        backend_version="", state="cancelled", error=None, started=time.time(), duration=0.05,
                        engine_bytes=None, phases={"Building engine": 0.01})


# -- `trt-tui history` ---------------------------------------------------------------------------------------


def test_the_table_tells_models_apart_fits_the_terminal_and_lists_by_id(tmp_path, capsys, monkeypatch) -> None:
    history = tmp_path / "history.sqlite3"
    one, two = mnist_in(tmp_path / "one"), mnist_in(tmp_path / "two")
    build(capsys, one, history)
    build(capsys, two, history)
    # A build that started before those and ended after them (as one of builds run at once does): the
    # highest id, the earliest start.
    with History(history) as h:
        late = h.record(model=one.resolve(), model_hash=None, options={}, backend="tensorrt-rtx",
                        backend_version="", state="succeeded", error=None, started=time.time() - 3600,
                        duration=1.0, engine_bytes=1, phases={})
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli(capsys, "history", "--history", history)
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 4 and all(len(line) < 80 for line in lines), lines
    ids = [int(line.split()[0]) for line in lines[1:]]
    assert ids == sorted(ids, reverse=True) and ids[0] == late, lines
    models = {line.split()[3] for line in lines[1:]}
    assert models == {"one/mnist.onnx", "two/mnist.onnx"}, lines

    monkeypatch.delenv("COLUMNS")  # into a file or a pipe: every column
    code, out, _ = run_cli(capsys, "history", "--history", history)
    assert "BACKEND" in out.splitlines()[0]


# -- `trt-tui history diff` ----------------------------------------------------------------------------------


def test_diff_of_a_model_compares_its_last_two_successful_builds(tmp_path, capsys) -> None:
    history = tmp_path / "history.sqlite3"
    mnist = mnist_in(tmp_path / "m")
    build(capsys, mnist, history)
    build(capsys, mnist, history, "--force")
    with History(history) as h:
        first, second = sorted(r.id for r in h.builds())
    add_cancelled(history, mnist)
    code, out, err = run_cli(capsys, "history", "diff", mnist, "--history", history, "--json")
    assert code == 0, err
    result = json.loads(out)
    assert (result["a"]["id"], result["b"]["id"]) == (first, second)
    assert result["a"]["state"] == result["b"]["state"] == "succeeded"


def test_diff_refuses_a_file_name_two_directories_have(tmp_path, capsys, monkeypatch) -> None:
    history = tmp_path / "history.sqlite3"
    one, two = mnist_in(tmp_path / "one"), mnist_in(tmp_path / "two")
    build(capsys, one, history)
    build(capsys, two, history)
    monkeypatch.chdir(tmp_path)  # "mnist.onnx" names neither file here: only the name matches
    code, out, err = run_cli(capsys, "history", "diff", "mnist.onnx", "--history", history)
    assert code == 2 and not out
    assert err.count("\n") == 1 and str(one.resolve()) in err and str(two.resolve()) in err, err
    code, out, err = run_cli(capsys, "history", "diff", one, "--history", history)  # a path says which
    assert code == 2 and "1 successful build in history" in err


# -- what the ETA comes from --------------------------------------------------------------------------------


def test_the_estimate_comes_from_builds_of_the_present_content(tmp_path) -> None:
    from trt_tui.core.history.estimates import expected_for

    model = mnist_in(tmp_path / "m")
    changed = model.stat().st_mtime

    def success(started: float, model_hash: str, seconds: float) -> None:
        h.record(model=model.resolve(), model_hash=model_hash, options={}, backend="tensorrt-rtx",
                 backend_version="", state="succeeded", error=None, started=started, duration=seconds,
                 engine_bytes=1, phases={"Building engine": seconds})

    with History(tmp_path / "history.sqlite3") as h:
        for i in range(3):  # builds of the file before it was last written
            success(changed - 100 + i, "old", 10.0)
        assert expected_for(h, model) == ({"Building engine": 10.0}, True)
        success(changed + 1, "new", 1.0)  # built from what the file holds now
        success(changed - 50, "new", 3.0)  # the same bytes, before a `touch`
        assert expected_for(h, model) == ({"Building engine": 2.0}, False)


# -- the app ---------------------------------------------------------------------------------------------


async def test_a_build_is_one_number_in_the_cli_the_app_the_history_and_its_bundle(tmp_path, capsys, monkeypatch) -> None:
    """A build's number is its history id, given when it is queued: `build --json` says it as `id`,
    the app shows `#N` going on from the history's numbering in every session, `D` and `h` name
    earlier sessions' builds by theirs, `b` and `trt-tui bundle N` write the same build's bundle."""
    import tarfile

    history = tmp_path / "history.sqlite3"
    mnist = mnist_in(tmp_path / "m")
    numbers = []
    for extra in ((), ("--force",)):  # history ids 1 and 2, before the app
        code, out, err = run_cli(capsys, "build", mnist, "--history", history, "--json", "--opt-level", "3", *extra)
        assert code == 0, err
        states = [e for e in map(json.loads, out.splitlines()) if e["event"] == "state"]
        assert len({e["id"] for e in states}) == 1 and all(e["id"] == e["job"] for e in states), states
        numbers.append(states[0]["id"])
    assert numbers == [1, 2]
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    for session, first in ((1, 3), (2, 5)):  # two app sessions: each goes on from the history's numbering
        await _app_session(mnist, history, here, first, key="f" if session == 2 else "enter")
        with History(history) as h:
            assert [r.id for r in h.builds()] == list(range(first + 1, 0, -1))
        code, out, err = run_cli(capsys, "bundle", first + 1, "-o", tmp_path / f"cli-{first + 1}.tar.gz",
                                 "--history", history)
        assert code == 0, err
        with tarfile.open(tmp_path / f"cli-{first + 1}.tar.gz") as tar:
            manifest = next(n for n in tar.getnames() if n.endswith("MANIFEST.txt"))
            text = tar.extractfile(manifest).read().decode()
        assert text.startswith(f"trt-tui report bundle of build {first + 1} (mnist.onnx, succeeded)"), text


async def _app_session(mnist: Path, history: Path, here: Path, first: int, key: str) -> None:
    """One app session on `history`, whose next number is `first`: `key` builds #first, `f` #first + 1;
    `D`, `b` and `h` name them so."""
    from trt_tui.ui.history_screen import HistoryScreen
    from trt_tui.ui.widgets.diff_panel import DiffPanel

    app = TrtTuiApp(AppConfig(paths=[str(mnist)], session=SessionSettings(history=str(history), executor="thread")))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press(key)  # other options than the CLI's: it builds
        await pilot_wait(pilot, lambda: first in app.views and app.views[first].state.final)
        assert app.selected == first and sorted(app.views) == [first], sorted(app.views)
        await pilot.press("D")
        await pilot_wait(pilot, lambda: isinstance(app.screen, DiffPanel))
        title = app.screen.lines[0]
        assert title.startswith(f"mnist.onnx #{first - 1} (") and f" → mnist.onnx #{first} (" in title, title
        await pilot.press("escape")
        await pilot.press("f")
        await pilot_wait(pilot, lambda: first + 1 in app.views and app.views[first + 1].state.final)
        await pilot_wait(pilot, lambda: app.session.recorder.recorded.get(first + 1) == first + 1)
        await pilot.press("b")
        said = f"Report bundle of #{first + 1} written to {here / f'trt-tui-bundle-{first + 1}.tar.gz'}"
        await pilot_wait(pilot, lambda: any(said in n.message for n in app._notifications), 60)
        await pilot.press("h")
        await pilot_wait(pilot, lambda: isinstance(app.screen, HistoryScreen))
        table = app.screen.query_one("#history-table")
        await pilot_wait(pilot, lambda: table.row_count == first + 1)
        labels = [str(table.get_row_at(i)[1]) for i in range(table.row_count)]
        assert labels == [f"#{n}" for n in range(first + 1, 0, -1)], labels  # no "earlier run"
        await pilot.press("escape")
        await pilot.press("q")


@pytest.mark.parametrize("edited", [False, True], ids=["same model", "edited model"])
async def test_app_eta_says_overdue_and_when_it_comes_from_an_older_model(tmp_path, capsys, edited) -> None:
    """A real build of MNIST is the history; the app's build (a recorded ResNet-50 trace, held in a
    phase) then runs past that estimate: "overdue +Xs", never "ETA 0.0s". An estimate from builds of
    the model before it was edited says so."""
    history = tmp_path / "history.sqlite3"
    mnist = mnist_in(tmp_path / "m")
    build(capsys, mnist, history)
    if edited:
        edit(mnist)
    events, size = load_trace(TRACES, "resnet50.onnx:full")
    hold = next(i for i, e in enumerate(events) if e[2] == "start" and e[3] == "Determining refit engines") + 1
    app = TrtTuiApp(AppConfig(paths=[str(mnist)], session=SessionSettings(history=str(history), cache=False)),
                    executor=ReplayExecutor(events, size, hold_at=hold))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: 2 in app.views and len(app.views[2].tree.phases) >= 12)
        view = app.views[2]  # #2: the MNIST build before the app is #1
        assert view.expected_seconds, "the MNIST build in the history gives an estimate"
        total = view.expected_seconds
        await pilot_wait(pilot, lambda: view.now() > total + 0.5)
        await pilot.pause(TrtTuiApp.TICK + 0.2)  # a tick redraws the title
        title = str(app.phase_view.title)
        assert " · overdue +" in title and "ETA 0.0s" not in title, title
        assert ("(from an older model)" in title) is edited, title
        assert view.expected_from_older is edited
        await pilot.press("c")
        await pilot_wait(pilot, lambda: view.state.final)
        await pilot.press("q")
