"""The engine cache with real builds: what it hashes and when, a model edited mid-build, stamps.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from support.commands import build_json
from support.models import edit_mnist

from trt_tui.core.build import sidecar
from trt_tui.core.build.driver import BuildSpec
from trt_tui.core.build.events import STATE_EVENTS, State
from trt_tui.core.cache.engine_cache import ContentHasher, EngineCache, sidecar_path
from trt_tui.core.execution.executors import ThreadExecutor
from trt_tui.core.execution.scheduler import BuildJob, Scheduler
from trt_tui.core.model.samples import write_samples


@pytest.fixture
def mnist(tmp_path: Path) -> Path:
    (model,) = write_samples(tmp_path, ["mnist"])
    return model


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
        if any(isinstance(e, STATE_EVENTS) and e.state is State.BUILDING for e in events):
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


class CountingHasher(ContentHasher):
    """A hasher with no memo of its own (a new process's) that keeps the paths it read."""

    def __init__(self) -> None:
        super().__init__()
        self.read: list[Path] = []

    def hash_and_stamp(self, path: Path):
        self.read.append(Path(path))
        return super().hash_and_stamp(path)


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
    again = build_json(capsys, mnist, tmp_path / "history.sqlite3", "-o", str(engine))
    assert again["state"] == "parsing" and again["reason"] == "model changed while its engine was built"
    assert build_json(capsys, mnist, tmp_path / "history.sqlite3", "-o", str(engine))["reason"] == "up to date"


def test_an_unchanged_model_and_engine_are_checked_without_reading_them(mnist, tmp_path, capsys, monkeypatch):
    """The engine's record keeps each file's stamp from when it was hashed: checking an engine that is
    up to date reads neither the model nor the engine (for ResNet-50, 200 MB a check), while any
    change to either, even one that keeps its size and mtime, has it read again."""
    import os

    from trt_tui.core.cache import engine_cache as cache_module
    from trt_tui.core.cache import fingerprint as fingerprint_module

    engine = tmp_path / "mnist.engine"
    history = tmp_path / "history.sqlite3"
    assert build_json(capsys, mnist, history, "-o", str(engine))["reason"] == "no engine yet"
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
    assert build_json(capsys, mnist, history, "-o", str(engine))["state"] == "skipped"

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
    build_json(capsys, mnist, tmp_path / "history.sqlite3", "-o", str(engine))
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
