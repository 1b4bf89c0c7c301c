"""Build fingerprints: why a build happens (real builds through the CLI), `history diff`, and the
migration of a history database written before fingerprints existed."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
from pathlib import Path

import numpy as np
import onnx
import pytest
from helpers import run_cli
from onnx import helper, numpy_helper

from trt_tui.core import sidecar
from trt_tui.core.build import BuildSpec
from trt_tui.core.cache import ContentHasher, EngineCache, sidecar_path
from trt_tui.core.events import State, StateChanged
from trt_tui.core.executors import ThreadExecutor
from trt_tui.core.fingerprint import Fingerprint, diff, model_changes, rebuild_reason
from trt_tui.core.history import History
from trt_tui.core.modelinfo import read_model_digests
from trt_tui.core.samples import write_samples
from trt_tui.core.scheduler import BuildJob, Scheduler

OLD_DB = Path(__file__).parent / "data" / "history-main-11cf61b.sqlite3"


def build(capsys, model: Path, history: Path, *extra: str) -> dict:
    """One real build through `trt-tui build --json`; returns the first state event after queued."""
    code, out, err = run_cli(capsys, "build", str(model), "--json", "--history", str(history), *extra)
    assert code == 0, err
    states = [e for e in map(json.loads, out.splitlines()) if e["event"] == "state"]
    assert states[0]["state"] == "queued" and states[0]["reason"] is None
    return states[1]


def edit_mnist(path: Path) -> None:
    """Change conv1.weight and add two unnamed nodes on a branch nothing reads."""
    model = onnx.load(path)
    graph = model.graph
    for i, init in enumerate(graph.initializer):
        if init.name == "conv1.weight":
            array = numpy_helper.to_array(init) * 0.5
            graph.initializer[i].CopyFrom(numpy_helper.from_array(array.astype(np.float32), "conv1.weight"))
    graph.node.append(helper.make_node("Relu", ["conv1"], ["spare1"]))
    graph.node.append(helper.make_node("Relu", ["spare1"], ["spare2"]))
    onnx.save(model, path)


@pytest.fixture
def mnist(tmp_path: Path) -> Path:
    (model,) = write_samples(tmp_path, ["mnist"])
    return model


def test_every_rebuild_says_why(mnist, tmp_path, capsys):
    history = tmp_path / "history.sqlite3"
    engine = mnist.with_suffix(".engine")

    assert build(capsys, mnist, history, "--opt-level", "3")["reason"] == "no engine yet"
    skipped = build(capsys, mnist, history, "--opt-level", "3")
    assert skipped["state"] == "skipped" and skipped["reason"] == "up to date"
    assert build(capsys, mnist, history, "--opt-level", "3", "--force")["reason"] == "--force"
    assert build(capsys, mnist, history, "--opt-level", "4")["reason"] == "options changed (--opt-level 3 → 4)"

    engine.unlink()
    assert build(capsys, mnist, history, "--opt-level", "4")["reason"] == "engine missing"
    # An engine changed on disk is not trt-tui's any more: it is not replaced without --force.
    for damage in ("bytes", "no sidecar", "empty sidecar"):
        engine.write_bytes(b"not the engine that was built")
        if damage == "no sidecar":
            sidecar_path(engine).unlink()
        elif damage == "empty sidecar":
            sidecar_path(engine).write_text("{}")
        code, _, err = run_cli(capsys, "build", str(mnist), "--json", "--history", str(history), "--opt-level", "4")
        assert code == 2 and "not an engine trt-tui wrote" in err, (damage, err)
        assert engine.read_bytes() == b"not the engine that was built"
        assert build(capsys, mnist, history, "--opt-level", "4", "--force")["reason"] == "--force"

    edit_mnist(mnist)
    assert build(capsys, mnist, history, "--opt-level", "4")["reason"] == (
        "model changed: initializer conv1.weight changed; 2 nodes added")

    # Another backend version: the engine was built by a TensorRT-RTX other than this one.
    sidecar = sidecar_path(engine)
    record = json.loads(sidecar.read_text())
    version = record["key"]["backend_version"]
    record["key"]["backend_version"] = record["fingerprint"]["backend_version"] = "1.6.0.1"
    sidecar.write_text(json.dumps(record))
    assert build(capsys, mnist, history, "--opt-level", "4")["reason"] == (
        f"backend tensorrt-rtx 1.6.0.1 → tensorrt-rtx {version}")
    assert build(capsys, mnist, history, "--opt-level", "4")["reason"] == "up to date"

    # The plain renderer says it on the state's line, whichever executor runs the build.
    code, out, _ = run_cli(capsys, "build", str(mnist), "--history", str(history), "--opt-level", "2",
                           "--executor", "process")
    assert code == 0
    assert f"[{mnist}] parsing (why: options changed (--opt-level 4 → 2))" in out.splitlines()


def test_history_lists_ids_and_json(mnist, tmp_path, capsys):
    history = tmp_path / "history.sqlite3"
    build(capsys, mnist, history)
    build(capsys, mnist, history)
    code, out, _ = run_cli(capsys, "history", "--history", str(history), "--json")
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["state"] for r in rows] == ["skipped", "succeeded"]
    assert set(rows[0]) >= {"id", "model", "state", "started", "duration", "engine_bytes", "backend"}
    assert rows[1]["engine_bytes"] == mnist.with_suffix(".engine").stat().st_size
    assert rows[0]["id"] > rows[1]["id"] and rows[0]["model"] == str(mnist.resolve())
    code, out, _ = run_cli(capsys, "history", "--history", str(history))
    lines = out.splitlines()
    assert lines[0].split()[0] == "ID" and lines[1].split()[0] == str(rows[0]["id"])
    # `history MODEL` still works beside `history diff`.
    code, out, _ = run_cli(capsys, "history", "mnist.onnx", "--history", str(history))
    assert code == 0 and len(out.splitlines()) == 3


def test_history_diff_by_ids_and_by_model(mnist, tmp_path, capsys):
    history = tmp_path / "history.sqlite3"
    build(capsys, mnist, history, "--opt-level", "3")
    edit_mnist(mnist)
    build(capsys, mnist, history, "--opt-level", "1")
    with History(history) as h:
        first, second = sorted(r.id for r in h.builds())

    code, out, err = run_cli(capsys, "history", "diff", str(first), str(second), "--history", str(history))
    assert code == 0, err
    assert "  option: --opt-level 3 → 1" in out
    assert "  model: initializer conv1.weight changed" in out and "  model: 2 nodes added" in out
    lines = out.splitlines()
    phases = lines[lines.index("phases (by change in time): before → after, ×, phase") + 1:-1]
    assert phases and all("→" in line and "Building engine" in line for line in phases)
    assert lines[-1].startswith("engine: ")

    code, out, _ = run_cli(capsys, "history", "diff", "mnist.onnx", "--json", "--history", str(history))
    assert code == 0
    result = json.loads(out)
    assert (result["a"]["id"], result["b"]["id"]) == (first, second)
    assert {"what": "option", "change": "--opt-level 3 → 1"} in result["changes"]
    assert {"what": "model", "change": "initializer conv1.weight changed"} in result["changes"]
    changes = [abs(p["change"]) for p in result["phases"]]
    assert changes == sorted(changes, reverse=True)
    top = result["phases"][0]
    assert top["phase"].startswith("Building engine") and top["before"] > 0 and top["after"] > 0
    assert top["ratio"] == pytest.approx(top["after"] / top["before"])
    # The text lists the same phase first, with the same times.
    assert phases[0].split() == [f"{top['before']:.3f}s", "→", f"{top['after']:.3f}s", f"{top['ratio']:.2f}×",
                                 *top["phase"].split()]
    assert result["engine_bytes"]["after"] == mnist.with_suffix(".engine").stat().st_size


def test_history_diff_errors_are_one_line(mnist, tmp_path, capsys):
    history = tmp_path / "history.sqlite3"
    code, _, err = run_cli(capsys, "history", "diff", "1", "2", "--history", str(history))
    assert code == 2 and err.count("\n") == 1 and "no build history" in err
    assert not history.exists()
    build(capsys, mnist, history)
    code, _, err = run_cli(capsys, "history", "diff", "1", "99", "--history", str(history))
    assert code == 2 and err.strip() == f"trt-tui: history diff: no build with id 99 in {history} (see `trt-tui history`)"
    code, _, err = run_cli(capsys, "history", "diff", "mnist.onnx", "--history", str(history))
    assert code == 2 and err.strip() == ("trt-tui: history diff: mnist.onnx: 1 successful build in history, need two to"
                                  " compare (two ids compare any builds: see `trt-tui history mnist.onnx`)")
    code, _, err = run_cli(capsys, "history", "diff", "--history", str(history))
    assert code == 2 and err.count("\n") == 1


def test_an_old_history_database_migrates_in_place(mnist, tmp_path, capsys):
    """A database written by main before fingerprints (commit 11cf61b): its builds stay, the new
    column is added, new builds record fingerprints, and `history diff` still compares old builds."""
    path = tmp_path / "old.sqlite3"
    shutil.copy(OLD_DB, path)
    with sqlite3.connect(path) as db:
        assert "fingerprint" not in {row[1] for row in db.execute("PRAGMA table_info(builds)")}
    code, out, _ = run_cli(capsys, "history", "--history", str(path), "--json")
    assert code == 0
    old = [json.loads(line) for line in out.splitlines()]
    assert [r["id"] for r in old] == [2, 1] and {r["state"] for r in old} == {"succeeded"}
    with sqlite3.connect(path) as db:
        assert "fingerprint" in {row[1] for row in db.execute("PRAGMA table_info(builds)")}

    code, out, _ = run_cli(capsys, "history", "diff", "1", "2", "--history", str(path))
    assert code == 0 and "fingerprint: not recorded for either build" in out and "phases" in out

    build(capsys, mnist, path)
    with History(path) as h:
        records = h.builds(limit=10)
        assert len(records) == 3 and h.schema_version == 1
        assert records[0].fingerprint["model"]["initializers"].keys() >= {"conv1.weight", "fc.bias"}
        assert records[0].model_hash == records[0].fingerprint["model"]["hash"]
        assert records[1].fingerprint is None
    # The model's digests are kept once per model content, not in every row.
    build(capsys, mnist, path, "--force")
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM model_digests").fetchone() == (1,)
        rows = [json.loads(text) for (text,) in db.execute("SELECT fingerprint FROM builds WHERE fingerprint IS NOT NULL")]
        assert len(rows) == 2 and all(set(row["model"]) == {"hash"} for row in rows)
    # Opening it again changes nothing.
    History(path).close()


def test_model_digests_name_what_changed(mnist, tmp_path):
    before = read_model_digests(mnist)
    assert list(before.nodes) == ["conv1", "relu1", "pool1", "conv2", "relu2", "pool2", "flatten", "fc"]
    edit_mnist(mnist)
    after = read_model_digests(mnist)
    assert [k for k in after.initializers if after.initializers[k] != before.initializers[k]] == ["conv1.weight"]
    assert list(after.nodes)[8:] == ["#8 Relu", "#9 Relu"]
    assert all(after.nodes[k] == v for k, v in before.nodes.items())


def _fp(**model) -> Fingerprint:
    base = {"hash": "h0", "initializers": {}, "nodes": {}, "inputs": [["input", "float32", "1×1×28×28"]],
            "opsets": {"": 17}}
    base.update(model)
    return Fingerprint(base, {"opt_level": None}, "tensorrt-rtx", "1.7", "0.1.0", {"cpu": "x", "cores": 2}, None)


def test_model_changes_name_five_then_count():
    before = _fp(initializers={f"w{i}": "a" for i in range(8)})
    after = _fp(hash="h1", initializers={f"w{i}": "b" for i in range(8)}, nodes={"n": "x"},
                inputs=[["input", "float16", "1×1×28×28"]], opsets={"": 18})
    assert model_changes(before.model, after.model) == [
        "input input 1×1×28×28 float32 → 1×1×28×28 float16", "opset 17 → 18",
        "initializers w0, w1, w2, w3, w4 and 3 more changed", "1 node added"]
    assert model_changes(before.model, before.model) == []
    reason = rebuild_reason(force=False, engine_exists=True, recorded={}, engine_matches=True, old=before,
                            old_key=None, new=after)
    assert reason.startswith("model changed: input input")
    assert rebuild_reason(force=False, engine_exists=True, recorded={"engine_bytes": 1}, engine_matches=True,
                          old=None, old_key=None, new=after) == "build record unreadable"


def test_diff_is_pure_and_sorted_by_absolute_change():
    a, b = _fp(), _fp()
    result = diff(a, b, {"x": 1.0, "y": 5.0, "gone": 0.5}, {"x": 4.0, "y": 4.5, "new": 0.2}, 100, 120)
    assert result["changes"] == []
    assert [p["phase"] for p in result["phases"]] == ["x", "y", "gone", "new"]
    assert result["phases"][0]["ratio"] == 4.0 and result["phases"][2]["after"] is None
    assert result["engine_bytes"] == {"before": 100, "after": 120}


async def test_app_key_shows_the_diff_against_the_previous_build(mnist, tmp_path, capsys):
    """D on a finished build opens the same diff as `history diff`, against the model's previous build."""
    from trt_tui.core.session_settings import SessionSettings
    from trt_tui.ui.app import AppConfig, TrtTuiApp
    from trt_tui.ui.widgets.diff_panel import DiffPanel

    history = tmp_path / "history.sqlite3"
    build(capsys, mnist, history, "--opt-level", "3")
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


class GatedHasher(ContentHasher):
    """Hashes `model` only once `gate` is set: stands in for a model large enough that hashing it
    takes longer than the build's first phases."""

    def __init__(self, model: Path) -> None:
        super().__init__()
        self.model, self.gate = model.resolve(), threading.Event()

    def file_hash(self, path: Path) -> str:
        if path.resolve() == self.model:
            assert self.gate.wait(60), "never let through"
        return super().file_hash(path)


def build_gated(model: Path, output: Path, force: bool, on_building) -> BuildJob:
    """One real build through a Scheduler whose hasher waits for the build to reach BUILDING; there
    `on_building()` runs, then the hashing goes on."""
    hasher = GatedHasher(model)
    scheduler = Scheduler(executor=ThreadExecutor(vitals=None), cache=EngineCache(hasher))

    def watch(job, events) -> None:
        if any(type(e) is StateChanged and e.state is State.BUILDING for e in events):
            on_building()
            hasher.gate.set()

    scheduler.subscribe(watch)
    try:
        job = scheduler.submit(BuildSpec(model, output, force=force))
        assert scheduler.wait(60) and hasher.gate.is_set(), "the build waited for its model to be hashed"
    finally:
        hasher.gate.set()
        scheduler.shutdown()
    return job


@pytest.mark.parametrize("force", [False, True], ids=["no engine yet", "--force"])
def test_a_build_that_happens_anyway_does_not_wait_for_its_model_to_be_hashed(mnist, tmp_path, force):
    engine = tmp_path / "mnist.engine"
    job = build_gated(mnist, engine, force, lambda: None)
    assert job.state is State.SUCCEEDED, job.outcome
    # hashed beside the build, the fingerprint still reaches the engine's record and the history
    assert job.fingerprint is not None and job.fingerprint.model["hash"]
    assert json.loads(sidecar_path(engine).read_text())["key"] == job.fingerprint.key()
    assert EngineCache().decide(BuildSpec(mnist, engine)).reason == "up to date"


def test_a_model_edited_while_it_builds_is_built_again_next_time(mnist, tmp_path, capsys):
    """The build has read the old model; the hashing reads the edited one. Recording that hash would
    call the old engine current; instead it gets no key, and the next build says why."""
    engine = tmp_path / "mnist.engine"
    job = build_gated(mnist, engine, False, lambda: edit_mnist(mnist))
    assert job.state is State.SUCCEEDED, job.outcome
    assert job.fingerprint is None
    assert json.loads(sidecar_path(engine).read_text())["key"] is None
    again = build(capsys, mnist, tmp_path / "history.sqlite3", "-o", str(engine))
    assert again["state"] == "parsing" and again["reason"] == "model changed while its engine was built"
    assert build(capsys, mnist, tmp_path / "history.sqlite3", "-o", str(engine))["reason"] == "up to date"


class CountingHasher(ContentHasher):
    """A hasher with no memo of its own (a new process's) that keeps the paths it read."""

    def __init__(self) -> None:
        super().__init__()
        self.read: list[Path] = []

    def hash_and_stamp(self, path: Path):
        self.read.append(Path(path))
        return super().hash_and_stamp(path)


def test_an_unchanged_model_and_engine_are_checked_without_reading_them(mnist, tmp_path, capsys, monkeypatch):
    """The engine's record keeps each file's stamp from when it was hashed: checking an engine that is
    up to date reads neither the model nor the engine (for ResNet-50, 200 MB a check), while any
    change to either, even one that keeps its size and mtime, has it read again."""
    import os

    from trt_tui.core import cache as cache_module
    from trt_tui.core import fingerprint as fingerprint_module

    engine = tmp_path / "mnist.engine"
    history = tmp_path / "history.sqlite3"
    assert build(capsys, mnist, history, "-o", str(engine))["reason"] == "no engine yet"
    spec = BuildSpec(mnist, engine)
    digests_read = []
    monkeypatch.setattr(cache_module, "read_digests", lambda model, *rest: (
        digests_read.append(model), fingerprint_module.read_digests(model, *rest))[1])

    def check() -> tuple[str, list[Path]]:
        hasher = CountingHasher()
        fingerprint_module._digest_memo.clear()
        digests_read.clear()
        reason = EngineCache(hasher).decide(spec).reason
        return reason, sorted({*hasher.read, *digests_read})

    assert check() == ("up to date", [])
    hasher = CountingHasher()  # the engine's own check before a build over it
    assert sidecar.written_by_us(engine, sha256=hasher.file_hash) and hasher.read == []

    os.utime(mnist)  # touched, the same bytes: read again, once, and still up to date
    assert check() == ("up to date", [mnist])
    assert check() == ("up to date", []), "a touched model is hashed once, not at every check until a build"
    os.utime(engine)  # the engine too (copied back, restored by a checkout): hashed once
    assert check() == ("up to date", [engine])
    assert check() == ("up to date", [])
    assert build(capsys, mnist, history, "-o", str(engine))["state"] == "skipped"

    # Other bytes of the same size, the mtime put back: the ctime still tells, and it is hashed.
    st = engine.stat()
    data = bytearray(engine.read_bytes())
    data[-1] ^= 0xFF
    engine.write_bytes(bytes(data))
    os.utime(engine, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert engine.stat().st_size == st.st_size and engine.stat().st_mtime_ns == st.st_mtime_ns
    reason, read = check()
    assert reason == "engine changed on disk" and engine in read


def test_new_stamps_never_overwrite_a_record_written_since_it_was_read(mnist, tmp_path, capsys):
    """A check that found a touched file unchanged writes its new stamp into the engine's record, but
    not over a record a build wrote in the meantime (that would give the new engine the old one's
    hash, and the next build would refuse to replace "another tool's" file); nor does it vouch for an
    engine whose stamp changed again after it was hashed."""
    import os

    engine = tmp_path / "mnist.engine"
    build(capsys, mnist, tmp_path / "history.sqlite3", "-o", str(engine))
    read_then = sidecar.read(engine)
    os.utime(engine)
    hashed = sidecar.stamp_of(engine)
    written_since = {**read_then, "engine_sha256": "0" * 64}
    sidecar.sidecar_path(engine).write_text(json.dumps(written_since))
    assert not sidecar.restamp(engine, read_then, hashed, None)
    assert sidecar.read(engine) == written_since

    sidecar.sidecar_path(engine).write_text(json.dumps(read_then))
    os.utime(engine, ns=(1, 1))  # changed after it was hashed
    assert sidecar.restamp(engine, read_then, hashed, None)
    assert sidecar.read(engine)["stamps"]["engine"] is None  # so the next check hashes it
    assert sidecar.written_by_us(engine)  # the bytes are still the ones recorded


# -- digests kept across processes (core/digest_store) ---------------------------------------------


def _fresh_process_fingerprint(model: Path, output: Path):
    """The fingerprint a new `trt-tui build` process would take: nothing remembered in memory."""
    from trt_tui.core import fingerprint as fp

    fp._digest_memo.clear()
    return EngineCache(ContentHasher())._fingerprint(BuildSpec(model, output))[0]


def test_a_models_digests_are_kept_for_the_next_process(tmp_path, monkeypatch) -> None:
    """The next process building the same model (to another engine: no record there) takes its
    digests from the store instead of walking the model; a changed model is walked again, and a
    store file that was tampered with is walked past. The fingerprints are the same either way."""
    from trt_tui.core import fingerprint as fp

    monkeypatch.setenv("TRT_TUI_CACHE", str(tmp_path / "cache"))
    write_samples(tmp_path, ["mnist"])
    model = tmp_path / "mnist.onnx"
    walks = []
    monkeypatch.setattr(fp, "read_model_digests", lambda p: walks.append(p) or read_model_digests(p))

    first = _fresh_process_fingerprint(model, tmp_path / "a.engine")
    second = _fresh_process_fingerprint(model, tmp_path / "b.engine")
    assert len(walks) == 1 and second.model == first.model and second.key() == first.key()
    (kept,) = (tmp_path / "cache" / "model-digests").iterdir()
    assert kept.name == f"{ContentHasher().file_hash(model)}.json"

    kept.write_text(kept.read_text()[:40])  # cut short: not trusted
    assert _fresh_process_fingerprint(model, tmp_path / "c.engine").model == first.model
    assert len(walks) == 2

    changed = onnx.load(str(model))
    changed.graph.initializer[0].raw_data = bytes(len(changed.graph.initializer[0].raw_data))
    onnx.save(changed, str(model))
    third = _fresh_process_fingerprint(model, tmp_path / "d.engine")
    assert len(walks) == 3 and third.model["hash"] != first.model["hash"]
    assert third.model["initializers"] != first.model["initializers"]


def test_a_model_with_external_data_is_not_kept(tmp_path, monkeypatch) -> None:
    """Where a model's data files are depends on where its copy is, not on its bytes alone."""
    monkeypatch.setenv("TRT_TUI_CACHE", str(tmp_path / "cache"))
    write_samples(tmp_path, ["mnist"])
    model = onnx.load(str(tmp_path / "mnist.onnx"))
    onnx.save(model, str(tmp_path / "ext.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="ext.data", size_threshold=0)
    taken = _fresh_process_fingerprint(tmp_path / "ext.onnx", tmp_path / "e.engine")
    assert taken.model["initializers"]
    assert not (tmp_path / "cache" / "model-digests").exists() or not any((tmp_path / "cache" / "model-digests").iterdir())


def test_the_digest_store_stays_bounded(tmp_path, monkeypatch) -> None:
    """A watched model makes a new content at every save: the oldest digests go beyond `KEEP`."""
    from trt_tui.core import digest_store

    monkeypatch.setenv("TRT_TUI_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(digest_store, "KEEP", 3)
    write_samples(tmp_path, ["mnist"])
    model = tmp_path / "mnist.onnx"
    digests = read_model_digests(model)
    for n in range(5):
        digest_store.save(f"{n:064x}", digests)
        os.utime(tmp_path / "cache" / "model-digests" / f"{n:064x}.json", ns=(n * 10**9, n * 10**9))
    kept = sorted(p.stem for p in (tmp_path / "cache" / "model-digests").iterdir())
    assert kept == [f"{n:064x}" for n in (2, 3, 4)]
    assert digest_store.load(f"{4:064x}", model).nodes == digests.nodes
