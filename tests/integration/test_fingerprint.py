"""Build fingerprints: why a build happens (real builds through the CLI), `history diff`, and the
migration of a history database written before fingerprints existed."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from support.commands import build_json, run_cli
from support.history import OLD_DB
from support.models import edit_mnist

from trt_tui.core.cache.engine_cache import sidecar_path
from trt_tui.core.history.diff import TOO_SHORT
from trt_tui.core.history.records import History
from trt_tui.core.model.samples import write_samples


@pytest.fixture
def mnist(tmp_path: Path) -> Path:
    (model,) = write_samples(tmp_path, ["mnist"])
    return model


def test_every_rebuild_says_why(mnist, tmp_path, capsys):
    history = tmp_path / "history.sqlite3"
    engine = mnist.with_suffix(".engine")

    assert build_json(capsys, mnist, history, "--opt-level", "3")["reason"] == "no engine yet"
    skipped = build_json(capsys, mnist, history, "--opt-level", "3")
    assert skipped["state"] == "skipped" and skipped["reason"] == "up to date"
    assert build_json(capsys, mnist, history, "--opt-level", "3", "--force")["reason"] == "--force"
    assert build_json(capsys, mnist, history, "--opt-level", "4")["reason"] == "options changed (--opt-level 3 → 4)"

    engine.unlink()
    assert build_json(capsys, mnist, history, "--opt-level", "4")["reason"] == "engine missing"
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
        assert build_json(capsys, mnist, history, "--opt-level", "4", "--force")["reason"] == "--force"

    edit_mnist(mnist)
    assert build_json(capsys, mnist, history, "--opt-level", "4")["reason"] == (
        "model changed: initializer conv1.weight changed; 2 nodes added")

    # Another backend version: the engine was built by a TensorRT-RTX other than this one.
    sidecar = sidecar_path(engine)
    record = json.loads(sidecar.read_text())
    version = record["key"]["backend_version"]
    record["key"]["backend_version"] = record["fingerprint"]["backend_version"] = "1.6.0.1"
    sidecar.write_text(json.dumps(record))
    assert build_json(capsys, mnist, history, "--opt-level", "4")["reason"] == (
        f"backend tensorrt-rtx 1.6.0.1 → tensorrt-rtx {version}")
    assert build_json(capsys, mnist, history, "--opt-level", "4")["reason"] == "up to date"

    # The plain renderer says it on the state's line, whichever executor runs the build.
    code, out, _ = run_cli(capsys, "build", str(mnist), "--history", str(history), "--opt-level", "2",
                           "--executor", "process")
    assert code == 0
    assert f"[{mnist}] parsing (why: options changed (--opt-level 4 → 2))" in out.splitlines()


def test_history_lists_ids_and_json(mnist, tmp_path, capsys):
    history = tmp_path / "history.sqlite3"
    build_json(capsys, mnist, history)
    build_json(capsys, mnist, history)
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
    build_json(capsys, mnist, history, "--opt-level", "3")
    edit_mnist(mnist)
    build_json(capsys, mnist, history, "--opt-level", "1")
    with History(history) as h:
        first, second = sorted(r.id for r in h.builds())

    code, out, err = run_cli(capsys, "history", "diff", str(first), str(second), "--history", str(history))
    assert code == 0, err
    assert "  option: --opt-level 3 → 1" in out
    assert "  model: initializer conv1.weight changed" in out and "  model: 2 nodes added" in out
    lines = out.splitlines()
    phases = [line for line in lines[lines.index("phases (by change in time): before → after, ×, phase") + 1:-1]
              if "→" in line]
    assert phases and all("Building engine" in line for line in phases)
    assert lines[-1].startswith("engine: ")

    code, out, _ = run_cli(capsys, "history", "diff", "mnist.onnx", "--json", "--history", str(history))
    assert code == 0
    result = json.loads(out)
    assert (result["a"]["id"], result["b"]["id"]) == (first, second)
    assert {"what": "option", "change": "--opt-level 3 → 1"} in result["changes"]
    assert {"what": "model", "change": "initializer conv1.weight changed"} in result["changes"]
    changes = [abs(p["change"]) for p in result["phases"]]
    assert changes == sorted(changes, reverse=True)
    # The text lists only phases of 10 ms or more in either build (JSON lists all): its first line is the
    # first of those, with the same times. MNIST's phases are short: which ones pass varies run to run.
    top = next(p for p in result["phases"] if max(p["before"] or 0.0, p["after"] or 0.0) >= TOO_SHORT)
    assert top["phase"].startswith("Building engine") and top["before"] > 0 and top["after"] > 0
    assert top["ratio"] == pytest.approx(top["after"] / top["before"])
    assert phases[0].split() == [f"{top['before']:.3f}s", "→", f"{top['after']:.3f}s", f"{top['ratio']:.2f}×",
                                 *top["phase"].split()]
    assert result["engine_bytes"]["after"] == mnist.with_suffix(".engine").stat().st_size


def test_history_diff_errors_are_one_line(mnist, tmp_path, capsys):
    history = tmp_path / "history.sqlite3"
    code, _, err = run_cli(capsys, "history", "diff", "1", "2", "--history", str(history))
    assert code == 2 and err.count("\n") == 1 and "no build history" in err
    assert not history.exists()
    build_json(capsys, mnist, history)
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
    assert code == 0 and "fingerprint: no fingerprint for either build" in out and "phases" in out

    build_json(capsys, mnist, path)
    with History(path) as h:
        records = h.builds(limit=10)
        assert len(records) == 3 and h.schema_version == 1
        assert records[0].fingerprint["model"]["initializers"].keys() >= {"conv1.weight", "fc.bias"}
        assert records[0].model_hash == records[0].fingerprint["model"]["hash"]
        assert records[1].fingerprint is None
    # The model's digests are kept once per model content, not in every row.
    build_json(capsys, mnist, path, "--force")
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM model_digests").fetchone() == (1,)
        rows = [json.loads(text) for (text,) in db.execute("SELECT fingerprint FROM builds WHERE fingerprint IS NOT NULL")]
        assert len(rows) == 2 and all(set(row["model"]) == {"hash"} for row in rows)
    # Opening it again changes nothing.
    History(path).close()


# -- digests kept across processes (core/digest_store) ---------------------------------------------
