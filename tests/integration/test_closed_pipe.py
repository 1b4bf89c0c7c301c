"""Output into a pipe whose reader has gone (`trt-tui history | head -1`) ends quietly, exit 0, as
`git log | head` does: no BrokenPipeError traceback, no "Exception ignored" line, no error exit.

Each command runs in a real shell pipe into `head -1`, after an `echo` that gives head its line: head
has exited before trt-tui writes anything, so every write of trt-tui's meets the closed pipe."""

from __future__ import annotations

import shlex
import subprocess
import time
from pathlib import Path

import pytest

from trt_tui.core.history.records import History
from trt_tui.core.model.samples import write_samples


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, Path]:
    """A model, and a history of enough builds that each listing is many lines."""
    root = tmp_path_factory.mktemp("closed-pipe")
    (model,) = write_samples(root / "models", ["mnist"])
    history = root / "history.sqlite3"
    with History(history) as records:
        for number in range(200):
            records.record(model=model, model_hash="h", options={"opt_level": 3}, backend="trt", backend_version="1",
                           state="succeeded", error=None, started=time.time() - 1000 + number, duration=1.5,
                           engine_bytes=1000, phases={"Building engine": 1.0})
    return {"root": root, "model": model, "history": history}


def commands(world: dict[str, Path]) -> list[list[str]]:
    history = ["--history", str(world["history"])]
    return [
        ["history", *history], ["history", "--json", *history], ["history", str(world["model"]), *history],
        ["history", "diff", "1", "2", *history], ["history", "diff", "1", "2", "--json", *history],
        ["--list-themes"], ["--print-config"], ["-h"], ["build", "-h"], ["--version"],
        ["samples", str(world["root"] / "samples"), "mnist", "--force"],
        ["bundle", "1", "-o", str(world["root"] / "bundle.tar.gz"), *history],
        ["build", str(world["model"]), "--force", *history], ["build", str(world["model"]), "--json", "--force", *history],
        ["run", "--", "python", "-c", "print('\\n'.join(map(str, range(10000))))"],
        ["watch", str(world["model"].parent), "--json", *history],  # ends too: nobody reads what it watches
    ]


def test_every_command_that_prints_ends_quietly_into_a_closed_pipe(world, cli_env, trt_tui_command) -> None:
    for args in commands(world):
        command = shlex.join([*trt_tui_command, *args])
        result = subprocess.run(["bash", "-o", "pipefail", "-c", f"(echo; {command}) | head -1"], env=cli_env,
                                cwd=world["root"], capture_output=True, text=True, timeout=180, check=False)
        assert result.stderr == "", (args, result.stderr)
        assert result.returncode == 0, args


def test_what_a_build_into_a_closed_pipe_made_is_kept(world, cli_env, trt_tui_command, tmp_path) -> None:
    """The reader going away is not a cancel: the engine is written and recorded as without a pipe."""
    history = tmp_path / "history.sqlite3"
    engine = tmp_path / "mnist.engine"
    command = shlex.join([*trt_tui_command, "build", str(world["model"]), "-o", str(engine), "--history", str(history)])
    result = subprocess.run(["bash", "-o", "pipefail", "-c", f"(echo; {command}) | head -1"], env=cli_env,
                            capture_output=True, text=True, timeout=180, check=False)
    assert (result.returncode, result.stderr) == (0, "")
    assert engine.stat().st_size > 0
    with History(history, create=False) as records:
        assert [record.state for record in records.builds(None, limit=5)] == ["succeeded"]
