"""`trt-tui` on the command line, run the way a user or a CI script runs it: `python -m trt_tui ...` in a
child process, with real TensorRT-RTX builds, real signals and a real pseudo-terminal."""

from __future__ import annotations

import filecmp
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import tensorrt_rtx as trt
from support.terminal import run_on_a_terminal

TIMEOUT = 120  # seconds; only there so a hang fails instead of stalling the suite
# The states a JSON consumer may see, as events.State documents them.
DOCUMENTED_STATES = {"queued", "parsing", "building", "writing", "succeeded", "failed", "cancelled", "skipped"}
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_CANCELLED = 0, 1, 2, 130


@pytest.fixture(scope="module")
def cli(cli_env, trt_tui_command):
    """`cli(*args)` runs trt-tui to completion and returns the finished process (text output)."""

    def run(*args, cwd: Path | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*trt_tui_command, *map(str, args)], capture_output=True, text=True,
            env=cli_env, cwd=cwd, timeout=TIMEOUT, check=False,
        )

    return run


def assert_no_traceback(result: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in result.stdout + result.stderr, result.stdout + result.stderr


def error_lines(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


def test_samples_writes_the_three_models(cli, tmp_path: Path, sample_dir: Path) -> None:
    """`trt-tui samples DIR` gives a new user models to try, the same bytes on every machine."""
    result = cli("samples", tmp_path / "models")
    assert result.returncode == EXIT_OK, result.stderr
    written = [Path(line) for line in result.stdout.split()]
    assert sorted(p.name for p in written) == ["densenet.onnx", "mnist.onnx", "resnet50.onnx"]
    for path in written:
        assert filecmp.cmp(path, sample_dir / path.name, shallow=False), f"{path.name} differs"


def test_build_one_model_writes_a_real_engine(cli, sample_dir, tmp_path, engine_checker) -> None:
    """`trt-tui build model.onnx -o x.engine` is the basic promise: exit 0 and an engine at x.engine."""
    engine = tmp_path / "x.engine"
    result = cli("build", sample_dir / "mnist.onnx", "-o", engine)
    assert result.returncode == EXIT_OK, result.stderr
    assert_no_traceback(result)
    engine_checker.assert_real_engine(engine)


def test_build_several_models_into_a_directory(cli, sample_dir, tmp_path, engine_checker) -> None:
    """With several models, -o is a directory (ending in '/' when it does not exist yet) and each model
    gets its own engine in it."""
    for name in ("a", "b"):
        shutil.copy(sample_dir / "mnist.onnx", tmp_path / f"{name}.onnx")
    result = cli("build", tmp_path / "a.onnx", tmp_path / "b.onnx", "-o", f"{tmp_path / 'engines'}/")
    assert result.returncode == EXIT_OK, result.stderr
    assert sorted(p.name for p in (tmp_path / "engines").glob("*.engine")) == ["a.engine", "b.engine"]
    for name in ("a", "b"):
        engine_checker.assert_real_engine(tmp_path / "engines" / f"{name}.engine")


# -- what the output says ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def json_run(cli, sample_dir, unsupported_op_model, tmp_path_factory):
    """One --json run with a good and a bad model; returns (result, records by model)."""
    out = tmp_path_factory.mktemp("json_engines")
    result = cli("build", sample_dir / "mnist.onnx", unsupported_op_model, "-o", out, "--json")
    records = [json.loads(line) for line in result.stdout.splitlines()]
    by_model: dict[str, list[dict]] = {}
    for record in records:
        by_model.setdefault(record.get("model"), []).append(record)
    return result, by_model


def test_json_output_is_one_object_per_line(json_run, sample_dir, unsupported_op_model) -> None:
    """Scripts parse --json line by line: every line is an object naming its event and its model."""
    result, by_model = json_run
    assert result.returncode == EXIT_FAILED
    assert set(by_model) == {str(sample_dir / "mnist.onnx"), str(unsupported_op_model)}
    for records in by_model.values():
        for record in records:
            assert {"event", "model", "job", "t"} <= record.keys(), record
    assert_no_traceback(result)


def test_json_states_are_the_documented_ones(json_run, sample_dir, unsupported_op_model) -> None:
    """A script switching on "state" must only ever see the documented values, with an error on failure."""
    _, by_model = json_run
    states = {model: [r for r in records if r["event"] == "state"] for model, records in by_model.items()}
    for records in states.values():
        assert {r["state"] for r in records} <= DOCUMENTED_STATES
    good = states[str(sample_dir / "mnist.onnx")]
    assert [r["state"] for r in good] == ["queued", "parsing", "building", "writing", "succeeded"]
    assert good[-1]["engine_bytes"] > 0
    bad = states[str(unsupported_op_model)]
    assert bad[-1]["state"] == "failed"
    assert "weird_node" in bad[-1]["error"] and "FooBarOp" in bad[-1]["error"]


def test_json_phases_start_and_finish_in_pairs(json_run, sample_dir) -> None:
    """A consumer drawing the phase tree from --json needs names, nesting and an end for every start."""
    _, by_model = json_run
    records = by_model[str(sample_dir / "mnist.onnx")]
    starts = {r["phase"]: r for r in records if r["event"] == "phase_start"}
    finishes = {r["phase"] for r in records if r["event"] == "phase_finish"}
    assert starts and set(starts) == finishes
    assert "Building engine" in {r["name"] for r in starts.values()}
    for record in starts.values():
        assert record["parent"] is None or record["parent"] in starts
    for step in (r for r in records if r["event"] == "step"):
        assert step["name"] == starts[step["phase"]]["name"] and step["num_steps"] >= 1


START_LINE = re.compile(r"^\[(?P<model>[^\]]+)\] (?P<indent> *)▶ (?P<name>.+) \((?P<steps>\d+) steps?\)$")
FINISH_LINE = re.compile(r"^\[(?P<model>[^\]]+)\] (?P<indent> *)✓ (?P<name>.+) \d+(\.\d+)?s(, finished at step \d+/\d+)?$")


def test_plain_output_has_a_line_per_phase_start_and_finish(cli, json_run, sample_dir, tmp_path) -> None:
    """In a CI log (no terminal) every phase shows once when it starts and once when it ends, nested."""
    model = sample_dir / "mnist.onnx"
    result = cli("build", model, "-o", tmp_path / "x.engine")
    assert result.returncode == EXIT_OK, result.stderr
    lines = result.stdout.splitlines()
    assert "\x1b" not in result.stdout, "terminal escapes in a log file"
    starts = [m for m in map(START_LINE.match, lines) if m]
    finishes = [m for m in map(FINISH_LINE.match, lines) if m]
    assert Counter(m["name"] for m in starts) == Counter(m["name"] for m in finishes)
    _, by_model = json_run
    json_starts = [r["name"] for r in by_model[str(model)] if r["event"] == "phase_start"]
    assert Counter(m["name"] for m in starts) == Counter(json_starts)
    assert starts[0]["name"] == "Building engine" and starts[0]["indent"] == ""
    assert any(len(m["indent"]) >= 4 for m in starts), "nested phases are not indented"
    assert f"[{model}] succeeded" in result.stdout


# -- what the parent process pays ----------------------------------------------------------------

# `trt-tui build` run in this interpreter (as `python -m trt_tui build` would), then what it loaded.
IN_PROCESS_BUILD = r"""
import json, sys
from trt_tui import cli
code = cli.main(sys.argv[1:])
with open("/proc/self/maps") as maps:
    mapped = "libtensorrt" in maps.read()
modules = sorted(m for m in sys.modules if m.split(".")[0].startswith("tensorrt"))
print(json.dumps({"code": code, "modules": modules, "library_mapped": mapped}))
"""


def in_process_build(cli_env, *args) -> dict:
    result = subprocess.run([sys.executable, "-c", IN_PROCESS_BUILD, "build", *map(str, args)], capture_output=True,
                            text=True, env=cli_env, timeout=TIMEOUT, check=False)
    assert_no_traceback(result)
    return json.loads(result.stdout.splitlines()[-1])


@pytest.mark.parametrize("executor", ["process", "thread"])
def test_the_parent_of_a_process_build_does_not_load_tensorrt(cli_env, sample_dir, tmp_path, executor) -> None:
    """With the default executor the build runs in a child, so the parent has no use for TensorRT:
    importing it there (~0.3 s of CPU) only competed with the build. The thread executor builds in
    the parent, which shows that the probe sees TensorRT where it is loaded."""
    engine = tmp_path / "x.engine"
    extra = ["--executor", "thread"] if executor == "thread" else []
    first = in_process_build(cli_env, sample_dir / "mnist.onnx", "-o", engine, *extra)
    assert first["code"] == EXIT_OK and engine.is_file()
    if executor == "thread":
        assert first["modules"] and first["library_mapped"], first
        return
    assert first["modules"] == [] and not first["library_mapped"], first
    # The engine cache's key, made in the parent, names the version TensorRT itself reports, so an
    # engine built with another TensorRT is rebuilt; and the second run is answered from the cache.
    key = json.loads(engine.with_name(engine.name + ".build.json").read_text())["key"]
    assert (key["backend"], key["backend_version"]) == ("tensorrt-rtx", trt.__version__)
    second = in_process_build(cli_env, sample_dir / "mnist.onnx", "-o", engine, "--json")
    assert second["code"] == EXIT_OK and second["modules"] == [], second


def test_a_failed_process_build_is_recorded_with_its_backend(cli, unsupported_op_model, tmp_path) -> None:
    """A build that fails in its child returns no backend, and the parent has not imported one:
    the history names the backend that the engine cache's fingerprint found."""
    db = tmp_path / "history.sqlite3"
    result = cli("build", unsupported_op_model, "-o", tmp_path / "x.engine", "--history", db)
    assert result.returncode == EXIT_FAILED, result.stderr
    listing = cli("history", "--history", db, "--json")
    (record,) = [json.loads(line) for line in listing.stdout.splitlines()]
    assert record["state"] == "failed" and record["backend"] == f"tensorrt-rtx {trt.__version__}", record


@pytest.mark.parametrize("executor", ["process", "thread"])
def test_a_build_that_exits_at_once_leaves_nothing_unwritten(cli, cli_env, sample_dir, unsupported_op_model,
                                                             tmp_path, executor) -> None:
    """`trt-tui build` ends its process without the interpreter's teardown (`cli.entry`): what it
    printed into a pipe's buffer (no PYTHONUNBUFFERED here, as in a user's `| tee`), its history and
    its exit code must all be there, for a build that succeeded and one that failed, with either
    local executor; and no process of its own outlives it."""
    env = {k: v for k, v in cli_env.items() if k != "PYTHONUNBUFFERED"}
    db = tmp_path / "history.sqlite3"
    engine = tmp_path / "mnist.engine"
    args = ["build", sample_dir / "mnist.onnx", unsupported_op_model, "-o", tmp_path, "--json", "--history", db,
            "--executor", executor, "--jobs", "1"]
    result = subprocess.run([sys.executable, "-m", "trt_tui", *map(str, args)], capture_output=True, text=True,
                            env=env, timeout=TIMEOUT, check=False, start_new_session=True)
    assert result.returncode == EXIT_FAILED, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]  # every line whole
    finals = {e["model"]: e["state"] for e in events if e["event"] == "state" and e["state"] in ("succeeded", "failed")}
    assert finals == {str(sample_dir / "mnist.onnx"): "succeeded", str(unsupported_op_model): "failed"}, finals
    (failed,) = [e for e in events if e["event"] == "state" and e["state"] == "failed"]
    assert str(unsupported_op_model) in failed["error"], failed
    assert engine.is_file()
    listing = cli("history", "--history", db, "--json")
    assert sorted(json.loads(line)["state"] for line in listing.stdout.splitlines()) == ["failed", "succeeded"]
    time.sleep(0.2)
    left = subprocess.run(["pgrep", "-s", "0", "-f", "trt_tui"], capture_output=True, text=True, check=False)
    assert left.stdout.strip() == "", left.stdout


def test_a_tensorrt_that_fails_to_import_fails_the_build_in_one_line(cli_env, sample_dir, tmp_path) -> None:
    """The parent finds TensorRT-RTX installed without importing it, so a broken install is found by
    the build, which fails with one line (exit 1) instead of a traceback, and writes nothing."""
    broken = tmp_path / "site" / "tensorrt_rtx"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('libtensorrt_rtx.so: cannot open shared object file')\n")
    env = dict(cli_env, PYTHONPATH=os.pathsep.join([str(tmp_path / "site"), cli_env["PYTHONPATH"]]))
    result = subprocess.run([sys.executable, "-m", "trt_tui", "build", str(sample_dir / "mnist.onnx"), "-o",
                             str(tmp_path / "x.engine"), "--backend", "tensorrt-rtx"],
                            capture_output=True, text=True, env=env, timeout=TIMEOUT, check=False)
    assert_no_traceback(result)
    assert result.returncode == EXIT_FAILED, result.stderr
    (error,) = error_lines(result)
    assert error.startswith("trt-tui: ") and "tensorrt_rtx not importable" in error, error
    assert not (tmp_path / "x.engine").exists()


# -- bad input ------------------------------------------------------------------------------------


def bad_input(case: str, sample_dir: Path, bad_model_dir: Path, tmp_path: Path):
    """(arguments, exit code, words the error must contain, whether the error is one `trt-tui:` line)."""
    mnist = sample_dir / "mnist.onnx"
    out = tmp_path / "x.engine"

    def parse_failure(name: str, *words: str):
        return ["build", bad_model_dir / name, "-o", out], EXIT_FAILED, [str(bad_model_dir / name), *words], True

    if case == "output inside a file":
        (tmp_path / "file.txt").write_text("a file, not a directory")
    cases = {
        "missing file": (["build", tmp_path / "nope.onnx", "-o", out], EXIT_USAGE,
                         [str(tmp_path / "nope.onnx"), "no such file"], True),
        "truncated": parse_failure("truncated.onnx", "cannot parse ONNX"),
        "random bytes": parse_failure("random_bytes.onnx", "cannot parse ONNX"),
        "tensor proto": parse_failure("tensor_proto.onnx", "cannot parse ONNX"),
        "unsupported op": parse_failure("unsupported_op.onnx", "'weird_node'", "FooBarOp"),
        "dynamic without shapes": parse_failure("dynamic.onnx", "'input'", "--shapes"),
        "output inside a file": (["build", mnist, "-o", tmp_path / "file.txt" / "x.engine"], EXIT_USAGE,
                                 ["file.txt", "not a directory"], True),
        "output not writable": (["build", mnist, "-o", "/sys/trt-tui-test.engine"], EXIT_FAILED,
                                ["/sys/trt-tui-test.engine"], True),
        "--shapes with --min-shapes": (["build", mnist, "-o", out, "--shapes", "input:1x1x28x28",
                                        "--min-shapes", "input:1x1x28x28"], EXIT_USAGE, ["--shapes", "--min"], True),
        "--min-shapes alone": (["build", mnist, "-o", out, "--min-shapes", "input:1x1x28x28"], EXIT_USAGE,
                               ["--max-shapes"], True),
        "malformed --shapes": (["build", mnist, "-o", out, "--shapes", "input:1xZx28"], EXIT_USAGE,
                               ["--shapes"], True),
        "unknown option": (["build", mnist, "-o", out, "--frobnicate"], EXIT_USAGE, ["--frobnicate"], False),
        "--timing-cache with TensorRT-RTX": (["build", mnist, "-o", out, "--backend", "tensorrt-rtx",
                                              "--timing-cache", tmp_path / "t.cache"], EXIT_USAGE,
                                             ["--timing-cache"], True),
        "bad --compute-capability": (["build", mnist, "-o", out, "--compute-capability", "7.7"], EXIT_USAGE,
                                     ["--compute-capability", "7.7"], True),
        "--opt-level 9": (["build", mnist, "-o", out, "--opt-level", "9"], EXIT_USAGE, ["--opt-level", "0 to 5"],
                          False),
        "bad --workspace": (["build", mnist, "-o", out, "--workspace", "lots"], EXIT_USAGE, ["--workspace"], True),
        "--jobs 0": (["build", mnist, "-o", out, "--jobs", "0"], EXIT_USAGE, ["--jobs", "1 to 256"], False),
        "bad --spare-memory": (["build", mnist, "-o", out, "--spare-memory", "lots"], EXIT_USAGE,
                               ["--spare-memory", "'lots'", "not a size"], False),
    }
    return cases[case]


BAD_INPUTS = [
    "missing file", "truncated", "random bytes", "tensor proto", "unsupported op", "dynamic without shapes",
    "output inside a file", "output not writable", "--shapes with --min-shapes", "--min-shapes alone",
    "malformed --shapes", "unknown option", "--timing-cache with TensorRT-RTX", "bad --compute-capability",
    "--opt-level 9", "bad --workspace", "--jobs 0", "bad --spare-memory",
]


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_gives_one_clear_error(cli, sample_dir, bad_model_dir, tmp_path, case: str) -> None:
    """Each mistake a user can make ends in the right exit code and a message naming what is wrong,
    never a Python traceback and never an engine."""
    args, code, words, one_line = bad_input(case, sample_dir, bad_model_dir, tmp_path)
    result = cli(*args)
    assert_no_traceback(result)
    assert result.returncode == code, result.stderr
    errors = error_lines(result)
    if one_line:
        assert len(errors) == 1 and errors[0].startswith("trt-tui: "), result.stderr
    else:  # argparse's own error, as one line too (its usage block would bury it)
        assert len(errors) == 1 and errors[0].startswith("trt-tui") and " error: " in errors[0], result.stderr
    for word in words:
        assert word in errors[-1], f"{word!r} missing from: {errors[-1]}"
    assert not (tmp_path / "x.engine").exists()
    assert not list(tmp_path.glob(".*.tmp"))


def test_one_bad_model_does_not_stop_the_good_ones(cli, sample_dir, not_onnx_models, tmp_path, engine_checker):
    """In a batch, a broken model fails alone: the others are still built, and the exit code says 1."""
    for name in ("a", "b"):
        shutil.copy(sample_dir / "mnist.onnx", tmp_path / f"{name}.onnx")
    bad = not_onnx_models["random bytes"]
    result = cli("build", tmp_path / "a.onnx", bad, tmp_path / "b.onnx", "-o", f"{tmp_path / 'engines'}/")
    assert_no_traceback(result)
    assert result.returncode == EXIT_FAILED
    assert sorted(p.name for p in (tmp_path / "engines").glob("*.engine")) == ["a.engine", "b.engine"]
    for name in ("a", "b"):
        engine_checker.assert_real_engine(tmp_path / "engines" / f"{name}.engine")
    (error,) = error_lines(result)
    assert str(bad) in error


# -- Ctrl-C ------------------------------------------------------------------------------------


class RunningCli:
    """trt-tui running in the background, its output lines collected (with arrival times) as they come."""

    def __init__(self, args: list, env: dict[str, str], tmp_path: Path) -> None:
        self.stderr_file = open(tmp_path / "stderr.txt", "w+")  # closed in finish()
        self.proc = subprocess.Popen(
            list(map(str, args)), stdout=subprocess.PIPE, stderr=self.stderr_file, text=True, env=env,
        )
        self.lines: list[tuple[float, str]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append((time.monotonic(), line.rstrip("\n")))

    @property
    def stdout(self) -> str:
        return "\n".join(line for _, line in self.lines)

    def wait_for(self, condition, what: str, timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                pytest.fail(f"trt-tui ended or timed out before {what}:\n{self.stdout}")
            time.sleep(0.02)

    def quiet_for(self) -> float:
        return time.monotonic() - self.lines[-1][0] if self.lines else 0.0

    def finish(self) -> tuple[int, str]:
        try:
            code = self.proc.wait(TIMEOUT)
        finally:
            self.proc.kill()
        self._reader.join(TIMEOUT)
        self.stderr_file.seek(0)
        stderr = self.stderr_file.read()
        self.stderr_file.close()
        return code, stderr


@pytest.fixture
def densenet_build(cli_env, trt_tui_command, sample_dir, tmp_path):
    """`trt-tui build densenet.onnx` started in the background, stopped once it shows "building"."""
    engine = tmp_path / "out" / "densenet.engine"
    engine.parent.mkdir()
    running = RunningCli([*trt_tui_command, "build", sample_dir / "densenet.onnx", "-o", engine], cli_env, tmp_path)
    running.wait_for(lambda: any(line.endswith("] building") for _, line in running.lines), "the build started")
    yield running, engine
    running.proc.kill()


def test_ctrl_c_cancels_and_says_where(densenet_build, leftover_temp_files) -> None:
    """Ctrl-C stops the build (exit 130), says which phase it was cancelled in, and writes nothing."""
    running, engine = densenet_build
    running.proc.send_signal(signal.SIGINT)
    code, stderr = running.finish()
    assert code == EXIT_CANCELLED, stderr
    assert "Traceback" not in running.stdout + stderr
    cancelled = [line for _, line in running.lines if "] cancelled in " in line]
    assert len(cancelled) == 1, running.stdout
    where = cancelled[0].split("cancelled in ", 1)[1].split(" › ")
    started = {m["name"] for m in (START_LINE.match(line) for _, line in running.lines) if m}
    assert where and set(where) <= started, f"cancelled in {where}, but the phases shown were {started}"
    assert not engine.exists()
    assert leftover_temp_files(engine.parent) == []


def test_second_ctrl_c_exits_at_once(densenet_build, leftover_temp_files) -> None:
    """Inside TensorRT's long step a cancel waits for the step to end; a second Ctrl-C must not wait."""
    running, engine = densenet_build
    # No output for a while after "building": TensorRT is inside its long step, seconds from any callback.
    running.wait_for(lambda: running.quiet_for() > 1.5, "the build sat in a long step")
    running.proc.send_signal(signal.SIGINT)
    time.sleep(0.2)
    second = time.monotonic()
    running.proc.send_signal(signal.SIGINT)
    code, stderr = running.finish()
    exited_after = time.monotonic() - second
    assert code == EXIT_CANCELLED, stderr
    assert exited_after < 5.0, f"took {exited_after:.1f}s to exit after the second Ctrl-C"
    assert "Traceback" not in running.stdout + stderr
    assert not engine.exists()
    assert leftover_temp_files(engine.parent) == []


# -- on a terminal -------------------------------------------------------------------------------


CURSOR_UP = re.compile(r"\x1b\[(\d*)F")
ANY_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Screen:
    """Just enough of a terminal to replay trt-tui's output: auto-wrap, CR, LF, cursor to previous line
    (stopping at the top of the screen, as terminals do) and erase below. Rows scrolled off the top
    stay in the scrollback, where nothing can erase them any more."""

    def __init__(self, columns: int, rows: int) -> None:
        self.columns, self.rows = columns, rows
        self.lines: list[list[str]] = [[]]
        self.wrapped: set[int] = set()  # rows that continue on the next row
        self.row = self.col = 0
        self.clamped = False  # a cursor-up tried to go above the screen

    def feed(self, text: str) -> None:
        pos = 0
        for match in ANY_ESCAPE.finditer(text):
            self._print(text[pos:match.start()])
            self._escape(match.group())
            pos = match.end()
        self._print(text[pos:])

    def _print(self, text: str) -> None:
        for ch in text:
            if ch == "\r":
                self.col = 0
            elif ch == "\n":
                self._down()
            else:
                if self.col >= self.columns:  # pending wrap: a printable character moves to the next row
                    self.wrapped.add(self.row)
                    self._down()
                    self.col = 0
                line = self.lines[self.row]
                line.extend(" " * (self.col + 1 - len(line)))
                line[self.col] = ch
                self.col += 1

    def _down(self) -> None:
        self.row += 1
        if self.row == len(self.lines):
            self.lines.append([])

    def _escape(self, code: str) -> None:
        if code.endswith("F"):
            n = int(code[2:-1] or 1)
            top = max(0, len(self.lines) - self.rows)
            if self.row - n < top:
                self.clamped = True
            self.row, self.col = max(top, self.row - n), 0
        elif code == "\x1b[J":
            del self.lines[self.row][self.col:]
            del self.lines[self.row + 1:]
            self.wrapped = {r for r in self.wrapped if r < self.row}

    def text_lines(self) -> list[str]:
        """The lines as the user reads them, with rows the terminal wrapped joined again."""
        joined, current = [], ""
        for i, line in enumerate(self.lines):
            current += "".join(line)
            if i not in self.wrapped:
                joined.append(current.rstrip())
                current = ""
        return [line for line in joined if line] if not current else [*joined, current]


def live_block_lines(output: str) -> list[str]:
    """The lines trt-tui later erases and redraws in place: the N lines before each cursor-up by N."""
    lines = []
    pieces = CURSOR_UP.split(output)
    for before, count in zip(pieces[0::2], pieces[1::2]):
        drawn = re.split(r"\r?\n", ANY_ESCAPE.sub("", before))[:-1]
        lines.extend(drawn[len(drawn) - int(count or 1):])
    return lines


@pytest.mark.parametrize("columns, rows", [(50, 24), (50, 4)], ids=["narrow", "narrow and short"])
def test_terminal_output_redraws_in_place_and_fits(
    cli_env, trt_tui_command, sample_dir, tmp_path, engine_checker, columns: int, rows: int
) -> None:
    """On a terminal the progress block is redrawn in place: no line wider than the terminal (it would
    wrap and break the redraw), and when the build ends no progress bars are left behind on screen."""
    model, engine = sample_dir / "resnet50.onnx", tmp_path / "r.engine"
    code, output = run_on_a_terminal([*trt_tui_command, "build", model, "-o", engine], cli_env, columns, rows)
    assert code == EXIT_OK, output
    engine_checker.assert_real_engine(engine)
    assert "Traceback" not in output

    redraws = CURSOR_UP.findall(output)
    assert len(redraws) >= 2, f"no in-place redraw (cursor-up escapes) in {output!r}"
    block = live_block_lines(output)
    assert any("█" in line or "░" in line for line in block), "no progress bars were drawn"
    too_wide = [line for line in block if len(line) >= columns]
    assert not too_wide, f"lines of the live block reach the terminal's width {columns}: {too_wide}"

    screen = Screen(columns, rows)
    screen.feed(output)
    assert not screen.clamped, "the live block was taller than the terminal and could not be redrawn in place"
    final = screen.text_lines()
    assert not [line for line in final if "█" in line or "░" in line or " · " in line], final
    assert any(line.startswith(f"[{model}] succeeded: engine ") for line in final), final


def test_help_lists_every_subcommand_and_fits_the_terminal(cli_env, trt_tui_command, monkeypatch) -> None:
    """`trt-tui -h` names every subcommand, each subcommand's help is its own, and help wraps to the
    terminal's width ($COLUMNS here) as argparse's own formatter would: the CLI sizes it without
    importing shutil, and builds only the parser of the subcommand it was given."""
    import argparse

    from trt_tui import cli as cli_module

    def run(columns: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*trt_tui_command, *args], capture_output=True, text=True, timeout=TIMEOUT,
                              env=dict(cli_env, COLUMNS=columns), check=False)

    top = run("100", "-h")
    assert top.returncode == 0, top.stderr
    assert "Subcommands: build, watch, history, bundle, run, samples, serve, hook, trust, cache, cpp " in " ".join(top.stdout.split())
    for name in ("build", "watch", "history", "bundle", "run", "samples", "serve", "hook", "trust", "cache", "cpp"):
        shown = {}
        for columns in ("60", "132"):
            mine = run(columns, name, "-h")
            assert mine.returncode == 0, mine.stderr
            assert mine.stdout.startswith(f"usage: trt-tui {name} ")
            monkeypatch.setenv("COLUMNS", columns)
            stock = argparse.ArgumentParser(prog=f"trt-tui {name}", formatter_class=argparse.HelpFormatter)
            cli_module.COMMANDS[name][1](stock)
            assert mine.stdout == stock.format_help()
            shown[columns] = mine.stdout
        assert len(shown["60"].splitlines()) > len(shown["132"].splitlines())
