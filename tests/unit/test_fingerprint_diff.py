"""What differs between two fingerprints: model digests and their wording, no build.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.models import edit_mnist

from trt_tui.core.cache.fingerprint import Fingerprint, diff, model_changes, rebuild_reason
from trt_tui.core.model.modelinfo import read_model_digests
from trt_tui.core.model.samples import write_samples


@pytest.fixture
def mnist(tmp_path: Path) -> Path:
    (model,) = write_samples(tmp_path, ["mnist"])
    return model


def _fp(**model) -> Fingerprint:
    base = {"hash": "h0", "initializers": {}, "nodes": {}, "inputs": [["input", "float32", "1×1×28×28"]],
            "opsets": {"": 17}}
    base.update(model)
    return Fingerprint(base, {"opt_level": None}, "tensorrt-rtx", "1.7", "0.1.0", {"cpu": "x", "cores": 2}, None)


def test_model_digests_name_what_changed(mnist, tmp_path):
    before = read_model_digests(mnist)
    assert list(before.nodes) == ["conv1", "relu1", "pool1", "conv2", "relu2", "pool2", "flatten", "fc"]
    edit_mnist(mnist)
    after = read_model_digests(mnist)
    assert [k for k in after.initializers if after.initializers[k] != before.initializers[k]] == ["conv1.weight"]
    assert list(after.nodes)[8:] == ["#8 Relu", "#9 Relu"]
    assert all(after.nodes[k] == v for k, v in before.nodes.items())


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
