"""A model's digests kept across processes: kept, refused for external data, bounded.
"""

from __future__ import annotations

import os
from pathlib import Path

import onnx
import pytest

from trt_tui.core.build.driver import BuildSpec
from trt_tui.core.cache.engine_cache import ContentHasher, EngineCache
from trt_tui.core.model.modelinfo import read_model_digests
from trt_tui.core.model.samples import write_samples


@pytest.fixture
def mnist(tmp_path: Path) -> Path:
    (model,) = write_samples(tmp_path, ["mnist"])
    return model


def _fresh_process_fingerprint(model: Path, output: Path):
    """The fingerprint a new `trt-tui build` process would take: nothing remembered in memory."""
    from trt_tui.core.cache import fingerprint as fp

    fp._digest_memo.clear()
    return EngineCache(ContentHasher())._fingerprint(BuildSpec(model, output))[0]


def test_a_models_digests_are_kept_for_the_next_process(tmp_path, monkeypatch) -> None:
    """The next process building the same model (to another engine: no record there) takes its
    digests from the store instead of walking the model; a changed model is walked again, and a
    store file that was tampered with is walked past. The fingerprints are the same either way."""
    from trt_tui.core.cache import fingerprint as fp

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
    from trt_tui.core.cache import digest_store

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
