"""Rebuild on change: real file events in temporary directories, real builds, the engine cache."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time

import onnx
import pytest

from trt_tui.core.build.driver import BuildSpec
from trt_tui.core.build.events import State
from trt_tui.core.cache.engine_cache import EngineCache, sidecar_path
from trt_tui.core.execution.rebuild import RebuildController
from trt_tui.core.execution.scheduler import Scheduler
from trt_tui.core.model.samples import make_model
from trt_tui.core.model.watch import ModelChange, ModelWatcher


@pytest.fixture(scope="module")
def mnist_bytes() -> bytes:
    return make_model("mnist").SerializeToString()


@pytest.fixture(scope="module")
def resnet_bytes() -> bytes:
    return make_model("resnet50").SerializeToString()


class ChangeRecorder:
    def __init__(self) -> None:
        self.changes: list[tuple[float, ModelChange]] = []
        self.lock = threading.Lock()

    def __call__(self, changes: list[ModelChange]) -> None:
        with self.lock:
            self.changes.extend((time.monotonic(), c) for c in changes)

    def kinds(self) -> list[tuple[str, str]]:
        with self.lock:
            return [(c.kind, c.path.name) for _, c in self.changes]

    def wait(self, n: int, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.changes) < n:
            assert time.monotonic() < deadline, f"only {self.kinds()} within {timeout}s"
            time.sleep(0.02)

    def clear(self) -> None:
        with self.lock:
            self.changes.clear()


@pytest.fixture
def watched(tmp_path):
    recorder = ChangeRecorder()
    watcher = ModelWatcher([tmp_path], recorder)
    watcher.start()
    time.sleep(0.2)  # the watcher's first poll
    yield tmp_path, recorder, watcher
    watcher.stop()
    assert not watcher.running
    assert watcher.errors == []


def test_create_modify_delete_and_atomic_replace(watched, mnist_bytes):
    directory, rec, _ = watched
    model = directory / "m.onnx"
    model.write_bytes(mnist_bytes)
    rec.wait(1)
    assert rec.kinds() == [("added", "m.onnx")]
    rec.clear()
    changed = onnx.load_from_string(mnist_bytes)
    changed.producer_name = "edited"
    model.write_bytes(changed.SerializeToString())
    rec.wait(1)
    assert rec.kinds() == [("changed", "m.onnx")]
    rec.clear()
    tmp = directory / ".m.onnx.swp"  # an editor's save: write elsewhere, rename over
    tmp.write_bytes(mnist_bytes)
    os.replace(tmp, model)
    rec.wait(1)
    assert rec.kinds() == [("changed", "m.onnx")]
    rec.clear()
    model.unlink()
    rec.wait(1)
    assert rec.kinds() == [("removed", "m.onnx")]


def test_slow_partial_copy_is_reported_once_complete(watched, resnet_bytes):
    """A 100 MB model copied in 12 pieces over ~2 s: one report, after the last write, never early."""
    directory, rec, _ = watched
    model = directory / "big.onnx"
    chunk = len(resnet_bytes) // 12 + 1
    with open(model, "wb") as f:
        for i in range(0, len(resnet_bytes), chunk):
            f.write(resnet_bytes[i:i + chunk])
            f.flush()
            time.sleep(0.15)
    last_write = time.monotonic()
    rec.wait(1)
    time.sleep(0.6)
    assert rec.kinds() == [("added", "big.onnx")]
    reported_at = rec.changes[0][0]
    assert reported_at >= last_write, "reported before the copy finished"


def test_burst_of_writes_gives_one_report(watched, mnist_bytes):
    directory, rec, _ = watched
    model = directory / "b.onnx"
    model.write_bytes(mnist_bytes)
    rec.wait(1)
    rec.clear()
    for i in range(15):
        m = onnx.load_from_string(mnist_bytes)
        m.producer_name = f"burst {i}"
        model.write_bytes(m.SerializeToString())
        time.sleep(0.02)
    rec.wait(1)
    time.sleep(0.8)
    assert rec.kinds() == [("changed", "b.onnx")]


def test_a_complete_file_that_is_not_onnx_is_reported_once_and_other_files_never(watched):
    """Its build then fails with the reason; a silent watcher would leave the user guessing."""
    directory, rec, _ = watched
    (directory / "junk.onnx").write_bytes(os.urandom(4096))
    (directory / "notes.txt").write_text("hello")
    time.sleep(1.0)
    assert rec.kinds() == [("added", "junk.onnx")]
    time.sleep(1.0)  # an unchanged bad file is not reported again
    assert rec.kinds() == [("added", "junk.onnx")]


def test_external_data_counts_as_the_model(tmp_path, mnist_bytes):
    model = onnx.load_from_string(mnist_bytes)
    path = tmp_path / "ext.onnx"
    onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="ext.weights", size_threshold=0)
    rec = ChangeRecorder()
    watcher = ModelWatcher([tmp_path], rec)
    watcher.start()
    try:
        time.sleep(0.2)
        weights = tmp_path / "ext.weights"
        data = bytearray(weights.read_bytes())
        data[0] ^= 0xFF
        weights.write_bytes(bytes(data))
        rec.wait(1)
        assert rec.kinds() == [("changed", "ext.onnx")]
    finally:
        watcher.stop()


def test_engine_cache_hit_miss_touch_and_force(tmp_path, mnist_bytes):
    """A current engine is skipped; touching rebuilds nothing; a content change or --force rebuilds."""
    model = tmp_path / "c.onnx"
    model.write_bytes(mnist_bytes)
    scheduler = Scheduler(cache=EngineCache())
    try:
        def build(force=False, replace=False):
            job = scheduler.submit(BuildSpec(model, tmp_path / "c.engine", force=force, replace=replace))
            assert scheduler.wait(60)
            return job

        assert build().state is State.SUCCEEDED
        recorded = json.loads(sidecar_path(tmp_path / "c.engine").read_text())
        assert recorded["engine_bytes"] == (tmp_path / "c.engine").stat().st_size
        assert recorded["key"]["backend"] == "tensorrt-rtx"
        engine_mtime = (tmp_path / "c.engine").stat().st_mtime_ns
        assert build().state is State.SKIPPED
        os.utime(model)
        assert build().state is State.SKIPPED
        assert (tmp_path / "c.engine").stat().st_mtime_ns == engine_mtime, "skipping must not rewrite the engine"
        assert build(force=True).state is State.SUCCEEDED
        edited = onnx.load_from_string(mnist_bytes)
        edited.producer_name = "edited"
        model.write_bytes(edited.SerializeToString())
        assert build().state is State.SUCCEEDED
        (tmp_path / "c.engine").write_bytes(b"tampered")  # not the engine trt-tui recorded writing
        refused = build()
        assert refused.state is State.FAILED and "not an engine trt-tui wrote" in refused.outcome.error
        assert (tmp_path / "c.engine").read_bytes() == b"tampered", "a file of the user's must not be replaced"
        assert build(force=True).state is State.FAILED, "forcing a rebuild is no leave to replace it"
        assert build(force=True, replace=True).state is State.SUCCEEDED
    finally:
        scheduler.shutdown()


def test_changed_model_cancels_the_inflight_build_and_restarts(tmp_path, mnist_bytes):
    """Through the controller with real builds: a change during a long build restarts it."""
    from trt_tui.core.execution.executors import make_executor
    from trt_tui.core.model.samples import write_samples

    write_samples(tmp_path, ["densenet"])
    scheduler = Scheduler(executor=make_executor("process", cancel_grace=0.3), cache=EngineCache())
    controller = RebuildController(scheduler, lambda m: BuildSpec(m, m.with_suffix(".engine")))
    watcher = ModelWatcher([tmp_path], controller.handle)
    watcher.start()
    try:
        model = tmp_path / "densenet.onnx"
        controller.handle([ModelChange("added", model, 0.0)])
        first = controller.latest[model]
        deadline = time.monotonic() + 30
        while first.state is not State.BUILDING:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        shutil.copyfile(model, tmp_path / "copy.tmp")
        os.replace(tmp_path / "copy.tmp", model)  # a re-export: same content, new inode
        deadline = time.monotonic() + 10
        while controller.latest[model] is first:
            assert time.monotonic() < deadline, "the change was not picked up"
            time.sleep(0.05)
        deadline = time.monotonic() + 5
        while not first.final:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert first.state is State.CANCELLED
        second = controller.latest[model]
        assert second.state in (State.QUEUED, State.PARSING, State.BUILDING)
        scheduler.cancel(second.id)
        scheduler.cancel(second.id)
    finally:
        watcher.stop()
        scheduler.shutdown()
    assert not list(tmp_path.glob(".*.tmp"))


def test_headless_watch_builds_then_rebuilds_on_change(tmp_path, mnist_bytes):
    """`trt-tui watch --json`: builds what is there, rebuilds a changed model, skips a touched one."""
    model = tmp_path / "w.onnx"
    model.write_bytes(mnist_bytes)
    env = dict(os.environ, TRT_TUI_HISTORY=str(tmp_path / "h.sqlite3"), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "trt_tui", "watch", str(tmp_path), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    states: list[str] = []

    def read() -> None:
        for line in proc.stdout:
            data = json.loads(line)
            if data.get("event") == "state" and data["state"] in ("succeeded", "skipped", "failed"):
                states.append(data["state"])

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        def wait_states(n):
            deadline = time.monotonic() + 60
            while len(states) < n:
                assert time.monotonic() < deadline, states
                time.sleep(0.05)

        wait_states(1)
        edited = onnx.load_from_string(mnist_bytes)
        edited.producer_name = "edited"
        model.write_bytes(edited.SerializeToString())
        wait_states(2)
        os.utime(model)
        wait_states(3)
        assert states == ["succeeded", "succeeded", "skipped"]
    finally:
        proc.send_signal(2)
        proc.wait(20)
    assert proc.returncode == 0
    assert "Traceback" not in proc.stderr.read()


def test_ctrl_c_to_watch_names_the_build_it_cancelled(tmp_path, sample_dir):
    """Ctrl-C while `trt-tui watch` builds: the build is cancelled, named in one line, exit 130."""
    shutil.copy(sample_dir / "densenet.onnx", tmp_path / "slow.onnx")  # long enough to be interrupted
    env = dict(os.environ, TRT_TUI_HISTORY=str(tmp_path / "h.sqlite3"), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "trt_tui", "watch", str(tmp_path), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        for line in proc.stdout:
            event = json.loads(line)
            if event.get("event") == "phase_start":  # under way
                break
        proc.send_signal(2)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert f"trt-tui: stopped by SIGINT: cancelled {tmp_path / 'slow.onnx'}" in err, err
    assert "Traceback" not in err
    assert not (tmp_path / "slow.engine").exists()


async def test_app_w_key_watches_new_and_changed_models(tmp_path, mnist_bytes, monkeypatch):
    """`w` in the app: a new ONNX file appears in the picker and builds; a deleted one disappears."""
    from trt_tui.core.execution.session_settings import SessionSettings
    from trt_tui.ui.app import AppConfig, TrtTuiApp

    monkeypatch.setenv("TRT_TUI_HISTORY", str(tmp_path / "h.sqlite3"))
    models = tmp_path / "models"
    models.mkdir()
    app = TrtTuiApp(AppConfig(paths=[str(models)], session=SessionSettings(executor="thread")))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("w")
        assert app.watcher is not None and app.sub_title == "watching"
        await pilot.pause(0.3)
        (models / "new.onnx").write_bytes(mnist_bytes)
        deadline = time.monotonic() + 20
        while not (app.views and app.views[1].state.final):
            assert time.monotonic() < deadline, "the new model was not built"
            await pilot.pause(0.05)
        assert str(models / "new.onnx") in app.picker.models
        assert app.views[1].state is State.SUCCEEDED
        (models / "new.onnx").unlink()
        deadline = time.monotonic() + 10
        while str(models / "new.onnx") in app.picker.models:
            assert time.monotonic() < deadline, "the deleted model stayed in the picker"
            await pilot.pause(0.05)
        await pilot.press("w")
        assert app.watcher is None
        await pilot.press("q")


def test_a_change_whose_engine_another_build_holds_is_refused_and_the_rest_go_on(tmp_path, mnist_bytes):
    """One build per engine: where the engine of a changed model is being built by a build the
    controller did not start (the same engine under another name of the model), that change is
    refused in one line and the other changes of the batch still build (a refusal used to end the
    whole batch as "change handler failed")."""
    from trt_tui.core.model.samples import write_samples

    write_samples(tmp_path, ["densenet"])
    (tmp_path / "mnist.onnx").write_bytes(mnist_bytes)
    os.symlink(tmp_path / "densenet.onnx", tmp_path / "alias.onnx")
    densenet, mnist = tmp_path / "densenet.onnx", tmp_path / "mnist.onnx"
    engine = tmp_path / "densenet.engine"
    scheduler = Scheduler(cache=EngineCache())
    refused: list[tuple] = []
    controller = RebuildController(scheduler, lambda m: BuildSpec(m, engine if m.name == "alias.onnx" else
                                                                  m.with_suffix(".engine")),
                                   on_refused=lambda model, why: refused.append((model, why)))
    try:
        held = scheduler.submit(BuildSpec(densenet, engine))  # by hand: the controller does not track it
        controller.handle([ModelChange("changed", tmp_path / "alias.onnx", 0.0), ModelChange("added", mnist, 0.0)])
        assert [model for model, _ in refused] == [tmp_path / "alias.onnx"]
        assert "already building" in refused[0][1] and "\n" not in refused[0][1]
        built = controller.latest[mnist]
        deadline = time.monotonic() + 120
        while not built.final:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert built.state is State.SUCCEEDED
        scheduler.cancel(held.id)
    finally:
        scheduler.shutdown()
