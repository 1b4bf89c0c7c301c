"""An impossible measured peak stays out of the forecast: a 45 KiB MNIST once recorded at 1.1 GiB (a
spare's heap reserve counted as its own) made every later MNIST forecast "~1.1 GiB"."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess

from trt_tui.core.history.records import History

MiB = 1 << 20


def _build(cli_env, trt_tui_command, *args) -> subprocess.CompletedProcess:
    result = subprocess.run([*trt_tui_command, "build", *map(str, args)], env=cli_env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result


def test_a_peak_far_beyond_the_models_size_is_not_forecast_and_said(tmp_path, sample_dir, cli_env, trt_tui_command):
    history = tmp_path / "h.sqlite3"
    model = tmp_path / "mnist.onnx"
    shutil.copy(sample_dir / "mnist.onnx", model)
    _build(cli_env, trt_tui_command, model, "--force", "--json", "--history", history)
    with History(history) as h:
        [first] = h.builds()
    measured = first.peak_rss_bytes
    assert measured and first.model_bytes and first.model_hash
    # What the demo's history held: the MNIST build recorded with the spare's reserve in its peak, and a
    # DenseNet (700 times larger) that needed less.
    db = sqlite3.connect(history)
    db.execute("UPDATE builds SET peak_rss_bytes = ? WHERE id = ?", (1126 * MiB, first.id))
    db.commit()
    db.close()
    with History(history) as h:
        h.record(model=tmp_path / "densenet.onnx", model_hash="densenet-content", options=first.options,
                 backend=first.backend, backend_version=first.backend_version, state="succeeded", error=None,
                 started=first.started + 1, duration=20.0, engine_bytes=1, phases={}, peak_rss_bytes=990 * MiB,
                 model_bytes=32 * MiB)
    result = _build(cli_env, trt_tui_command, model, "--force", "--json", "--history", history)
    queued = next(r for r in map(json.loads, result.stdout.splitlines()) if r["event"] == "state")
    forecast = queued["forecast"]
    assert forecast["left_out"] == 1, forecast
    assert forecast["peak_bytes"] is None or forecast["peak_bytes"] < 512 * MiB, forecast
    text = _build(cli_env, trt_tui_command, model, "-o", tmp_path / "m.engine", "--force", "--history", history)
    assert "1 implausible peak left out" in text.stdout, text.stdout
    # The builds since measured MNIST again: its forecast is its own real peak once more.
    assert "~1.1 GiB" not in text.stdout
