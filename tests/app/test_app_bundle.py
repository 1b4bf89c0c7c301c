"""`b` in the app: the selected finished build's report bundle, with its log, written here and said
where; a build still running has none yet. The real app through its pilot, a real TensorRT-RTX build
of the MNIST sample, the real history."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest
from support.app import SIZE, filter_to, held_replay_app, make, start_held_build
from support.waiting import pilot_wait

from trt_tui.core.build.events import State


@pytest.fixture
def models(models_src, tmp_path) -> Path:
    directory = tmp_path / "models"
    directory.mkdir()
    for src in models_src.glob("*.onnx"):
        os.link(src, directory / src.name)
    return directory


def _messages(app) -> list[str]:
    return [n.message for n in app._notifications]


async def test_b_writes_the_finished_build_s_bundle_with_its_log_and_says_where(models, tmp_path, monkeypatch):
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    app = make(models)
    async with app.run_test(size=SIZE) as pilot:
        await filter_to(pilot, app, "mnist")
        await pilot.press("enter")
        await pilot_wait(pilot, lambda: app.views and app.views[1].state.final, 90)
        assert app.views[1].state is State.SUCCEEDED, app.views[1].error
        await pilot_wait(pilot, lambda: app.session.recorder.recorded.get(1) is not None, 10)
        await pilot.press("b")
        await pilot_wait(pilot, lambda: any("Report bundle of #1 written to" in m for m in _messages(app)), 60)
        bundles = list(here.glob("trt-tui-bundle-*.tar.gz"))
        assert len(bundles) == 1 and any(str(bundles[0]) in m for m in _messages(app))
        with tarfile.open(bundles[0]) as tar:
            names = tar.getnames()
            log = next(n for n in names if n.endswith("/log.txt"))
            text = tar.extractfile(log).read().decode()
        assert any(n.endswith("/MANIFEST.txt") for n in names) and any(n.endswith("/model/mnist.onnx") or
                                                                       n.endswith("mnist.onnx") for n in names)
        assert any(line.strip() in text for line in app.views[1].logs.text_lines() if line.strip())
        await pilot.press("q")


async def test_b_on_a_running_build_says_it_is_not_finished(models, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = held_replay_app(models)
    async with app.run_test(size=SIZE) as pilot:
        await start_held_build(pilot, app)
        await pilot.press("b")
        await pilot_wait(pilot, lambda: any("not finished" in m for m in _messages(app)), 5)
        assert not list(tmp_path.glob("trt-tui-bundle-*")), "a bundle of an unfinished build was written"
        await pilot.press("q")
