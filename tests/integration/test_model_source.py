"""A build made in another program is named by what its network was parsed from: `trt-tui run` and
`trt_tui.observe` see the program's `OnnxParser`, so the events, the history and the bundle name the
ONNX file (resolved: the program may run elsewhere), and the bundle's command rebuilds it; a model
parsed from bytes is said to come from memory, with its size and SHA-256.

Real TensorRT-RTX builds of MNIST, in a program run by `trt-tui run --json` and in this process.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from support.commands import json_lines

PROGRAMS = Path(__file__).parent.parent / "programs"
TIMEOUT = 120


@pytest.fixture
def models(sample_dir, tmp_path) -> Path:
    """MNIST in a directory of its own (a rebuild writes its engine beside it)."""
    directory = tmp_path / "models"
    directory.mkdir()
    shutil.copy(sample_dir / "mnist.onnx", directory)
    return directory


def cli(cli_env, trt_tui_command, *args, cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run([*trt_tui_command, *map(str, args)], capture_output=True, text=True, env=cli_env,
                          cwd=cwd, timeout=TIMEOUT, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return done


def only_record(cli_env, trt_tui_command, history: Path, cwd: Path) -> dict:
    records = json_lines(cli(cli_env, trt_tui_command, "history", "--json", "--history", history, cwd=cwd).stdout)
    assert len(records) == 1, records
    return records[0]


def bundle_of(cli_env, trt_tui_command, record_id: int, history: Path, cwd: Path) -> dict[str, bytes]:
    """`trt-tui bundle ID`, made from another directory than the build's; its members by name."""
    out = cwd / "bundle.tar.gz"
    cli(cli_env, trt_tui_command, "bundle", record_id, "--history", history, "-o", out, cwd=cwd)
    with tarfile.open(out) as tar:
        return {m.name.split("/", 1)[1]: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def rebuild(cli_env, trt_tui_command, command_txt: bytes, cwd: Path) -> subprocess.CompletedProcess:
    """The bundle's command, run by a shell (its `~` is the home of `cli_env`) with this checkout's trt-tui."""
    command = command_txt.decode().splitlines()[-1]
    assert command.startswith("trt-tui build "), command_txt
    line = shlex.join(trt_tui_command) + command[len("trt-tui"):]
    return subprocess.run(["bash", "-c", line], capture_output=True, text=True, env=cli_env, cwd=cwd,
                          timeout=TIMEOUT, check=False, stdin=subprocess.DEVNULL)


def assert_names_and_rebuilds(cli_env, trt_tui_command, models: Path, record_id: int, history: Path, elsewhere: Path,
                              engine_checker) -> None:
    """The bundle holds the model file and a command that builds it again."""
    got = bundle_of(cli_env, trt_tui_command, record_id, history, elsewhere)
    assert got["model/mnist.onnx"] == (models / "mnist.onnx").read_bytes()
    assert json.loads(got["model.json"])["path"] == str(models / "mnist.onnx")
    done = rebuild(cli_env, trt_tui_command, got["command.txt"], elsewhere)
    assert done.returncode == 0, done.stderr
    engine_checker.assert_real_engine(models / "mnist.engine")


def test_a_run_names_the_file_its_program_parsed_and_its_bundle_rebuilds_it(
        cli_env, trt_tui_command, models, tmp_path, engine_checker):
    """The program parses `mnist.onnx` relative to its own directory: the events and the history name
    the file itself, and the bundle, made from elsewhere, holds it and a command that builds it."""
    history = tmp_path / "history.sqlite3"
    done = cli(cli_env, trt_tui_command, "run", "--json", "--history", history, "--", sys.executable,
               PROGRAMS / "plain_build.py", "mnist.onnx", "mnist.plain.engine", cwd=models)
    queued = [e for e in json_lines(done.stdout) if e.get("state") == "queued" and e["spec"]["history"]]
    assert [e["model"] for e in queued] == [str(models / "mnist.onnx")]
    record = only_record(cli_env, trt_tui_command, history, tmp_path)
    assert record["model"] == str(models / "mnist.onnx") and record["program"] == "plain_build.py"
    assert_names_and_rebuilds(cli_env, trt_tui_command, models, record["id"], history, tmp_path, engine_checker)


def test_a_run_says_a_model_parsed_from_bytes_came_from_memory(cli_env, trt_tui_command, models, tmp_path):
    """`OnnxParser.parse(bytes)`: no file to name; the build says it came from memory, with the bytes'
    SHA-256, the history keeps their size, and the bundle names no command that cannot build."""
    history = tmp_path / "history.sqlite3"
    model = (models / "mnist.onnx").read_bytes()
    done = cli(cli_env, trt_tui_command, "run", "--json", "--history", history, "--", sys.executable,
               PROGRAMS / "from_bytes.py", "mnist.onnx", "mnist.engine", cwd=models)
    name = f"from_bytes.py #1 (from memory, sha256 {hashlib.sha256(model).hexdigest()[:12]})"
    queued = [e for e in json_lines(done.stdout) if e.get("state") == "queued" and e["spec"]["history"]]
    assert [e["model"] for e in queued] == [name]
    assert queued[0]["spec"]["history"]["model_bytes"] == len(model)
    record = only_record(cli_env, trt_tui_command, history, tmp_path)
    assert Path(record["model"]).name == name
    got = bundle_of(cli_env, trt_tui_command, record["id"], history, tmp_path)
    assert json.loads(got["build.json"])["model_bytes"] == len(model)
    command = got["command.txt"].decode()
    assert "from memory" in command and "trt-tui build" not in command, command
    assert not any(member.startswith("model/") for member in got)


def build_in_this_process(models: Path, history: Path, from_bytes: bool):
    """A notebook's cells, run here: trt_tui imported, a network parsed, its config observed."""
    import tensorrt_rtx as trt

    import trt_tui

    builder = trt.Builder(trt_tui.logger(trt))
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, trt_tui.logger(trt))
    model = models / "mnist.onnx"
    assert parser.parse(model.read_bytes()) if from_bytes else parser.parse_from_file(str(model))
    config = builder.create_builder_config()
    with trt_tui.observe(config, display="none", history=history) as observation:
        engine = builder.build_serialized_network(network, config)
    assert engine is not None and observation.state == "succeeded"
    return observation


def test_an_observed_build_in_this_process_names_its_file_and_its_bundle_rebuilds_it(
        cli_env, trt_tui_command, models, tmp_path, engine_checker):
    history = tmp_path / "history.sqlite3"
    observation = build_in_this_process(models, history, from_bytes=False)
    assert observation.name == str(models / "mnist.onnx")
    record = only_record(cli_env, trt_tui_command, history, tmp_path)
    assert record["model"] == str(models / "mnist.onnx") and record["program"].startswith("api: ")
    assert record["id"] == observation.history_id
    assert_names_and_rebuilds(cli_env, trt_tui_command, models, record["id"], history, tmp_path, engine_checker)


def test_an_observed_build_in_this_process_parsed_from_bytes_came_from_memory(
        cli_env, trt_tui_command, models, tmp_path):
    history = tmp_path / "history.sqlite3"
    model = (models / "mnist.onnx").read_bytes()
    observation = build_in_this_process(models, history, from_bytes=True)
    assert observation.name.endswith(f" (from memory, sha256 {hashlib.sha256(model).hexdigest()[:12]})")
    record = only_record(cli_env, trt_tui_command, history, tmp_path)
    assert Path(record["model"]).name == observation.name
    got = bundle_of(cli_env, trt_tui_command, record["id"], history, tmp_path)
    assert json.loads(got["build.json"])["model_bytes"] == len(model)
    command = got["command.txt"].decode()
    assert command.startswith("# built by ") and "through trt_tui.observe, which parsed its ONNX model from memory" \
        in command and "trt-tui build" not in command, command


def test_following_the_parses_changes_nothing_the_program_gets(models):
    """What TensorRT's parser returns and raises reaches the program unchanged through the wrappers:
    a missing file and garbage bytes are False, a wrong argument is TensorRT's own TypeError."""
    import tensorrt_rtx as trt

    import trt_tui  # noqa: F401  (follows this process's parses from here on)

    logger = trt.Logger(trt.Logger.ERROR)
    builder = trt.Builder(logger)
    network = builder.create_network(0)  # kept: the parser fills it
    parser = trt.OnnxParser(network, logger)
    for name in ("parse_from_file", "parse"):  # (TensorRT-RTX has no parse_with_weight_descriptors)
        assert getattr(trt.OnnxParser, name).__wrapped__  # followed here
    assert parser.parse_from_file(str(models / "missing.onnx")) is False
    assert parser.parse(b"not a model") is False
    bare = trt.OnnxParser.parse.__wrapped__
    with pytest.raises(TypeError) as wrapped_error:
        parser.parse(42)
    with pytest.raises(TypeError) as bare_error:
        bare(parser, 42)
    assert str(wrapped_error.value) == str(bare_error.value)
