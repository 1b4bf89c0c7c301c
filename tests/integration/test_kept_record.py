"""The history keeps a build's log, stacks and trace path: `trt-tui history log N` prints the log, and a
bundle made later (`trt-tui bundle N`) holds it, with a command that rebuilds the same way. Logs are
bounded by `$TRT_TUI_HISTORY_LOGS`, the oldest dropped first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from trt_tui.core.history.kept import Kept
from trt_tui.core.history.records import History


def cli(*args, env: dict, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trt_tui", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=300, cwd=cwd)


def test_a_failed_headless_builds_log_is_kept_printed_and_bundled(tmp_path, cli_env):
    from onnx import TensorProto, helper, save

    model = tmp_path / "broken.onnx"  # an op TensorRT has no importer for: its parser logs why, then fails
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("NoSuchOp", ["r"], ["y"])],
                              "g", [x], [y])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    history = tmp_path / "h.sqlite3"
    done = cli("build", model, "--history", history, "--json", "--force", env=cli_env)
    assert done.returncode != 0
    states = [e for e in map(json.loads, done.stdout.splitlines()) if e["event"] == "state"]
    logged = [e["message"] for e in map(json.loads, done.stdout.splitlines()) if e["event"] == "log"]
    assert states[-1]["state"] == "failed" and logged, done.stdout
    number = states[-1]["id"]

    printed = cli("history", "log", number, "--history", history, env=cli_env)
    assert printed.returncode == 0, printed.stderr
    lines = printed.stdout.splitlines()
    assert len(lines) == len(logged) and all(m.split("\n")[0] in line for m, line in zip(logged, lines)), lines
    assert all(" E " in line or " W " in line or " I " in line or " V " in line or " F " in line for line in lines)

    out = tmp_path / "bundle.tar.gz"
    bundled = cli("bundle", number, "--history", history, "-o", out, "--no-model", env=cli_env)
    assert bundled.returncode == 0, bundled.stderr
    with tarfile.open(out) as tar:
        got = {m.name.split("/", 1)[1]: tar.extractfile(m).read().decode() for m in tar.getmembers()}
    assert got["log.txt"].splitlines() == lines  # the kept log, as `history log` prints it
    assert json.loads(got["build.json"])["state"] == "failed"
    command = got["command.txt"].strip()
    assert " --force" in command and f"-o {model.with_suffix('.engine')}" in command, command

    missing = cli("history", "log", number + 100, "--history", history, env=cli_env)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "no build" in missing.stderr


def test_the_log_limit_drops_the_oldest_logs_first(tmp_path, monkeypatch):
    monkeypatch.setenv("TRT_TUI_HISTORY_LOGS", "80K")
    with History(tmp_path / "h.sqlite3") as h:
        ids = []
        for _ in range(4):  # ~33 KiB each compressed (random hex text halves, no more): two fit
            lines = [os.urandom(300).hex() for _line in range(100)]
            ids.append(h.record(model=tmp_path / "m.onnx", model_hash=None, options={}, backend="b",
                                backend_version="1", state="failed", error="e", started=time.time(), duration=1.0,
                                engine_bytes=None, phases={}, kept=Kept(lines, [], None, None)))
        kept = [h.kept(i) for i in ids]
        assert [k is not None for k in kept] == [False, False, True, True], "the newest are kept, the oldest go"
        assert all(h.get(i) is not None for i in ids), "a build's record stays when its log goes"
    monkeypatch.setenv("TRT_TUI_HISTORY_LOGS", "lots")
    from trt_tui.core.history.records import HistoryError

    try:
        History(tmp_path / "h.sqlite3")
    except HistoryError as exc:
        assert "TRT_TUI_HISTORY_LOGS" in str(exc) and "\n" not in str(exc)
    else:
        raise AssertionError("a bad limit was taken")


def test_without_a_history_the_numbers_are_the_sessions_own_and_said(tmp_path, cli_env):
    model = tmp_path / "broken.onnx"
    model.write_bytes(b"\x08\x07not an ONNX model")
    (tmp_path / "dir").mkdir()
    done = cli("build", model, "--history", tmp_path / "dir", "--json", env=cli_env)
    assert "build history disabled" in done.stderr and "numbered #1, #2, … in this session only" in done.stderr
    states = [e for e in map(json.loads, done.stdout.splitlines()) if e["event"] == "state"]
    assert states and all(e["job"] == 1 and "id" not in e for e in states), states  # no history id to give
